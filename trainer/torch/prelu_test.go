//go:build cgo

package torch

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/lcl-project/lcl/internal/lossref"
	"github.com/lcl-project/lcl/internal/testdep"
)

// projOpsRef is the network of TestPReLUAndVectorBNMatchPyTorch as
// torch.nn modules in float64: Conv2d, PReLU on the map, Linear,
// BatchNorm1d and PReLU on the vector, a residual sum, the head Linear. It
// loads lcl's initial weights, takes one cross-entropy SGD step in
// training mode and prints the loss, every parameter's gradient, the batch
// norm's running statistics after the step and the logits of the updated
// network in evaluation mode.
const projOpsRef = `
import json, sys, torch
import torch.nn as nn
import torch.nn.functional as F
torch.set_default_dtype(torch.float64)
d = json.load(open(sys.argv[1]))
c, ch, n, k = d["c"], d["ch"], d["n"], d["classes"]
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(c, ch, 3, padding=1)
        self.act0 = nn.PReLU(ch)
        self.fc1 = nn.Linear(ch * d["h"] * d["w"], n, bias=False)
        self.bn = nn.BatchNorm1d(n)
        self.act = nn.PReLU(n)
        self.fc = nn.Linear(n, k)
    def forward(self, x):
        f = self.bn(self.fc1(self.act0(self.conv1(x)).flatten(1)))
        return self.fc(self.act(f) + f)
m = Net()
sd = m.state_dict()
for name, v in d["state"].items():
    sd[name] = torch.tensor(v).reshape(sd[name].shape)
m.load_state_dict(sd)
x = torch.tensor(d["x"]).reshape(-1, c, d["h"], d["w"])
y = torch.tensor(d["y"])
m.train()
loss = F.cross_entropy(m(x), y)
loss.backward()
out = {"loss": loss.item(), "grads": {k: p.grad.flatten().tolist() for k, p in m.named_parameters()},
       "running_mean": m.bn.running_mean.tolist(), "running_var": m.bn.running_var.tolist()}
with torch.no_grad():
    for p in m.parameters():
        p -= d["lr"] * p.grad
m.eval()
with torch.no_grad():
    out["logits"] = m(x).flatten().tolist()
print(json.dumps(out))
`

// TestPReLUAndVectorBNMatchPyTorch holds the PReLU node (on a map and on a
// vector) and batch norm on N×C vectors (BatchNorm1d) against torch.nn's
// modules in float64: the same initial slopes (0.25), one SGD step's loss
// and gradients of every parameter (the update over the learning rate),
// the running statistics it leaves, and the logits of the updated network
// in evaluation mode (which read them).
func TestPReLUAndVectorBNMatchPyTorch(t *testing.T) {
	py := testdep.PythonModules(t, "torch")
	SetThreads(1)
	const b, c, h, w, ch, n, classes, lr = 6, 2, 4, 4, 3, 5, 4, 0.5
	spec := Spec{InC: c, InH: h, InW: w, NumClasses: classes,
		Features: Seq("", Node{Op: OpConv, Name: "conv1", In: c, Out: ch, Kernel: [2]int{3, 3}, Pad: [2]int{1, 1}, Bias: true},
			PReLU("act0", ch), Flatten(), Node{Op: OpLinear, Name: "fc1", In: ch * h * w, Out: n}, BN("bn", n),
			Sum(PReLU("act", n), Identity())),
		Head: Seq("", Linear("fc", n, classes))}
	ManualSeed(7)
	m, err := NewModel(spec, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got, err := m.NumParams(); err != nil || got != spec.NumParams() {
		t.Errorf("libtorch has %d parameters (%v), the description %d", got, err, spec.NumParams())
	}
	o, err := NewSGD(m, 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	before := stateFloats(t, m)
	for _, k := range []string{"act0.weight", "act.weight"} {
		for i, v := range before[k] {
			if v != 0.25 {
				t.Errorf("%s[%d] starts at %g, want PyTorch's 0.25", k, i, v)
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	x := lossref.Normal32(r, b*c*h*w)
	y := []int64{0, 1, 2, 3, 1, 2}
	in := Input{X: x, N: b, C: c, H: h, W: w, Y: y}
	e := newEngine(t)
	res, err := trainStep(e, &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: Coefs{HardCE: 1}, LR: lr}, in)
	if err != nil {
		t.Fatal(err)
	}
	after := stateFloats(t, m)
	ev, err := evalBatch(e, m, in, true, false)
	if err != nil {
		t.Fatal(err)
	}
	ref := runProjOpsRef(t, py, map[string]any{"c": c, "h": h, "w": w, "ch": ch, "n": n, "classes": classes, "lr": lr,
		"x": lossref.Float64s(x), "y": y, "state": float64State(before)})
	near := func(what string, got, want, tol float64) {
		if math.Abs(got-want) > tol*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %.7g, PyTorch %.7g", what, got, want)
		}
	}
	near("loss", float64(res.Loss[0]), ref.Loss, 1e-5)
	for name, g := range ref.Grads {
		if len(g) != len(before[name]) {
			t.Fatalf("%s: PyTorch has %d gradients, lcl %d values", name, len(g), len(before[name]))
		}
		for i := range g {
			near(name+" gradient", (float64(before[name][i])-float64(after[name][i]))/lr, g[i], 2e-5)
		}
	}
	for i := range n {
		near("bn.running_mean", float64(after["bn.running_mean"][i]), ref.RunningMean[i], 1e-5)
		near("bn.running_var", float64(after["bn.running_var"][i]), ref.RunningVar[i], 1e-5)
	}
	if len(ev.Logits) != len(ref.Logits) {
		t.Fatalf("%d logits, PyTorch %d", len(ev.Logits), len(ref.Logits))
	}
	for i := range ev.Logits {
		near("evaluation logit", float64(ev.Logits[i]), ref.Logits[i], 2e-5)
	}
}

type projOpsResult struct {
	Loss        float64
	Grads       map[string][]float64
	RunningMean []float64 `json:"running_mean"`
	RunningVar  []float64 `json:"running_var"`
	Logits      []float64
}

// runProjOpsRef runs projOpsRef on in.
func runProjOpsRef(t *testing.T, py *testdep.Py, in map[string]any) projOpsResult {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.json")
	b, _ := json.Marshal(in)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out projOpsResult
	if err := json.Unmarshal([]byte(py.Run(projOpsRef, path)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// float64State is st's values as float64 (exactly: JSON's shortest decimal
// of a float32 is not always the float32 itself in float64).
func float64State(st map[string][]float32) map[string][]float64 {
	out := make(map[string][]float64, len(st))
	for k, v := range st {
		out[k] = lossref.Float64s(v)
	}
	return out
}
