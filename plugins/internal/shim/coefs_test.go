package shim

import (
	"reflect"
	"sort"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	sdk "github.com/lcl-project/lcl/plugins/internal/api"
	pb "github.com/lcl-project/lcl/plugins/proto"
)

// The wire's Coefficients and the one Go form (internal/coefs) hold the same
// coefficients: each Go field's `proto` tag names a double field of the
// message, and each field of the message is some Go field's. A term added
// to one and not the other fails here.
func TestCoefficientsMatchCoefs(t *testing.T) {
	var goNames []string
	for _, term := range (sdk.Coefs{}).Terms() {
		if term.Proto == "" {
			t.Errorf("a field of Coefs has no proto tag")
		}
		goNames = append(goNames, term.Proto)
	}
	var wire []string
	fields := (&pb.Coefficients{}).ProtoReflect().Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Kind() != protoreflect.DoubleKind || fd.Cardinality() == protoreflect.Repeated {
			t.Errorf("Coefficients.%s is %v %v, want a single double", fd.Name(), fd.Cardinality(), fd.Kind())
		}
		wire = append(wire, string(fd.Name()))
	}
	sort.Strings(goNames)
	sort.Strings(wire)
	if !reflect.DeepEqual(goNames, wire) {
		t.Errorf("Coefs' proto tags %v, message Coefficients' fields %v", goNames, wire)
	}
}

// Every coefficient crosses the wire and back with its value, each a
// different one, so a crossed pair of fields is caught too.
func TestCoefficientsRoundTrip(t *testing.T) {
	var in sdk.Coefs
	for i, term := range in.Terms() {
		if err := in.Set(term.Proto, float64(i)+0.25); err != nil {
			t.Fatal(err)
		}
	}
	w, err := toCoefficients(in)
	if err != nil {
		t.Fatal(err)
	}
	// Read back through the generated getters, not reflection alone.
	if w.GetSoftCe() != in.SoftCE || w.GetHardCe() != in.HardCE || w.GetKd() != in.KD ||
		w.GetTemperature() != in.KDTemperature || w.GetMutual() != in.Mutual || w.GetGroup() != in.Group {
		t.Errorf("wire %v from %+v", w, in)
	}
	out, err := fromCoefficients(w)
	if err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Errorf("round trip %+v, want %+v", out, in)
	}
}
