package pluginpb_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/lcl-project/lcl/plugins/internal/shim"
	pluginpb "github.com/lcl-project/lcl/plugins/proto"
)

// current is lcl.proto as protoc compiles it, a FileDescriptorSet (`make
// lint` passes it). Without it the tests read lcl.proto as compiled into
// lcl.pb.go, which is what lcl speaks.
var current = flag.String("current", "", "FileDescriptorSet of plugins/proto/lcl.proto made by protoc (protoc -o)")

// baselineFile is the released lcl.proto of this protocol version, as protoc
// compiled it (make proto remakes it from the lcl.proto beside it).
func baselineFile() string {
	return filepath.Join("testdata", fmt.Sprintf("v%d", shim.ProtocolVersion), "lcl.binpb")
}

// readFile returns the file lcl.proto of a FileDescriptorSet, as protoc -o
// writes it.
func readFile(t *testing.T, path string) protoreflect.FileDescriptor {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (a protocol version's baseline is its lcl.proto in testdata/vN, compiled by make proto)", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	fd, err := files.FindFileByPath("lcl.proto")
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return fd
}

// TestProtocolOnlyGrows holds lcl.proto to its promise to plugin authors
// (docs/plugins.md, "What a plugin can rely on"): against the released
// lcl.proto of this protocol version it may add messages, fields, enum
// values, services and methods, but never change a field's type or number,
// reuse a number, remove a field without reserving its number, or rename
// or remove a message, enum, service or method. An incompatible change
// needs a new ProtocolVersion and its own baseline.
func TestProtocolOnlyGrows(t *testing.T) {
	base := readFile(t, baselineFile())
	cur := pluginpb.File_lcl_proto
	if *current != "" {
		fromProtoc := readFile(t, *current)
		// lcl.pb.go must be lcl.proto compiled, or the check below (and
		// lcl) would see another protocol than the file says.
		want, got := normalised(fromProtoc), normalised(cur)
		if !proto.Equal(want, got) {
			t.Errorf("plugins/proto/lcl.pb.go is not plugins/proto/lcl.proto compiled: run make proto")
		}
		cur = fromProtoc
	}
	for _, p := range breakingChanges(base, cur) {
		t.Errorf("lcl.proto against the released version %d (%s): %s", shim.ProtocolVersion, baselineFile(), p)
	}
}

// normalised is a file's descriptor without what protoc fills in for
// one output and not another (JSON names, source positions).
func normalised(fd protoreflect.FileDescriptor) *descriptorpb.FileDescriptorProto {
	p := protodesc.ToFileDescriptorProto(fd)
	p.SourceCodeInfo = nil
	var clear func(ms []*descriptorpb.DescriptorProto)
	clear = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			for _, f := range m.Field {
				f.JsonName = nil
			}
			clear(m.NestedType)
		}
	}
	clear(p.MessageType)
	return p
}

// breakingChanges lists what in cur breaks a plugin built against old, one
// line each.
func breakingChanges(old, cur protoreflect.FileDescriptor) []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if old.Package() != cur.Package() {
		bad("package %s is now %s (every message and service would be renamed)", old.Package(), cur.Package())
		return out
	}
	var messages func(olds, curs protoreflect.MessageDescriptors)
	messages = func(olds, curs protoreflect.MessageDescriptors) {
		for i := 0; i < olds.Len(); i++ {
			om := olds.Get(i)
			if om.IsMapEntry() {
				continue // its map field's type says it all (fieldType)
			}
			cm := curs.ByName(om.Name())
			if cm == nil {
				bad("message %s is gone (removed or renamed; a message keeps its name)", om.FullName())
				continue
			}
			fields(om, cm, bad)
			enums(om.Enums(), cm.Enums(), bad)
			messages(om.Messages(), cm.Messages())
		}
	}
	messages(old.Messages(), cur.Messages())
	enums(old.Enums(), cur.Enums(), bad)
	for i := 0; i < old.Services().Len(); i++ {
		osv := old.Services().Get(i)
		cs := cur.Services().ByName(osv.Name())
		if cs == nil {
			bad("service %s is gone (removed or renamed)", osv.FullName())
			continue
		}
		for j := 0; j < osv.Methods().Len(); j++ {
			om := osv.Methods().Get(j)
			cm := cs.Methods().ByName(om.Name())
			switch {
			case cm == nil:
				bad("method %s is gone (removed or renamed)", om.FullName())
			case om.Input().FullName() != cm.Input().FullName() || om.Output().FullName() != cm.Output().FullName():
				bad("method %s was (%s) returns (%s), is now (%s) returns (%s)", om.FullName(),
					om.Input().FullName(), om.Output().FullName(), cm.Input().FullName(), cm.Output().FullName())
			case om.IsStreamingClient() != cm.IsStreamingClient() || om.IsStreamingServer() != cm.IsStreamingServer():
				bad("method %s changed its streaming", om.FullName())
			}
		}
	}
	return out
}

// fields compares the fields of a message in two versions.
func fields(om, cm protoreflect.MessageDescriptor, bad func(string, ...any)) {
	ofs, cfs := om.Fields(), cm.Fields()
	for i := 0; i < ofs.Len(); i++ {
		of := ofs.Get(i)
		cf := cfs.ByNumber(of.Number())
		switch {
		case cf == nil && cfs.ByName(of.Name()) != nil:
			bad("field %s changed its number %d to %d", of.FullName(), of.Number(), cfs.ByName(of.Name()).Number())
		case cf == nil && !cm.ReservedRanges().Has(of.Number()):
			bad("field %s = %d is removed but its number is not reserved (add `reserved %d;` to %s)", of.FullName(), of.Number(), of.Number(), cm.Name())
		case cf == nil:
		case cf.Name() != of.Name():
			bad("field number %d of %s was %s, is now %s (a number keeps its field: reserve it and add a new one)", of.Number(), om.FullName(), of.Name(), cf.Name())
		default:
			if o, c := fieldType(of), fieldType(cf); o != c {
				bad("field %s = %d changed type: %s, now %s", of.FullName(), of.Number(), o, c)
			}
		}
	}
	// A number reserved before must not carry a field now.
	rs := om.ReservedRanges()
	for i := 0; i < rs.Len(); i++ {
		r := rs.Get(i)
		for n := r[0]; n < r[1]; n++ {
			if cf := cfs.ByNumber(n); cf != nil {
				bad("field %s = %d reuses a reserved number", cf.FullName(), n)
			}
		}
	}
}

// fieldType is what a field's bytes mean on the wire and in the generated
// code: cardinality, kind, its message or enum, and its oneof.
func fieldType(f protoreflect.FieldDescriptor) string {
	s := f.Cardinality().String() + " " + f.Kind().String()
	switch {
	case f.IsMap():
		s = fmt.Sprintf("map<%s, %s>", fieldType(f.MapKey()), fieldType(f.MapValue()))
	case f.Message() != nil:
		s += " " + string(f.Message().FullName())
	case f.Enum() != nil:
		s += " " + string(f.Enum().FullName())
	}
	if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
		s += " in oneof " + string(o.Name())
	}
	return s
}

// enums compares enums in two versions: values keep their numbers and
// names, and a removed value's number stays reserved.
func enums(olds, curs protoreflect.EnumDescriptors, bad func(string, ...any)) {
	for i := 0; i < olds.Len(); i++ {
		oe := olds.Get(i)
		ce := curs.ByName(oe.Name())
		if ce == nil {
			bad("enum %s is gone (removed or renamed)", oe.FullName())
			continue
		}
		for j := 0; j < oe.Values().Len(); j++ {
			ov := oe.Values().Get(j)
			cv := ce.Values().ByNumber(ov.Number())
			switch {
			case cv == nil && !ce.ReservedRanges().Has(ov.Number()):
				bad("enum value %s = %d is removed but its number is not reserved", ov.FullName(), ov.Number())
			case cv != nil && cv.Name() != ov.Name():
				bad("enum value %d of %s was %s, is now %s", ov.Number(), oe.FullName(), ov.Name(), cv.Name())
			}
		}
	}
}

// TestBreakingChangesAreFound: each change to the baseline that breaks a
// plugin is reported, and each one that only adds is not.
func TestBreakingChangesAreFound(t *testing.T) {
	base := readFile(t, baselineFile())
	msg := func(p *descriptorpb.FileDescriptorProto, name string) *descriptorpb.DescriptorProto {
		for _, m := range p.MessageType {
			if m.GetName() == name {
				return m
			}
		}
		t.Fatalf("baseline has no message %s", name)
		return nil
	}
	field := func(m *descriptorpb.DescriptorProto, name string) *descriptorpb.FieldDescriptorProto {
		for _, f := range m.Field {
			if f.GetName() == name {
				return f
			}
		}
		t.Fatalf("message %s has no field %s", m.GetName(), name)
		return nil
	}
	drop := func(m *descriptorpb.DescriptorProto, name string) {
		for i, f := range m.Field {
			if f.GetName() == name {
				m.Field = append(m.Field[:i], m.Field[i+1:]...)
				return
			}
		}
		t.Fatalf("message %s has no field %s", m.GetName(), name)
	}
	reserve := func(m *descriptorpb.DescriptorProto, n int32) {
		m.ReservedRange = append(m.ReservedRange, &descriptorpb.DescriptorProto_ReservedRange{Start: proto.Int32(n), End: proto.Int32(n + 1)})
	}
	newField := func(name string, n int32, typ descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: typ.Enum(), JsonName: proto.String(name)}
	}
	for _, tc := range []struct {
		name string
		edit func(p *descriptorpb.FileDescriptorProto)
		want string // "" = compatible
	}{
		{"unchanged", func(p *descriptorpb.FileDescriptorProto) {}, ""},
		{"a new field", func(p *descriptorpb.FileDescriptorProto) {
			m := msg(p, "Plan")
			m.Field = append(m.Field, newField("groups", 7, descriptorpb.FieldDescriptorProto_TYPE_BYTES))
		}, ""},
		{"a new message and method", func(p *descriptorpb.FileDescriptorProto) {
			p.MessageType = append(p.MessageType, &descriptorpb.DescriptorProto{Name: proto.String("Stats")})
			s := p.Service[0]
			s.Method = append(s.Method, &descriptorpb.MethodDescriptorProto{Name: proto.String("Stats"),
				InputType: proto.String(".lcl.plugin.v1.Stats"), OutputType: proto.String(".lcl.plugin.v1.Empty")})
		}, ""},
		{"a field removed, its number reserved", func(p *descriptorpb.FileDescriptorProto) {
			m := msg(p, "Plan")
			drop(m, "has_subset")
			reserve(m, 4)
		}, ""},
		{"a changed type (Matrix.data double, as version 2 did in place)", func(p *descriptorpb.FileDescriptorProto) {
			field(msg(p, "Matrix"), "data").Type = descriptorpb.FieldDescriptorProto_TYPE_DOUBLE.Enum()
		}, "field lcl.plugin.v1.Matrix.data = 3 changed type: repeated float, now repeated double"},
		{"int32 to int64", func(p *descriptorpb.FileDescriptorProto) {
			field(msg(p, "Matrix"), "rows").Type = descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum()
		}, "Matrix.rows = 1 changed type: optional int32, now optional int64"},
		{"repeated to singular", func(p *descriptorpb.FileDescriptorProto) {
			field(msg(p, "BeginRequest"), "labels").Label = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
		}, "BeginRequest.labels = 4 changed type: repeated int32, now optional int32"},
		{"another message type", func(p *descriptorpb.FileDescriptorProto) {
			field(msg(p, "Plan"), "targets").TypeName = proto.String(".lcl.plugin.v1.SharedMatrix")
		}, "Plan.targets = 2 changed type: optional message lcl.plugin.v1.Matrix, now optional message lcl.plugin.v1.SharedMatrix"},
		{"a map's value type", func(p *descriptorpb.FileDescriptorProto) {
			m := msg(p, "Metrics")
			field(m.NestedType[0], "value").Type = descriptorpb.FieldDescriptorProto_TYPE_FLOAT.Enum()
		}, "field lcl.plugin.v1.Metrics.values = 4 changed type: map<optional string, optional double>, now map<optional string, optional float>"},
		{"a changed number", func(p *descriptorpb.FileDescriptorProto) {
			field(msg(p, "Stage"), "model").Number = proto.Int32(9)
		}, "field lcl.plugin.v1.Stage.model changed its number 8 to 9"},
		{"a reused number", func(p *descriptorpb.FileDescriptorProto) {
			m := msg(p, "PlanRequest")
			drop(m, "step")
			m.Field = append(m.Field, newField("substep", 3, descriptorpb.FieldDescriptorProto_TYPE_INT32))
		}, "field number 3 of lcl.plugin.v1.PlanRequest was step, is now substep"},
		{"a removed field, not reserved", func(p *descriptorpb.FileDescriptorProto) {
			drop(msg(p, "Plan"), "has_subset")
		}, "field lcl.plugin.v1.Plan.has_subset = 4 is removed but its number is not reserved"},
		{"a renamed message", func(p *descriptorpb.FileDescriptorProto) {
			msg(p, "FeatureChunk").Name = proto.String("Features")
			for _, s := range p.Service {
				for _, m := range s.Method {
					if m.GetInputType() == ".lcl.plugin.v1.FeatureChunk" {
						m.InputType = proto.String(".lcl.plugin.v1.Features")
					}
				}
			}
		}, "message lcl.plugin.v1.FeatureChunk is gone (removed or renamed"},
		{"a removed method", func(p *descriptorpb.FileDescriptorProto) {
			s := p.Service[0]
			s.Method = s.Method[:len(s.Method)-1]
		}, "method lcl.plugin.v1.Strategy.Features is gone"},
		{"a method's request type", func(p *descriptorpb.FileDescriptorProto) {
			p.Service[0].Method[3].InputType = proto.String(".lcl.plugin.v1.Empty")
		}, "method lcl.plugin.v1.Strategy.Observe was (lcl.plugin.v1.Metrics) returns (lcl.plugin.v1.Empty), is now (lcl.plugin.v1.Empty)"},
		{"streaming", func(p *descriptorpb.FileDescriptorProto) {
			p.Service[0].Method[4].ClientStreaming = proto.Bool(false)
		}, "method lcl.plugin.v1.Strategy.Features changed its streaming"},
		{"another package", func(p *descriptorpb.FileDescriptorProto) {
			p.Package = proto.String("lcl.plugin.v2")
			for _, m := range p.MessageType {
				for _, f := range m.Field {
					if f.TypeName != nil {
						f.TypeName = proto.String(strings.Replace(f.GetTypeName(), ".v1.", ".v2.", 1))
					}
				}
			}
			for _, s := range p.Service {
				for _, m := range s.Method {
					m.InputType = proto.String(strings.Replace(m.GetInputType(), ".v1.", ".v2.", 1))
					m.OutputType = proto.String(strings.Replace(m.GetOutputType(), ".v1.", ".v2.", 1))
				}
			}
		}, "package lcl.plugin.v1 is now lcl.plugin.v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := protodesc.ToFileDescriptorProto(base)
			tc.edit(p)
			cur, err := protodesc.NewFile(p, nil)
			if err != nil {
				t.Fatalf("the edited descriptor does not build: %v", err)
			}
			got := breakingChanges(base, cur)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Fatalf("a compatible change reported: %q", got)
			case tc.want != "" && !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, tc.want) }):
				t.Fatalf("got %q, want a report containing %q", got, tc.want)
			}
		})
	}
	// A number reserved in one version stays reserved: a baseline with
	// `reserved 11;` in BeginRequest against a version with a field 11.
	old := protodesc.ToFileDescriptorProto(base)
	reserve(msg(old, "BeginRequest"), 11)
	oldFD, err := protodesc.NewFile(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	cur := protodesc.ToFileDescriptorProto(base)
	m := msg(cur, "BeginRequest")
	m.Field = append(m.Field, newField("seed", 11, descriptorpb.FieldDescriptorProto_TYPE_INT64))
	curFD, err := protodesc.NewFile(cur, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := breakingChanges(oldFD, curFD); len(got) != 1 || !strings.Contains(got[0], "field lcl.plugin.v1.BeginRequest.seed = 11 reuses a reserved number") {
		t.Fatalf("reserved number reused: got %q", got)
	}
}
