package models

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/trainer/safetensors"
	"github.com/lcl-project/lcl/trainer/torch"
)

// writeState writes a model's parameters and buffers as safetensors.
func writeState(t *testing.T, path string, m *torch.Model) {
	t.Helper()
	st, err := m.State().Copy()
	if err != nil {
		t.Fatal(err)
	}
	ts := make([]safetensors.Tensor, len(st))
	for i, n := range st {
		ts[i] = safetensors.Tensor{Name: n.Name, DType: n.DType.String(), Shape: n.Shape, Data: n.Data}
	}
	var b bytes.Buffer
	if err := safetensors.Write(&b, ts, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStrictLoadSameLogitsInPyTorch trains each new architecture (reduced
// depths: the structure is the same, the test stays fast) two steps with
// lcl, writes its weights, and loads them with strict=True into the PyTorch
// module: torchvision's ResNet (ResNeXt) and DenseNet, and the reference
// modules written from the papers in bench/models_ref.py (SENet-154,
// Inception-ResNet-v2, the CIFAR DenseNet-BC, WRN). Both must give the same
// logits in evaluation mode (which uses the batch-norm statistics the
// training steps updated).
func TestStrictLoadSameLogitsInPyTorch(t *testing.T) {
	py := testdep.PythonModules(t, "torch", "torchvision")
	torch.SetThreads(1)
	dir := t.TempDir()
	type refCase struct {
		Name    string         `json:"name"`
		Ref     string         `json:"ref"`
		Kwargs  map[string]any `json:"kwargs"`
		Shape   [4]int         `json:"shape"`
		Classes int            `json:"classes"`
		Weight  string         `json:"weights"`
		X       string         `json:"x"`
	}
	cases := []struct {
		model string
		in    Input
		ref   refCase
	}{
		{"resnext101-32x8d:layers=1x2x1x1,group-width=2,stem=imagenet", Input{C: 3, H: 64, W: 64, NumClasses: 10},
			refCase{Ref: "resnext101-32x8d", Kwargs: map[string]any{"layers": []int{1, 2, 1, 1}, "group_width": 2}}},
		{"resnet18:stem=imagenet", Input{C: 3, H: 64, W: 64, NumClasses: 7}, refCase{Ref: "resnet18"}},
		// HAFrame's projection before the head, as their HAF_resnet.py
		// writes it (bench/models_ref.py's Projection).
		{"resnet18:stem=imagenet,layers=1x1x1x1,proj=12", Input{C: 3, H: 64, W: 64, NumClasses: 7},
			refCase{Ref: "resnet18", Kwargs: map[string]any{"layers": []int{1, 1, 1, 1}, "proj": 12}}},
		{"densenet121:blocks=2x3,growth=8,init=16,dropout=0.2", Input{C: 3, H: 64, W: 64, NumClasses: 10},
			refCase{Ref: "densenet121", Kwargs: map[string]any{"growth": 8, "blocks": []int{2, 3}, "init": 16, "drop": 0.2}}},
		{"densenet-bc-190-40:depth=16,growth=6,dropout=0.1", Input{C: 3, H: 32, W: 32, NumClasses: 100},
			refCase{Ref: "densenet-bc-190-40", Kwargs: map[string]any{"depth": 16, "growth": 6, "drop": 0.1}}},
		{"senet154:layers=1x2x1x1,groups=8", Input{C: 3, H: 32, W: 32, NumClasses: 10},
			refCase{Ref: "senet154", Kwargs: map[string]any{"layers": []int{1, 2, 1, 1}, "groups": 8}}},
		{"inception-resnet-v2:repeats=1x2x1", Input{C: 3, H: 75, W: 75, NumClasses: 10},
			refCase{Ref: "inception-resnet-v2", Kwargs: map[string]any{"repeats": []int{1, 2, 1}}}},
		{"wrn:depth=10,widen=2,dropout=0.3", Input{C: 3, H: 32, W: 32, NumClasses: 10},
			refCase{Ref: "wrn-28-10", Kwargs: map[string]any{"depth": 10, "widen": 2}}},
	}
	const n = 3
	r := rand.New(rand.NewPCG(3, 4))
	want := map[string][]float32{}
	var manifest []refCase
	for i, tc := range cases {
		spec, err := Builtin().Get(tc.model, tc.in)
		if err != nil {
			t.Fatal(err)
		}
		torch.ManualSeed(uint64(10 + i))
		m, err := torch.NewModel(spec, "cpu")
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		o, _ := torch.NewSGD(m, 0.9, 0, false)
		x := make([]float32, n*tc.in.C*tc.in.H*tc.in.W)
		for j := range x {
			x[j] = float32(r.NormFloat64())
		}
		y := []int64{0, 1, 2}
		// Two training steps and an evaluation through an engine, as lcl
		// train runs them.
		e, err := torch.NewEngine("cpu", torch.EngineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		in := torch.Input{X: x, N: n, C: tc.in.C, H: tc.in.H, W: tc.in.W, Y: y}
		for range 2 {
			if err := e.Put(in); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Train(&torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o}, Coefs: torch.Coefs{HardCE: 1}, LR: 0.01}, 0); err != nil {
				t.Fatalf("%s: %v", tc.model, err)
			}
		}
		if err := e.Put(in); err != nil {
			t.Fatal(err)
		}
		ev, err := e.Eval(m, true, false)
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		want[tc.model] = ev.Logits
		rc := tc.ref
		rc.Name = tc.model
		rc.Shape = [4]int{n, tc.in.C, tc.in.H, tc.in.W}
		rc.Classes = tc.in.NumClasses
		rc.Weight = filepath.Join(dir, idx(i)+".safetensors")
		rc.X = filepath.Join(dir, idx(i)+".x")
		writeState(t, rc.Weight, m)
		var xb bytes.Buffer
		binary.Write(&xb, binary.LittleEndian, x)
		os.WriteFile(rc.X, xb.Bytes(), 0o644)
		manifest = append(manifest, rc)
		o.Close()
		m.Close()
	}
	mf, _ := json.Marshal(manifest)
	bench, _ := filepath.Abs("../../bench")
	out := py.Run(`
import json, sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import torch, models_ref
torch.set_num_threads(1)
res = {}
for c in json.loads(sys.argv[2]):
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in c["kwargs"].items()} if c["kwargs"] else {}
    m = models_ref.reference(c["ref"], c["classes"], **kw)
    m.load_state_dict(models_ref.load_safetensors(c["weights"]), strict=True)
    m.eval()
    x = torch.frombuffer(bytearray(open(c["x"], "rb").read()), dtype=torch.float32).reshape(c["shape"])
    with torch.no_grad():
        res[c["name"]] = m(x).flatten().tolist()
print(json.dumps(res))
`, bench, string(mf))
	var got map[string][]float64
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("python output %q: %v", out, err)
	}
	for _, tc := range cases {
		w, g := want[tc.model], got[tc.model]
		if len(g) != len(w) {
			t.Errorf("%s: PyTorch gave %d logits, lcl %d", tc.model, len(g), len(w))
			continue
		}
		scale := 1.0
		for _, v := range g {
			scale = math.Max(scale, math.Abs(v))
		}
		worst := 0.0
		for i := range w {
			worst = math.Max(worst, math.Abs(g[i]-float64(w[i]))/scale)
		}
		if worst > 1e-5 {
			t.Errorf("%s: logits differ by %.2g (relative to the largest): PyTorch %v, lcl %v", tc.model, worst, g, w)
		}
		t.Logf("%s: largest difference %.2g of the largest logit %.3g", tc.model, worst, scale)
	}
}
