package strategy

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/similarity"
)

// mbmTaxonomy is a small tree of uneven depth, one "child parent" edge a
// line (similarity's edge-list format):
//
//	root ─ animal ─ mammal ─ {dog, cat}
//	     │        └ bird
//	     ├ vehicle ─ {car, bike}
//	     └ rock
//
// Heights (longest path down to a leaf): the leaves 0, mammal 1, vehicle 1,
// animal 2, root 3.
const mbmTaxonomy = "animal root\nvehicle root\nrock root\nmammal animal\nbird animal\ndog mammal\ncat mammal\ncar vehicle\nbike vehicle\n"

// mbmHeights are the LCA heights of the leaves dog, cat, bird, car, bike,
// rock, read off the tree by hand.
var mbmHeights = [][]float64{
	//    dog cat bird car bike rock
	/* dog  */ {0, 1, 2, 3, 3, 3}, // with cat: mammal; with bird: animal; else root
	/* cat  */ {1, 0, 2, 3, 3, 3},
	/* bird */ {2, 2, 0, 3, 3, 3},
	/* car  */ {3, 3, 3, 0, 1, 3}, // with bike: vehicle
	/* bike */ {3, 3, 3, 1, 0, 3},
	/* rock */ {3, 3, 3, 3, 3, 0},
}

var mbmLeaves = []string{"dog", "cat", "bird", "car", "bike", "rock"}

// mbmByHand is the paper's definition written out: D = the largest LCA
// height over the classes' pairs, y_c[j] = exp(−β·h(c,j)/D) / Σ_k exp(−β·h(c,k)/D).
func mbmByHand(h [][]float64, beta float64) [][]float64 {
	d := 0.0
	for _, r := range h {
		for _, x := range r {
			d = max(d, x)
		}
	}
	out := make([][]float64, len(h))
	for c, r := range h {
		sum := 0.0
		for _, x := range r {
			sum += math.Exp(-beta * x / d)
		}
		for _, x := range r {
			out[c] = append(out[c], math.Exp(-beta*x/d)/sum)
		}
	}
	return out
}

// subHeights keeps the rows and columns of idx.
func subHeights(h [][]float64, idx []int) [][]float64 {
	out := make([][]float64, len(idx))
	for a, i := range idx {
		for _, j := range idx {
			out[a] = append(out[a], h[i][j])
		}
	}
	return out
}

// lcaHeightMatrix is the lca source's height form on mbmTaxonomy for the
// given leaves, as lcl train would find it in the store.
func lcaHeightMatrix(t *testing.T, leaves []string) *sdk.Matrix {
	t.Helper()
	graph := filepath.Join(t.TempDir(), "taxonomy.txt")
	if err := os.WriteFile(graph, []byte(mbmTaxonomy), 0o644); err != nil {
		t.Fatal(err)
	}
	set := &labels.Set{Name: "toy"}
	for _, l := range leaves {
		set.Classes = append(set.Classes, labels.Class{ID: l, Name: l})
	}
	res, err := similarity.Compute(context.Background(), similarity.LCA{}, set, map[string]string{"graph": graph, "form": similarity.FormHeight})
	if err != nil {
		t.Fatal(err)
	}
	return &sdk.Matrix{Rows: res.N(), Cols: res.N(), Data: res.Data}
}

// mbmPlan begins mbm-soft on sim and returns its plan of epoch e.
func mbmPlan(t *testing.T, sim *sdk.Matrix, params map[string]string, e int) (*sdk.Plan, error) {
	t.Helper()
	st, err := beginToy("mbm-soft", sim, sim.Rows, params)
	if err != nil {
		return nil, err
	}
	return st.Plan(context.Background(), sdk.PlanAt{Epoch: e})
}

// checkTargets compares a plan's targets with want. The similarity is
// float32 (1 − h/H rounded once), so d/D carries a relative error of a few
// 1e-8, which β = 30 turns into about 1e-6 of a target at most.
func checkTargets(t *testing.T, p *sdk.Plan, want [][]float64, what string) {
	t.Helper()
	if err := sdk.ValidatePlan(p, len(want), len(want), 1); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if p.Coefs != (sdk.Coefs{SoftCE: 1}) {
		t.Fatalf("%s: coefficients %+v, want soft CE only", what, p.Coefs)
	}
	for i, row := range want {
		got := p.Targets.Row(i)
		for j, w := range row {
			if math.Abs(float64(got[j])-w) > 2e-6 {
				t.Fatalf("%s: y[%d][%d] = %.9g, want %.9g (row %v)", what, i, j, got[j], w, got)
			}
		}
	}
}

// TestMBMSoftTargetsByHand: on the lca source's height form the plan is
// the paper's definition over the LCA heights read off the tree by hand,
// normalised by the largest height among the label set's pairs — 3 for all
// six leaves, 2 for dog, cat and bird, whose graph (still rooted at root,
// H = 3) reaches no higher than animal for them.
func TestMBMSoftTargetsByHand(t *testing.T) {
	all := lcaHeightMatrix(t, mbmLeaves)
	animals := lcaHeightMatrix(t, mbmLeaves[:3])
	for _, tc := range []struct {
		name   string
		sim    *sdk.Matrix
		params map[string]string
		want   [][]float64
	}{
		{"six leaves, default β = 10", all, nil, mbmByHand(mbmHeights, 10)},
		{"six leaves, β = 4", all, map[string]string{"beta": "4"}, mbmByHand(mbmHeights, 4)},
		{"six leaves, β = 30", all, map[string]string{"beta": "30"}, mbmByHand(mbmHeights, 30)},
		{"animals, max height 2", animals, nil, mbmByHand(subHeights(mbmHeights, []int{0, 1, 2}), 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for e := range 3 { // the same targets every epoch
				p, err := mbmPlan(t, tc.sim, tc.params, e)
				if err != nil {
					t.Fatal(err)
				}
				checkTargets(t, p, tc.want, tc.name)
			}
		})
	}
	// Two numbers of the first row worked out: dog's row at β = 10 over
	// heights 0, 1, 2, 3, 3, 3 (D = 3) is proportional to 1, e^(−10/3),
	// e^(−20/3), e^(−10) ×3.
	den := 1 + math.Exp(-10./3) + math.Exp(-20./3) + 3*math.Exp(-10)
	p, _ := mbmPlan(t, all, nil, 0)
	if got := float64(p.Targets.At(0, 0)); math.Abs(got-1/den) > 1e-7 {
		t.Errorf("y_dog[dog] = %.9g, want 1/%.9g", got, den)
	}
	if got := float64(p.Targets.At(0, 1)); math.Abs(got-math.Exp(-10./3)/den) > 1e-7 {
		t.Errorf("y_dog[cat] = %.9g, want e^(−10/3)/%.9g", got, den)
	}
}

// TestMBMSoftAnySimilarity: with another source d = 1 − s, normalised by
// its largest value the same way (the diagonal included, as MBM's max).
func TestMBMSoftAnySimilarity(t *testing.T) {
	sim := simMatrix([][]float64{
		{1, 0.8, 0.2},
		{0.8, 1, 0.5},
		{0.2, 0.5, 1},
	})
	// d = [[0, .2, .8], [.2, 0, .5], [.8, .5, 0]], D = 0.8: d/D = [[0, 1/4, 1], [1/4, 0, 5/8], [1, 5/8, 0]].
	scaled := [][]float64{{0, 0.25, 1}, {0.25, 0, 0.625}, {1, 0.625, 0}}
	p, err := mbmPlan(t, sim, map[string]string{"beta": "2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkTargets(t, p, mbmByHand(scaled, 2), "three classes")
}

// TestMBMSoftAgreesWithNetworkx: networkx finds the same LCA heights as
// the hand table, and MBM's make_all_soft_labels, transcribed in NumPy
// (distances over max, exp, normalised over dim 0, the target's column),
// gives the plan's targets from them.
func TestMBMSoftAgreesWithNetworkx(t *testing.T) {
	py := testdep.PythonModules(t, "networkx", "numpy")
	script := `
import json, sys
import networkx as nx, numpy as np
g = nx.DiGraph()
for line in sys.argv[1].strip().splitlines():
    child, parent = line.split()
    g.add_edge(parent, child)
height = {}
for v in reversed(list(nx.topological_sort(g))):
    height[v] = max((height[c] + 1 for c in g.successors(v)), default=0)
leaves = sys.argv[2].split(",")
h = np.array([[height[nx.lowest_common_ancestor(g, a, b)] for b in leaves] for a in leaves], dtype=float)
out = {"heights": h.tolist(), "soft": {}}
for beta in (4.0, 10.0):
    # making-better-mistakes, better_mistakes/model/labels.py
    d = np.array([[h[c1, c2] for c1 in range(len(leaves))] for c2 in range(len(leaves))])
    d /= d.max()
    soft = np.exp(-beta * d) / np.exp(-beta * d).sum(axis=0)
    out["soft"][str(beta)] = [soft[:, t].tolist() for t in range(len(leaves))]
print(json.dumps(out))
`
	var ref struct {
		Heights [][]float64
		Soft    map[string][][]float64
	}
	if err := json.Unmarshal([]byte(py.Run(script, mbmTaxonomy, strings.Join(mbmLeaves, ","))), &ref); err != nil {
		t.Fatal(err)
	}
	for i := range mbmHeights {
		for j := range mbmHeights[i] {
			if ref.Heights[i][j] != mbmHeights[i][j] {
				t.Fatalf("networkx LCA height of (%s, %s) = %v, the hand table says %v", mbmLeaves[i], mbmLeaves[j], ref.Heights[i][j], mbmHeights[i][j])
			}
		}
	}
	sim := lcaHeightMatrix(t, mbmLeaves)
	for _, beta := range []string{"4", "10"} {
		p, err := mbmPlan(t, sim, map[string]string{"beta": beta}, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkTargets(t, p, ref.Soft[beta+".0"], "networkx, β = "+beta)
	}
}

func TestMBMSoftRefuses(t *testing.T) {
	ok := simMatrix([][]float64{{1, 0.5}, {0.5, 1}})
	for _, tc := range []struct {
		name   string
		sim    *sdk.Matrix
		params map[string]string
		want   string
	}{
		{"β = 0", ok, map[string]string{"beta": "0"}, "beta = 0, want a finite value > 0"},
		{"β < 0", ok, map[string]string{"beta": "-1"}, "beta = -1, want a finite value > 0"},
		{"β = Inf", ok, map[string]string{"beta": "Inf"}, `parameter "beta": "Inf" is not a finite number`}, // sdk.ParseParams, before Begin
		{"β = NaN", ok, map[string]string{"beta": "NaN"}, `parameter "beta": "NaN" is not a finite number`},
		{"misspelt", ok, map[string]string{"bta": "1"}, `unknown parameter "bta"`},
		{"no similarity", nil, nil, "mbm-soft needs a similarity matrix"},
		{"above 1", simMatrix([][]float64{{1, 1.5}, {0.5, 1}}), nil, "s[0][1] = 1.5 is above 1"},
		{"all 1", simMatrix([][]float64{{1, 1}, {1, 1}}), nil, "every similarity is 1"},
		{"NaN", simMatrix([][]float64{{1, math.NaN()}, {0.5, 1}}), nil, "NaN"},
		{"not square", simMatrix([][]float64{{1, 0.5, 0}, {0.5, 1, 0}}), nil, "similarity matrix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := New("mbm-soft")
			_, err := st.Begin(context.Background(), sdk.Run{Classes: []sdk.Class{{Index: 0}, {Index: 1}}, Similarity: tc.sim,
				NumExamples: 2, Labels: []int{0, 1}, Epochs: 1, Params: tc.params})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A large β (hard labels) must not underflow a row to 0/0: the row's own
// class keeps all the mass.
func TestMBMSoftLargeBeta(t *testing.T) {
	sim := simMatrix([][]float64{{0.9, 0.1}, {0.1, 0.9}}) // the diagonal is a distance 0.1 too
	p, err := mbmPlan(t, sim, map[string]string{"beta": "1e6"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkTargets(t, p, [][]float64{{1, 0}, {0, 1}}, "β = 1e6")
}
