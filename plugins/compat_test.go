package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/plugins/sdk"
)

// protocolV2Plugin is a plugin written against protocol version 2, frozen:
// the Python strategy example (examples/lcl-strategy-py) and its lcl_pb2.py
// as they were when version 2 was released, byte for byte. The example
// itself follows lcl.proto as it grows; this copy never does, so it is what
// a third party's version-2 plugin looks like to a newer host.
var protocolV2Plugin = map[string]string{
	"lcl-strategy-pyannealls.py": "2a03cbd53afd23199009892f9f4875b8cc8209c9561193de584ef87a824e7ba9",
	"lcl_pb2.py":                 "7564d5d961b179e3f0bf9aecc4b12696a63547556c0b015a2ef9dd35c9c9e991",
}

// TestProtocolV2PluginStillRuns: the protocol only grows (docs/plugins.md,
// "What a plugin can rely on"), so a version-2 plugin keeps working with
// today's host: it is listed and described, begins, plans — inline and
// through shared files — observes, and its errors reach the caller.
func TestProtocolV2PluginStillRuns(t *testing.T) {
	py := testdep.PythonModules(t, "grpc", "google.protobuf")
	dir := t.TempDir()
	for name, want := range protocolV2Plugin {
		raw, err := os.ReadFile(filepath.Join("testdata", "protocol-v2", name))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != want {
			t.Fatalf("testdata/protocol-v2/%s changed: it is the frozen version-2 plugin, never edited (git checkout it)", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// It is a version-2 plugin: its lcl_pb2.py holds the released
	// version 2 of lcl.proto, the baseline make lint compares with.
	raw := py.Run("import sys; sys.path.insert(0, sys.argv[1]); import lcl_pb2; sys.stdout.write(lcl_pb2.DESCRIPTOR.serialized_pb.hex())", dir)
	pb, err := hex.DecodeString(strings.TrimSpace(raw))
	if err != nil {
		t.Fatal(err)
	}
	var fixture descriptorpb.FileDescriptorProto
	if err := proto.Unmarshal(pb, &fixture); err != nil {
		t.Fatal(err)
	}
	base, err := os.ReadFile(filepath.Join("proto", "testdata", "v2", "lcl.binpb"))
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(base, &set); err != nil || len(set.File) != 1 {
		t.Fatalf("proto/testdata/v2/lcl.binpb: %d files, %v", len(set.File), err)
	}
	if !proto.Equal(withoutJSONNames(&fixture), withoutJSONNames(set.File[0])) {
		t.Fatal("testdata/protocol-v2/lcl_pb2.py is not proto/testdata/v2/lcl.proto compiled")
	}

	h := testHost(t)
	h.Dirs = []string{dir}
	h.Timeout = 0
	ctx := context.Background()

	list, err := h.List(ctx, ListOptions{Describe: true, Names: []string{"pyannealls"}})
	if err != nil || len(list) != 1 || list[0].Error != "" || list[0].Version != "0.1.0" ||
		len(list[0].Params) != 1 || list[0].Params[0] != (sdk.Param{Name: "alpha", Type: sdk.ParamFloat, Default: "0.2", Help: "smoothing at the first epoch"}) {
		t.Fatalf("listed as %+v (%v)", list, err)
	}

	// Its plans, written out from its docstring: α_t = α·(1 − t/(E−1)),
	// targets (1 − α_t)·onehot + α_t/C, soft CE only.
	const c, epochs, alpha = 5, 4, 0.3
	run := testRun(c, 10)
	run.Epochs = epochs
	run.Params = map[string]string{"alpha": "0.3"}
	check := func(st *Strategy, what string) {
		t.Helper()
		stages, err := st.Begin(ctx, run)
		if err != nil || len(stages) != 1 || !reflect.DeepEqual(stages[0], sdk.Stage{Name: "train", Epochs: epochs, Peers: 1, Teacher: -1, Fresh: true}) {
			t.Fatalf("%s: Begin = %+v, %v", what, stages, err)
		}
		for e := range epochs {
			p, err := st.Plan(ctx, sdk.PlanAt{Epoch: e})
			if err != nil {
				t.Fatalf("%s: epoch %d: %v", what, e, err)
			}
			a := alpha * (1 - float64(e)/(epochs-1))
			if p.Coefs != (sdk.Coefs{SoftCE: 1}) || p.Targets == nil || p.Weights != nil || p.Subset != nil {
				t.Fatalf("%s: epoch %d: plan %+v", what, e, p)
			}
			for i := range c {
				for j, got := range p.Targets.Row(i) {
					want := float32(a / c)
					if i == j {
						want = float32(1 - a + a/c)
					}
					if got != want {
						t.Fatalf("%s: epoch %d: y[%d][%d] = %v, want %v", what, e, i, j, got, want)
					}
				}
			}
			if err := st.Observe(ctx, sdk.Metrics{Epoch: e, Values: map[string]float64{"loss": 1, "top1": 0.5}}); err != nil {
				t.Fatalf("%s: Observe: %v", what, err)
			}
		}
	}
	st, err := h.Strategy("pyannealls")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check(st, "inline")
	run.Params = map[string]string{"alpha": "2"}
	if _, err := st.Begin(ctx, run); err == nil || !strings.Contains(err.Error(), "alpha = 2, want a value in [0,1]") {
		t.Fatalf("alpha = 2: %v", err)
	}
	run.Params = map[string]string{"alpha": "0.3"}

	// Beyond the inline limit its plans come as shared files it writes.
	h.InlineLimit = 16
	shared, err := h.Strategy("pyannealls")
	h.InlineLimit = 0
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	check(shared, "shared files")
	if left, _ := filepath.Glob(filepath.Join(shared.c.share, "*")); len(left) != 0 {
		t.Fatalf("files left in the matrix folder: %v", left)
	}
}

// withoutJSONNames clears the JSON names protoc writes into a descriptor
// set (protoc -o) but not into lcl_pb2.py.
func withoutJSONNames(p *descriptorpb.FileDescriptorProto) *descriptorpb.FileDescriptorProto {
	p = proto.Clone(p).(*descriptorpb.FileDescriptorProto)
	var clear func([]*descriptorpb.DescriptorProto)
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
