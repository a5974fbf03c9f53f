//go:build cgo

package shimloss

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lcl-project/lcl/internal/lossref"
	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/trainer/torch"
)

// dense is the G×C membership and C×G weights the trainer makes of groups.
func dense(g *sdk.Groups, c int) (m, w []float32) {
	n := len(g.Members)
	m, w = make([]float32, n*c), make([]float32, c*n)
	for gi, cs := range g.Members {
		for _, k := range cs {
			m[gi*c+k] = 1
		}
	}
	for _, e := range g.Weights {
		w[e.Class*n+e.Group] = float32(e.W)
	}
	return m, w
}

// closeTo fails unless got equals want within tol relative to max(1, |want|).
func closeTo(t *testing.T, what string, got, want float64, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*max(1, math.Abs(want)) {
		t.Fatalf("%s = %.9g, want %.9g (tolerance %g)", what, got, want, tol)
	}
}

// TestGroupTermWithIdentityIsSoftCE: with one group per class (M = I) and
// W = T, the group term −Σ_g W[y,g]·log (p·Mᵀ)_g is the soft-target
// cross-entropy against T, value and gradient.
func TestGroupTermWithIdentityIsSoftCE(t *testing.T) {
	const n, c = 6, 5
	r := rand.New(rand.NewPCG(3, 4))
	z := lossref.Normal32(r, n*c)
	y := []int64{0, 4, 2, 2, 1, 3}
	T := lossref.NearbyTargets(c)
	eye := make([]float32, c*c)
	for i := range c {
		eye[i*c+i] = 1
	}
	w := []float32{1, 0.5, 2, 0, 1, 1}
	soft, gs, err := Loss(Input{Logits: z, N: n, C: c, Y: y, Targets: T, Weights: w, Coefs: torch.Coefs{SoftCE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	group, gg, err := Loss(Input{Logits: z, N: n, C: c, Y: y, Weights: w, Coefs: torch.Coefs{Group: 1},
		Groups: c, GroupMembers: eye, GroupWeights: T})
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "group loss", float64(group), float64(soft), 1e-6)
	for i := range gs {
		closeTo(t, "gradient", float64(gg[i]), float64(gs[i]), 1e-6)
	}
}

// hxeTree is a small hierarchy of uneven depth and a node of three
// children, as MBM's code sees a tree: every node but the root with its
// parent (−1 for the root); nodes 0..5 are the classes.
//
//	root(9) ─ animal(8) ─ mammal(6) ─ {dog 0, cat 1}
//	        │           └ bird 2
//	        ├ vehicle(7) ─ {car 3, bike 4}
//	        └ rock 5
var hxeTree = struct {
	parent  []int
	heights [][]float64
}{
	parent: []int{6, 6, 8, 7, 7, 9, 8, 9, 9, -1},
	// LCA heights read off the tree (longest path down to a leaf).
	heights: [][]float64{
		{0, 1, 2, 3, 3, 3},
		{1, 0, 2, 3, 3, 3},
		{2, 2, 0, 3, 3, 3},
		{3, 3, 3, 0, 1, 3},
		{3, 3, 3, 1, 0, 3},
		{3, 3, 3, 3, 3, 0},
	},
}

// hxeLinkage is hxe's tree of hxeTree, made as a run makes it: the
// linkage of its LCA-height similarity s = 1 − h/3.
func hxeLinkage(t *testing.T) *strategy.Tree {
	t.Helper()
	c := len(hxeTree.heights)
	sim := make([]float32, c*c)
	for i, row := range hxeTree.heights {
		for j, h := range row {
			sim[i*c+j] = float32(1 - h/3)
		}
	}
	tree, err := strategy.LinkageTree(&sdk.Matrix{Rows: c, Cols: c, Data: sim}, c)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// hxeReference is MBM's HierarchicalCrossEntropyLoss
// (fiveai/making-better-mistakes, better_mistakes/model/losses.py) written
// again from its definition on a parent list, with the exponential
// weighting of trees.get_exponential_weighting (exp(−α·depth) over every
// node, root included, normalised to sum to 1): the mean over the batch of
// Σ_edges λ(lower)·(−log(p(lower)/p(upper))), and its gradient by autograd.
const hxeReference = `
import json, sys, torch
a = json.loads(sys.argv[1])
parent, alpha = a["parent"], a["alpha"]
depth = {}
def d(v):
    if v not in depth:
        depth[v] = 0 if parent[v] < 0 else d(parent[v]) + 1
    return depth[v]
lam = {v: torch.exp(torch.tensor(-alpha * d(v), dtype=torch.float64)) for v in range(len(parent))}
total = sum(lam.values())
lam = {v: x / total for v, x in lam.items()}
C = a["classes"]
def path(c):
    out = [c]
    while parent[out[-1]] >= 0:
        out.append(parent[out[-1]])
    return out
members = {v: [c for c in range(C) if v in path(c)] for v in range(len(parent))}
z = torch.tensor(a["logits"], dtype=torch.float64).reshape(-1, C).requires_grad_(True)
p = torch.softmax(z, 1)
losses = []
for i, y in enumerate(a["labels"]):
    pth = path(y)
    l = 0
    for lower, upper in zip(pth[:-1], pth[1:]):
        num = p[i, members[lower]].sum()
        den = p[i, members[upper]].sum()
        l = l - lam[lower] * torch.log(num / den)
    losses.append(l)
loss = torch.stack(losses).mean()
loss.backward()
print(json.dumps({"loss": loss.item(), "grad": z.grad.reshape(-1).tolist()}))
`

// TestHXEMatchesPyTorch: the engine's group term with hxe's groups (made
// from the tree's LCA-height matrix by the linkage) equals MBM's loss on
// the tree itself, value and gradient, in float32 to 1e-5.
func TestHXEMatchesPyTorch(t *testing.T) {
	py := testdep.PythonModules(t, "torch")
	const c, n = 6, 12
	tree := hxeLinkage(t)
	r := rand.New(rand.NewPCG(5, 6))
	z := lossref.Normal32(r, n*c)
	for i := range z {
		z[i] *= 3
	}
	y := make([]int64, n)
	for i := range y {
		y[i] = int64(i % c)
	}
	for _, alpha := range []float64{0.1, 0.5, 0} {
		groups := tree.HXEGroups(alpha)
		m, w := dense(groups, c)
		got, grad, err := Loss(Input{Logits: z, N: n, C: c, Y: y, Coefs: torch.Coefs{Group: 1},
			Groups: len(groups.Members), GroupMembers: m, GroupWeights: w})
		if err != nil {
			t.Fatal(err)
		}
		arg, _ := json.Marshal(map[string]any{"parent": hxeTree.parent, "alpha": alpha, "classes": c, "logits": z, "labels": y})
		var ref struct {
			Loss float64
			Grad []float64
		}
		if err := json.Unmarshal([]byte(py.Run(hxeReference, string(arg))), &ref); err != nil {
			t.Fatal(err)
		}
		closeTo(t, "HXE loss", float64(got), ref.Loss, 1e-5)
		for i := range grad {
			closeTo(t, "HXE gradient", float64(grad[i]), ref.Grad[i], 1e-5)
		}
	}
}

// TestHXEAlphaZeroIsCrossEntropy: with α = 0 every λ is 1/N over the
// tree's N nodes, and hxe's plan (the group term weighted N) is the
// one-hot cross-entropy, value and gradient: the path's terms telescope.
func TestHXEAlphaZeroIsCrossEntropy(t *testing.T) {
	const c, n = 6, 9
	tree := hxeLinkage(t)
	groups := tree.HXEGroups(0)
	m, w := dense(groups, c)
	r := rand.New(rand.NewPCG(7, 8))
	z := lossref.Normal32(r, n*c)
	y := []int64{0, 1, 2, 3, 4, 5, 0, 2, 5}
	ce, gce, err := Loss(Input{Logits: z, N: n, C: c, Y: y, Coefs: torch.Coefs{HardCE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	hxe, ghxe, err := Loss(Input{Logits: z, N: n, C: c, Y: y, Coefs: torch.Coefs{Group: float64(len(tree.Parent))},
		Groups: len(groups.Members), GroupMembers: m, GroupWeights: w})
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "HXE at α = 0", float64(hxe), float64(ce), 1e-6)
	for i := range gce {
		closeTo(t, "gradient", float64(ghxe[i]), float64(gce[i]), 1e-6)
	}
}
