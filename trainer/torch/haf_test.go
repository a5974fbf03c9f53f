//go:build cgo

package torch

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lcl-project/lcl/internal/lossref"
	"github.com/lcl-project/lcl/internal/testdep"
)

// hafRef is HAF's loss (Garg, Sani, Anand, ECCV 2022; 07Agarg/HAF:
// util/arch/custom_resnet18.py, ResNet18_ours_l7_cejsd_wtconst_dissim.forward,
// util/loss_function/jsd.py, MBM/better_mistakes/util/dissimilar_pairs.py)
// written from their code for features f = x·W1ᵀ + b1, with lcl's two
// stated deviations: the fine head is the plain linear layer (W0, b0; their
// normalised rows enter the geometric term only, as lcl's do), and the
// pairs of the dissimilarity term are consecutive examples of a slice with
// different groups (theirs: shuffled, cycled and zero-padded to 256). The
// batch is mixed with itself flipped by lam (mixup: every label term
// blended), and the dissimilarity term of each slice (a data-parallel
// rank's examples) weighs its share of the batch. It prints the loss and
// every parameter's gradient.
const hafRef = `
import json, sys, torch
import torch.nn as nn
import torch.nn.functional as F
d = json.load(open(sys.argv[1]))
t = lambda k: torch.tensor(d[k], dtype=torch.float64)
names = ["fc1.weight", "fc1.bias", "fc.weight", "fc.bias"]
levels = d["levels"]; L = len(levels); C = len(levels[0])
for l in range(1, L + 1): names += ["level_heads.%d.weight" % l, "level_heads.%d.bias" % l]
P = {k: t(k).requires_grad_() for k in names}
x, y, lam = t("x"), torch.tensor(d["y"]), d["lam"]
yb = y.flip(0)
x = lam * x + (1 - lam) * x.flip(0)
n = x.shape[0]

# util/loss_function/jsd.py
def simloss(p, q):
    mix = torch.clamp(0.5 * (p + q), 1e-7, 1).log()
    return 0.5 * (F.kl_div(mix, p, reduction="batchmean") + F.kl_div(mix, q, reduction="batchmean"))
def dissimloss(p, q, margin=3.0):
    mix = torch.clamp(0.5 * (p + q), 1e-7, 1).log()
    clip = torch.zeros(1, dtype=p.dtype)
    kl_p = F.kl_div(mix, p, reduction="none"); kl_q = F.kl_div(mix, q, reduction="none")
    return 0.5 * (torch.max(margin - kl_p.sum(dim=1), clip).mean() + torch.max(margin - kl_q.sum(dim=1), clip).mean())

f = x @ P["fc1.weight"].T + P["fc1.bias"]
fine = f @ P["fc.weight"].T + P["fc.bias"]
ce = lam * F.cross_entropy(fine, y) + (1 - lam) * F.cross_entropy(fine, yb)
ws = [F.normalize(P["fc.weight"], p=2, dim=1)]
outs = [F.softmax(fine, dim=1)]
for l in range(1, L + 1):
    w = F.normalize(P["level_heads.%d.weight" % l], p=2, dim=1)
    ws.append(w)
    outs.append(F.softmax(torch.mm(f, w.t()) + P["level_heads.%d.bias" % l], dim=1))
cos = nn.CosineSimilarity(dim=1, eps=1e-8)
jsd = dis = geo = 0
for l in range(1, L + 1):
    g = levels[l - 1]; G = max(g) + 1
    below = list(range(C)) if l == 1 else levels[l - 2]
    children = [sorted({below[c] for c in range(C) if g[c] == k}) for k in range(G)]
    p_hat = torch.zeros_like(outs[l])
    for k in range(G):
        p_hat[:, k] = torch.sum(outs[l - 1][:, children[k]], dim=1)
    jsd = jsd + simloss(p_hat, outs[l])
    w_hat = torch.zeros_like(ws[l])
    for k in range(G):
        w_hat[k, :] = torch.sum(ws[l - 1][children[k], :], dim=0)
    geo = geo + torch.mean(cos(ws[l], F.normalize(w_hat, p=2, dim=1)))
    if l == L:
        continue  # their dissimilarity skips the coarsest level
    for lo, hi in d["slices"]:
        for labels, wt in ((y, lam), (yb, 1 - lam)):
            gl = [g[c] for c in labels.tolist()]
            pairs = [i for i in range(lo, hi - 1) if gl[i] != gl[i + 1]]
            if pairs:
                a = outs[l][pairs]; b = outs[l][[i + 1 for i in pairs]]
                dis = dis + (hi - lo) / n * wt * dissimloss(a, b)
loss = ce + d["wc"] * jsd + d["wd"] * dis - d["wg"] * geo
loss.backward()
print(json.dumps({"loss": loss.item(), "grad": {k: P[k].grad.flatten().tolist() for k in names}}))
`

// hafLevels are three nested levels of six classes (dog cat bird car bike
// rock): mammal/bird/vehicle/rock, animal/vehicle/rock, animal/other.
var hafLevels = []Level{
	{Groups: 4, Group: []int{0, 0, 1, 2, 2, 3}},
	{Groups: 3, Group: []int{0, 0, 0, 1, 1, 2}},
	{Groups: 2, Group: []int{0, 0, 0, 1, 1, 1}},
}

func hafSpec() Spec {
	return Spec{InC: 1, InH: 2, InW: 3, NumClasses: 6, Features: Seq("", Flatten(), Linear("fc1", 6, 5)),
		Head: Seq("", Linear("fc", 5, 6)), Levels: hafLevels}
}

// hafCase is one step of the reference test: the three weights, the mixing
// weight and the ranks' slices of the batch (one slice: no group).
type hafCase struct {
	name       string
	wc, wd, wg float64
	lam        float64
	split      int // with 2 ranks: rank 0 steps on [0, split)
}

// TestHAFLossMatchesPyTorch trains one SGD step on HAF's loss (HardCE 1 and
// the level coefficients) of a model with three level heads and holds the
// loss and the gradients of every parameter — the features layer, the
// model's own head and each level head — against PyTorch's autograd of
// their loss in float64: the published weights, other weights, mixup, and
// two data-parallel ranks on uneven slices (each rank's pairs its own,
// weighted by its share of the batch).
func TestHAFLossMatchesPyTorch(t *testing.T) {
	py := testdep.PythonModules(t, "torch")
	SetThreads(1)
	const n, in, lr = 8, 6, 0.5
	r := rand.New(rand.NewPCG(11, 2))
	x := lossref.Normal32(r, n*in)
	y := []int64{0, 1, 2, 3, 4, 5, 0, 3}
	for _, tc := range []hafCase{
		{name: "published weights", wc: 1, wd: 1, wg: 1, lam: 1},
		{name: "other weights", wc: 0.5, wd: 2, wg: 0.7, lam: 1},
		{name: "geometric alone", wg: 1, lam: 1},
		{name: "mixup", wc: 1, wd: 1, wg: 1, lam: 0.7},
		{name: "two ranks", wc: 1, wd: 1, wg: 1, lam: 1, split: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ManualSeed(5)
			m0, err := NewModel(hafSpec(), "cpu")
			if err != nil {
				t.Fatal(err)
			}
			defer m0.Close()
			before := stateFloats(t, m0)
			if len(before["level_heads.3.weight"]) != 2*5 {
				t.Fatalf("level head 3: %d weights, want 2×5 (state %v)", len(before["level_heads.3.weight"]), keys(before))
			}
			after, loss := hafStep(t, m0, tc, Input{X: x, N: n, C: 1, H: 2, W: 3, Y: y}, lr)
			ref := hafReference(t, py, tc, before, x, y, n)
			if math.Abs(loss-ref.Loss) > 1e-5*math.Max(1, math.Abs(ref.Loss)) {
				t.Errorf("loss %.7g, PyTorch %.7g", loss, ref.Loss)
			}
			for name, g := range ref.Grad {
				for i, want := range g {
					got := (float64(before[name][i]) - float64(after[name][i])) / lr
					if math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
						t.Errorf("%s gradient[%d] = %.7g, PyTorch %.7g", name, i, got, want)
					}
				}
			}
		})
	}
}

func keys(m map[string][]float32) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// hafStep steps m (or, with tc.split, two ranks starting from m's weights)
// once and returns the weights after it and the step's loss.
func hafStep(t *testing.T, m *Model, tc hafCase, in Input, lr float64) (map[string][]float32, float64) {
	t.Helper()
	co := Coefs{HardCE: 1, Consistency: tc.wc, Dissimilar: tc.wd, Geometric: tc.wg}
	var mix *Mix
	if tc.lam < 1 {
		mix = &Mix{Lam: tc.lam}
	}
	if tc.split == 0 {
		o, err := NewSGD(m, 0, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		res, err := trainStep(newEngine(t), &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: co, LR: lr, Mix: mix}, in)
		if err != nil {
			t.Fatal(err)
		}
		return stateFloats(t, m), float64(res.Loss[0])
	}
	init, _ := m.State().Copy()
	var mu sync.Mutex
	states, losses := map[int]map[string][]float32{}, map[int]float64{}
	errs := ranks(t, 2, func(g *Group) error {
		mr, err := NewModel(m.Spec(), "cpu")
		if err != nil {
			return err
		}
		defer mr.Close()
		st := map[string]Named{}
		for _, s := range init {
			st[s.Name] = s
		}
		if err := mr.State().Load(st); err != nil {
			return err
		}
		o, _ := NewSGD(mr, 0, 0, false)
		defer o.Close()
		e, err := NewEngine("cpu", EngineOptions{})
		if err != nil {
			return err
		}
		defer e.Close()
		lo, hi := 0, tc.split
		if g.Rank() == 1 {
			lo, hi = tc.split, in.N
		}
		d := in.C * in.H * in.W
		res, err := trainStep(e, &Step{Models: []*Model{mr}, Optims: []*Optimizer{o}, Coefs: co, LR: lr, Group: g},
			Input{X: in.X[lo*d : hi*d], N: hi - lo, C: in.C, H: in.H, W: in.W, Y: in.Y[lo:hi]})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		states[g.Rank()], losses[g.Rank()] = stateFloats(t, mr), float64(res.Loss[0])
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for name, v := range states[0] {
		for i := range v {
			if v[i] != states[1][name][i] {
				t.Fatalf("%s[%d]: rank 0 has %g, rank 1 %g", name, i, v[i], states[1][name][i])
			}
		}
	}
	return states[0], losses[0]
}

type hafGrads struct {
	Loss float64
	Grad map[string][]float64
}

func hafReference(t *testing.T, py *testdep.Py, tc hafCase, before map[string][]float32, x []float32, y []int64, n int) hafGrads {
	t.Helper()
	var levels [][]int
	for _, l := range hafLevels {
		levels = append(levels, l.Group)
	}
	slices := [][2]int{{0, n}}
	if tc.split > 0 {
		slices = [][2]int{{0, tc.split}, {tc.split, n}}
	}
	arg := map[string]any{"x": lossref.Rows(x, n, 6), "y": y, "levels": levels, "lam": tc.lam, "slices": slices,
		"wc": tc.wc, "wd": tc.wd, "wg": tc.wg}
	for name, v := range before {
		switch {
		case strings.HasSuffix(name, ".bias"):
			arg[name] = lossref.Float64s(v)
		default:
			cols := 6
			if name != "fc1.weight" {
				cols = 5
			}
			arg[name] = lossref.Rows(v, len(v)/cols, cols)
		}
	}
	path := filepath.Join(t.TempDir(), "in.json")
	b, _ := json.Marshal(arg)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var ref hafGrads
	if err := json.Unmarshal([]byte(py.Run(hafRef, path)), &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Grad) != 4+2*len(hafLevels) {
		t.Fatalf("reference gradients of %d tensors", len(ref.Grad))
	}
	return ref
}

// Level heads: refused unless nested and in range (the model unchanged);
// the level terms need them, and the geometric term a head of one linear
// layer; the heads count as the model's parameters.
func TestLevelHeadsRefusals(t *testing.T) {
	SetThreads(1)
	for _, tc := range []struct {
		name   string
		levels []Level
		want   string
	}{
		{"not nested", []Level{{Groups: 2, Group: []int{0, 1, 0, 1, 0, 1}}, {Groups: 2, Group: []int{0, 0, 0, 1, 1, 1}}}, "not nested"},
		{"group out of range", []Level{{Groups: 2, Group: []int{0, 0, 2, 1, 1, 1}}}, "in group 2"},
		{"one group", []Level{{Groups: 1, Group: make([]int, 6)}}, "1 groups, want 2 to 6"},
		{"short", []Level{{Groups: 2, Group: []int{0, 1}}}, "for 2 classes, want 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := hafSpec()
			spec.Levels = tc.levels
			m, err := NewModel(spec, "cpu")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				m.Close()
				t.Errorf("%v: %v, want an error with %q", tc.levels, err, tc.want)
			}
		})
	}
	plain := hafSpec()
	plain.Levels = nil
	twoLayer := hafSpec()
	twoLayer.Head = Seq("", Linear("fc0", 5, 5), ReLU(), Linear("fc", 5, 6))
	x := make([]float32, 12)
	for _, tc := range []struct {
		name string
		spec Spec
		co   Coefs
		want string
	}{
		{"no levels", plain, Coefs{HardCE: 1, Consistency: 1}, "without level heads"},
		{"no levels, batch term", plain, Coefs{HardCE: 1, Dissimilar: 1}, "without level heads"},
		{"geometric, two-layer head", twoLayer, Coefs{HardCE: 1, Geometric: 1}, "one linear layer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewModel(tc.spec, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			o, _ := NewSGD(m, 0, 0, false)
			defer o.Close()
			_, err = trainStep(newEngine(t), &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: tc.co, LR: 0.1},
				Input{X: x, N: 2, C: 1, H: 2, W: 3, Y: []int64{0, 4}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: %v, want an error with %q", tc.co, err, tc.want)
			}
		})
	}
	// The heads count as parameters: d·G + G each.
	ManualSeed(1)
	with, err := NewModel(hafSpec(), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer with.Close()
	without, err := NewModel(plain, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer without.Close()
	np1, _ := with.NumParams()
	np0, _ := without.NumParams()
	if want := np0 + int64(5*(4+3+2)+4+3+2); np1 != want {
		t.Errorf("%d parameters with level heads, want %d", np1, want)
	}
}
