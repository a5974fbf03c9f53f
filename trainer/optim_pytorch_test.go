package trainer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/torch"
)

// loadST is the Python side's safetensors reader (Debian ships no
// safetensors package): a dict of name → tensor.
const loadST = `
import json, struct
import torch
def load(path):
    b = open(path, "rb").read()
    k, = struct.unpack("<Q", b[:8])
    h = json.loads(b[8:8+k]); data = b[8+k:]
    dt = {"F32": torch.float32, "I64": torch.int64}
    return {name: torch.frombuffer(bytearray(data[v["data_offsets"][0]:v["data_offsets"][1]]), dtype=dt[v["dtype"]]).reshape(v["shape"]).clone()
            for name, v in h.items() if name != "__metadata__"}
`

// writeState writes the state of a model or an optimizer as safetensors.
func writeState(t *testing.T, path string, s interface{ State() *torch.State }) {
	t.Helper()
	var buf []byte
	srcs, err := sources("", s.State(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeSafetensors(path, srcs, nil); err != nil {
		t.Fatal(err)
	}
}

// TestOptimizersMatchPyTorch trains a linear model eight steps (one-hot
// loss, a different learning rate every step) with each of lcl's
// torch.optim optimizers, created through the registry (Optimizers), and the same module in PyTorch from the same weights on the
// same batches with torch.optim and torch.nn.utils.clip_grad_norm_: the
// weights and the optimizer's state must be bit-identical (SGD: see its
// case). (A linear model
// makes the forward and backward passes the same ATen calls on both sides,
// so every difference would be the optimizer's.)
func TestOptimizersMatchPyTorch(t *testing.T) {
	py := testdep.PythonModules(t, "torch")
	torch.SetThreads(1)
	in := models.Input{C: 1, H: 6, W: 6, NumClasses: 4}
	spec, err := linearModels(t).Get("linear", in)
	if err != nil {
		t.Fatal(err)
	}
	const n, steps = 8, 8
	root := t.TempDir()
	var dirs []string
	for _, tc := range []struct {
		name string
		opt  Optim // through the registry, as a run creates it
		clip float64
		py   string
		tol  float64
	}{
		{"adam", Optim{Optimizer: "adam", WeightDecay: 0.01}, 0,
			"torch.optim.Adam(m.parameters(), lr=1, weight_decay=0.01)", 0},
		{"adamw", Optim{Optimizer: "adamw", WeightDecay: 0.05, Params: map[string]float64{"beta1": 0.8, "beta2": 0.99, "eps": 1e-6}}, 0,
			"torch.optim.AdamW(m.parameters(), lr=1, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)", 0},
		{"adamw clipped", Optim{Optimizer: "adamw", WeightDecay: 0.01}, 0.05,
			"torch.optim.AdamW(m.parameters(), lr=1, weight_decay=0.01)", 0},
		// torch.optim's defaults against the registry's: RAdam rectifies
		// from its 6th step on (rho_t > 5), NAdam's momentum_decay is 4e-3.
		{"radam", Optim{Optimizer: "radam"}, 0, "torch.optim.RAdam(m.parameters(), lr=1)", 0},
		{"radam wd", Optim{Optimizer: "radam", WeightDecay: 0.01, Params: map[string]float64{"beta1": 0.8, "beta2": 0.95, "eps": 1e-6}}, 0.05,
			"torch.optim.RAdam(m.parameters(), lr=1, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.01)", 0},
		{"nadam", Optim{Optimizer: "nadam"}, 0, "torch.optim.NAdam(m.parameters(), lr=1)", 0},
		{"nadam wd", Optim{Optimizer: "nadam", WeightDecay: 0.01, Params: map[string]float64{"beta1": 0.8, "beta2": 0.95, "eps": 1e-6, "momentum_decay": 0.05}}, 0.05,
			"torch.optim.NAdam(m.parameters(), lr=1, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.01, momentum_decay=0.05)", 0},
		// lcl's fused SGD update rounds unlike torch.optim.SGD in the last
		// bits (up to 6e-8 here): clipping composes with it to that tolerance.
		{"sgd clipped", Optim{Momentum: 0.9, WeightDecay: 1e-4, Nesterov: true}, 0.1,
			"torch.optim.SGD(m.parameters(), lr=1, momentum=0.9, nesterov=True, weight_decay=1e-4)", 1e-6},
	} {
		dir := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-"))
		os.Mkdir(dir, 0o755)
		dirs = append(dirs, dir)
		torch.ManualSeed(13)
		m, err := torch.NewModel(spec, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		valid := tc.opt
		valid.Epochs, valid.Batch, valid.Schedule = 1, 1, Schedule{Kind: "constant", LR: 1}
		if err := valid.Validate(); err != nil {
			t.Fatal(err)
		}
		kind, err := OptimizerByName(tc.opt.Optimizer)
		if err != nil {
			t.Fatal(err)
		}
		o, err := kind.newOptimizer(m, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.SetClipNorm(tc.clip); err != nil {
			t.Fatal(err)
		}
		writeState(t, filepath.Join(dir, "w0.safetensors"), m)
		r := rand.New(rand.NewPCG(8, 9))
		var xs bytes.Buffer
		c := pyCase{Name: tc.name, Opt: tc.py, Clip: tc.clip, Tol: tc.tol}
		for s := range steps {
			x := make([]float32, n*36)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			y := make([]int64, n)
			for i := range y {
				y[i] = int64(r.IntN(4))
			}
			c.Y = append(c.Y, y)
			c.LR = append(c.LR, 0.01*float64(s+1))
			binary.Write(&xs, binary.LittleEndian, x)
			trainOn(t, &torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o}, Coefs: torch.Coefs{HardCE: 1}, LR: c.LR[s]},
				torch.Input{X: x, N: n, C: 1, H: 6, W: 6, Y: y})
		}
		writeState(t, filepath.Join(dir, "w1.safetensors"), m)
		writeState(t, filepath.Join(dir, "o1.safetensors"), o)
		m.Close()
		o.Close()
		os.WriteFile(filepath.Join(dir, "x"), xs.Bytes(), 0o644)
		js, _ := json.Marshal(c)
		os.WriteFile(filepath.Join(dir, "case.json"), js, 0o644)
	}
	out := py.Run(loadST+`
import sys
import torch.nn as nn, torch.nn.functional as F
torch.set_num_threads(1)
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(36, 4)
    def forward(self, x):
        return self.fc(torch.flatten(x, 1))
for d in sys.argv[1:]:
    c = json.load(open(d + "/case.json"))
    tol, steps = c["tol"], len(c["lr"])
    same = (lambda a, b: torch.equal(a, b)) if tol == 0 else (lambda a, b: torch.allclose(a, b, rtol=0, atol=tol))
    y = torch.tensor(c["y"])
    torch.manual_seed(0)
    m = M()
    m.load_state_dict(load(d + "/w0.safetensors"), strict=True)
    m.train()
    opt = eval(c["opt"])
    x = torch.frombuffer(bytearray(open(d + "/x", "rb").read()), dtype=torch.float32).reshape(steps, -1, 1, 6, 6)
    for s in range(steps):
        opt.zero_grad()
        logp = F.log_softmax(m(x[s]), 1)
        per = torch.zeros(x.shape[1])
        per = per - 1.0 * logp.gather(1, y[s].unsqueeze(1)).squeeze(1)
        per.mean().backward()
        if c["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(m.parameters(), c["clip"])
        for g in opt.param_groups:
            g["lr"] = c["lr"][s]
        opt.step()
    bad = []
    want = load(d + "/w1.safetensors")
    for name, v in m.state_dict().items():
        if not same(v, want[name]):
            bad.append("%s (max diff %g)" % (name, (v - want[name]).abs().max()))
    state = load(d + "/o1.safetensors")
    names = dict((id(p), k) for k, p in m.named_parameters())
    checked = 0
    for p in m.parameters():
        for key, v in opt.state[p].items():
            k = names[id(p)] + "." + key
            if k not in state:
                bad.append("lcl lacks " + k)
            elif not same(v.reshape(state[k].shape).to(state[k].dtype), state[k]):
                bad.append("%s (max diff %g)" % (k, (v - state[k]).abs().max()))
            checked += 1
    if len(state) != checked:
        bad.append("lcl has %d state tensors, torch.optim %d" % (len(state), checked))
    print(c["name"].replace(" ", "-"), "ok %d" % checked if not bad else "differ: " + ", ".join(bad))
`, dirs...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(dirs) {
		t.Fatalf("python printed %q", out)
	}
	for _, l := range lines {
		name, verdict, _ := strings.Cut(l, " ")
		if !strings.HasPrefix(verdict, "ok") {
			t.Errorf("%s: after %d steps lcl and PyTorch differ: %s", name, steps, verdict)
			continue
		}
		t.Logf("%s: weights and %s optimizer tensors equal to PyTorch's", name, strings.TrimPrefix(verdict, "ok "))
	}
}

// pyCase is one optimizer run of TestOptimizersMatchPyTorch as the Python
// side reads it.
type pyCase struct {
	Name string    `json:"name"`
	Opt  string    `json:"opt"` // the torch.optim constructor, over m.parameters()
	Clip float64   `json:"clip"`
	Tol  float64   `json:"tol"` // 0: bit-identical
	Y    [][]int64 `json:"y"`
	LR   []float64 `json:"lr"`
}

// TestClippingClips: the clipped runs above clip (their gradient norms are
// larger than the limits), so their comparison covers the scaling.
func TestClippingClips(t *testing.T) {
	torch.SetThreads(1)
	spec, err := linearModels(t).Get("linear", models.Input{C: 1, H: 6, W: 6, NumClasses: 4})
	if err != nil {
		t.Fatal(err)
	}
	weights := func(clip float64) []byte {
		torch.ManualSeed(13)
		m, err := torch.NewModel(spec, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		o, _ := torch.NewSGD(m, 0, 0, false)
		defer o.Close()
		if err := o.SetClipNorm(clip); err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(8, 9))
		x := make([]float32, 8*36)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		trainOn(t, &torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o}, Coefs: torch.Coefs{HardCE: 1}, LR: 0.01},
			torch.Input{X: x, N: 8, C: 1, H: 6, W: 6, Y: []int64{0, 1, 2, 3, 0, 1, 2, 3}})
		st, _ := m.State().Copy()
		return st[0].Data
	}
	if bytes.Equal(weights(0), weights(0.1)) {
		t.Error("clipping at 0.1 leaves the step as it was: the gradient norm is below the limit")
	}
	if !bytes.Equal(weights(0), weights(1e6)) {
		t.Error("clipping at a limit far above the gradient norm changed the step")
	}
}

// TestEMAMatchesPyTorch: UpdateEMA on a small CNN with batch norm is timm's
// ModelEmaV2.update (decay·e + (1−decay)·m over the state dict, copied
// into e: num_batches_tracked truncated back to an integer), bit for bit.
func TestEMAMatchesPyTorch(t *testing.T) {
	py := testdep.PythonModules(t, "torch")
	torch.SetThreads(1)
	dir := t.TempDir()
	in := models.Input{C: 1, H: 8, W: 8, NumClasses: 4}
	spec, err := models.Builtin().Get("cnn:channels=4x8,fc=16", in)
	if err != nil {
		t.Fatal(err)
	}
	// Two models with different weights and batch-norm counters.
	trained := func(seed uint64, steps int) *torch.Model {
		torch.ManualSeed(seed)
		m, err := torch.NewModel(spec, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := torch.NewSGD(m, 0.9, 0, false)
		defer o.Close()
		r := rand.New(rand.NewPCG(seed, 1))
		for range steps {
			x := make([]float32, 8*64)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			trainOn(t, &torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o}, Coefs: torch.Coefs{HardCE: 1}, LR: 0.1},
				torch.Input{X: x, N: 8, C: 1, H: 8, W: 8, Y: []int64{0, 1, 2, 3, 0, 1, 2, 3}})
		}
		return m
	}
	ema, m := trained(1, 5), trained(2, 9)
	defer ema.Close()
	defer m.Close()
	writeState(t, filepath.Join(dir, "e0.safetensors"), ema)
	writeState(t, filepath.Join(dir, "m.safetensors"), m)
	const decay = 0.9
	for range 2 {
		if err := ema.UpdateEMA(m, decay); err != nil {
			t.Fatal(err)
		}
	}
	writeState(t, filepath.Join(dir, "e1.safetensors"), ema)
	out := py.Run(loadST+`
import sys
d, decay = sys.argv[1], float(sys.argv[2])
e, m, want = load(d + "/e0.safetensors"), load(d + "/m.safetensors"), load(d + "/e1.safetensors")
with torch.no_grad():
    for _ in range(2):
        for k in e:  # timm ModelEmaV2._update with update_fn = decay * e + (1 - decay) * m
            e[k].copy_(decay * e[k] + (1. - decay) * m[k])
bad = [k for k in e if not torch.equal(e[k], want[k])]
print("ok %d %d" % (len(e), int(e["bn1.num_batches_tracked"])) if not bad else "differ: " + ", ".join(bad))
`, dir, fmt.Sprint(decay))
	f := strings.Fields(out)
	if len(f) != 3 || f[0] != "ok" {
		t.Fatalf("EMA differs from ModelEmaV2's: %s", out)
	}
	t.Logf("%s tensors bit-identical to ModelEmaV2's (num_batches_tracked %s)", f[1], f[2])
	if err := ema.UpdateEMA(m, 1.5); err == nil {
		t.Error("decay 1.5 accepted")
	}
	other, _ := torch.NewModel(mlp32(t), "cpu")
	defer other.Close()
	if err := ema.UpdateEMA(other, 0.9); err == nil {
		t.Error("EMA of another architecture accepted")
	}
}
