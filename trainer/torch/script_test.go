//go:build cgo

package torch

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
)

// TestTorchScriptModels loads modules saved by Debian's PyTorch — a
// scripted and a traced torchvision resnet18 and a scripted module with a
// `penultimate` method — and compares lcl's logits and penultimate
// features with PyTorch's on the same input: for resnet18 the features
// are the input of its last linear layer (fc), for the third module what
// its method returns. Re-initialisation and the class-count check are
// checked too.
func TestTorchScriptModels(t *testing.T) {
	py := testdep.PythonModules(t, "torch", "torchvision")
	if err := SetThreads(1); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const n, classes = 3, 5
	r := rand.New(rand.NewPCG(5, 6))
	x := randn(r, n*3*32*32)
	var xb bytes.Buffer
	binary.Write(&xb, binary.LittleEndian, x)
	xpath := filepath.Join(dir, "x")
	os.WriteFile(xpath, xb.Bytes(), 0o644)
	// torch.jit.script reads the source of the classes it compiles: the
	// script must be a file, not python -c.
	maker := filepath.Join(dir, "make.py")
	os.WriteFile(maker, []byte(`
import json, sys
import torch, torch.nn as nn, torch.nn.functional as F, torchvision
dir, xpath = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
torch.set_num_threads(1)
m = torchvision.models.resnet18(num_classes=5)
m.train()
with torch.no_grad():
    for _ in range(2):
        m(torch.randn(4, 3, 32, 32))  # batch-norm statistics away from 0/1
m.eval()
x = torch.frombuffer(bytearray(open(xpath, "rb").read()), dtype=torch.float32).reshape(3, 3, 32, 32)
feats = []
h = m.fc.register_forward_hook(lambda mod, inp, out: feats.append(inp[0]))
with torch.no_grad():
    logits = m(x)
h.remove()
torch.jit.script(m).save(dir + "/scripted.pt")
torch.jit.trace(m, x).save(dir + "/traced.pt")

class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, bias=False)
        self.bn = nn.BatchNorm2d(6)
        self.head = nn.Linear(6, 5)
    def forward(self, x):
        return self.head(self.penultimate(x))
    @torch.jit.export
    def penultimate(self, x):
        return 2 * F.adaptive_avg_pool2d(F.relu(self.bn(self.conv(x))), 1).flatten(1)
s = Small().eval()
torch.jit.script(s).save(dir + "/small.pt")

class NoLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 5, 3)
    def forward(self, x):
        return F.adaptive_avg_pool2d(self.conv(x), 1).flatten(1)
torch.jit.script(NoLinear()).save(dir + "/nolinear.pt")
with torch.no_grad():
    sl, sf = s(x), s.penultimate(x)
print(json.dumps({"logits": logits.flatten().tolist(), "features": feats[0].flatten().tolist(),
    "keys": list(m.state_dict().keys()), "params": sum(p.numel() for p in m.parameters()),
    "small_logits": sl.flatten().tolist(), "small_features": sf.flatten().tolist()}))
`), 0o644)
	cmd := py.Command(maker, dir, xpath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	out := string(outb)
	var ref struct {
		Logits, Features, SmallLogits, SmallFeatures []float64
		Keys                                         []string
		Params                                       int64
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(out, `"small_`, `"small`)), &ref); err != nil {
		t.Fatalf("python output: %v\n%s", err, out)
	}
	close := func(what string, got []float32, want []float64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, PyTorch %d", what, len(got), len(want))
		}
		for i := range got {
			if math.Abs(float64(got[i])-want[i]) > 1e-5*math.Max(1, math.Abs(want[i])) {
				t.Fatalf("%s[%d] = %v, PyTorch %v", what, i, got[i], want[i])
			}
		}
	}
	e, in := newEngine(t), Input{X: x, N: n, C: 3, H: 32, W: 32}
	for _, file := range []string{"scripted.pt", "traced.pt"} {
		m, err := NewModel(Spec{InC: 3, InH: 32, InW: 32, NumClasses: classes, Script: filepath.Join(dir, file)}, "cpu")
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if m.FeatureDim() != 512 {
			t.Errorf("%s: feature width %d, want 512", file, m.FeatureDim())
		}
		if p, err := m.NumParams(); err != nil || p != ref.Params {
			t.Errorf("%s: %d parameters (%v), PyTorch %d", file, p, err, ref.Params)
		}
		st, err := m.State().Copy()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, s := range st {
			keys = append(keys, s.Name)
		}
		slices.Sort(keys)
		want := slices.Clone(ref.Keys)
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Errorf("%s: state names %v, PyTorch %v", file, keys, want)
		}
		ev, err := evalBatch(e, m, in, true, true)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		close(file+" logits", ev.Logits, ref.Logits)
		close(file+" features", ev.Features, ref.Features)
		m.Close()
	}
	small, err := NewModel(Spec{InC: 3, InH: 32, InW: 32, NumClasses: classes, Script: filepath.Join(dir, "small.pt")}, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evalBatch(e, small, in, true, true)
	if err != nil {
		t.Fatal(err)
	}
	close("penultimate logits", ev.Logits, ref.SmallLogits)
	close("penultimate features", ev.Features, ref.SmallFeatures)
	small.Close()

	// No linear layer and no penultimate method: it trains and evaluates,
	// and only a request for features fails, saying why.
	nl, err := NewModel(Spec{InC: 3, InH: 32, InW: 32, NumClasses: classes, Script: filepath.Join(dir, "nolinear.pt")}, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evalBatch(e, nl, in, true, false); err != nil {
		t.Errorf("logits of a module without a linear layer: %v", err)
	}
	if _, err := evalBatch(e, nl, in, false, true); err == nil || !strings.Contains(err.Error(), "penultimate") {
		t.Errorf("features of a module without a linear layer: %v", err)
	}
	nl.Close()

	// Re-initialised: PyTorch's default initialisation drawn from the
	// seeded generator, not the file's weights.
	script := Spec{InC: 3, InH: 32, InW: 32, NumClasses: classes, Script: filepath.Join(dir, "scripted.pt"), Reinit: true}
	var states [2]map[string][]float32
	for i := range states {
		ManualSeed(9)
		m, err := NewModel(script, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		states[i] = stateFloats(t, m)
		m.Close()
	}
	file, _ := NewModel(Spec{InC: 3, InH: 32, InW: 32, NumClasses: classes, Script: script.Script}, "cpu")
	fromFile := stateFloats(t, file)
	file.Close()
	w := states[0]["conv1.weight"]
	if slices.Equal(w, fromFile["conv1.weight"]) || !slices.Equal(w, states[1]["conv1.weight"]) {
		t.Error("Reinit: conv1.weight is the file's, or differs between equally seeded loads")
	}
	// kaiming_uniform_(a=√5) on a 3×7×7 fan-in: U(±1/√147).
	bound := 1 / math.Sqrt(147)
	for _, v := range w {
		if math.Abs(float64(v)) > bound {
			t.Fatalf("Reinit: conv1.weight value %v outside ±%v", v, bound)
		}
	}
	if bn := states[0]["bn1.weight"]; bn[0] != 1 || states[0]["bn1.bias"][0] != 0 {
		t.Error("Reinit: batch norm not reset to 1/0")
	}

	// A module for other classes, a file that is no module.
	if _, err := NewModel(Spec{InC: 3, InH: 32, InW: 32, NumClasses: 7, Script: script.Script}, "cpu"); err == nil ||
		!strings.Contains(err.Error(), "want [1, 7]") {
		t.Errorf("7 classes from a 5-class module: %v", err)
	}
	bad := filepath.Join(dir, "bad.pt")
	os.WriteFile(bad, []byte("not a zip"), 0o644)
	var te *Error
	if _, err := NewModel(Spec{InC: 3, InH: 32, InW: 32, NumClasses: 5, Script: bad}, "cpu"); err == nil || !errors.As(err, &te) {
		t.Errorf("garbage file: %v, want a *torch.Error", err)
	}

	// Loaded once: models built from the checked module (Spec.Loaded) do
	// not open the file again — they are the file's model after it was
	// replaced by garbage — and equal a model loaded from the file: the
	// check's training-mode forward left the batch-norm statistics (moved
	// away from 0/1 by the maker) alone, and a re-initialised peer built
	// first changed only its own copy.
	once := filepath.Join(dir, "once.pt")
	b, err := os.ReadFile(script.Script)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(once, b, 0o644)
	direct, err := NewModel(Spec{InC: 3, InH: 32, InW: 32, NumClasses: classes, Script: once}, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	want := stateFloats(t, direct)
	direct.Close()
	loaded, err := LoadScript(once, 3, 32, 32, classes, false)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(once, []byte("not a zip"), 0o644)
	for _, reinit := range []bool{true, false, false} {
		ManualSeed(9)
		m, err := NewModel(Spec{InC: 3, InH: 32, InW: 32, NumClasses: classes, Script: once, Loaded: loaded, Reinit: reinit}, "cpu")
		if err != nil {
			t.Fatalf("from the loaded module (reinit %v): %v", reinit, err)
		}
		got := stateFloats(t, m)
		if reinit {
			if !slices.Equal(got["conv1.weight"], states[0]["conv1.weight"]) {
				t.Error("Reinit from the loaded module: conv1.weight differs from an equally seeded load of the file")
			}
			m.Close()
			continue
		}
		if len(got) != len(want) {
			t.Fatalf("from the loaded module: %d state tensors, the file's model %d", len(got), len(want))
		}
		for k, v := range want {
			if !slices.Equal(got[k], v) {
				t.Fatalf("from the loaded module: %s differs from the file's model", k)
			}
		}
		ev, err := evalBatch(e, m, in, true, false)
		if err != nil {
			t.Fatal(err)
		}
		close("loaded module logits", ev.Logits, ref.Logits)
		m.Close()
	}
	loaded.Close()
	if _, err := NewModel(Spec{InC: 3, InH: 32, InW: 32, NumClasses: classes, Script: once, Loaded: loaded}, "cpu"); err == nil {
		t.Error("a model from a closed TorchScript module was built")
	}
}
