package strategy

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// beginToy begins the built-in strategy name on a toy run of c classes,
// one example each, 3 epochs, with similarity sim and params.
func beginToy(name string, sim *sdk.Matrix, c int, params map[string]string) (sdk.Strategy, error) {
	classes := make([]sdk.Class, c)
	labels := make([]int, c)
	for i := range classes {
		classes[i] = sdk.Class{Index: i, ID: strconv.Itoa(i)}
		labels[i] = i
	}
	st, _ := New(name)
	_, err := st.Begin(context.Background(), sdk.Run{Classes: classes, Similarity: sim, NumExamples: c, Labels: labels, Epochs: 3, Params: params})
	return st, err
}

// hxeBegin begins hxe on sim with params and returns it.
func hxeBegin(sim *sdk.Matrix, c int, params map[string]string) (sdk.Strategy, error) {
	return beginToy("hxe", sim, c, params)
}

// nodeSets are a tree's nodes as their member sets with their depths,
// "members@depth", sorted: a tree's shape without its numbering.
func nodeSets(t *Tree) []string {
	var out []string
	for v, m := range t.Members {
		var s []string
		for _, c := range m {
			s = append(s, strconv.Itoa(c))
		}
		out = append(out, strings.Join(s, ",")+"@"+strconv.Itoa(t.Depth[v]))
	}
	slices.Sort(out)
	return out
}

// TestLinkageTreeOfLCAHeights: the lca source's height matrix of
// mbmTaxonomy gives the taxonomy back (mammal and vehicle at 1, animal at
// 2, root at 3 with three children), numbered leaves first and every
// parent after its children.
func TestLinkageTreeOfLCAHeights(t *testing.T) {
	tree, err := LinkageTree(lcaHeightMatrix(t, mbmLeaves), len(mbmLeaves))
	if err != nil {
		t.Fatal(err)
	}
	// dog 0, cat 1, bird 2, car 3, bike 4, rock 5
	want := []string{"0,1,2,3,4,5@0", "0,1,2@1", "3,4@1", "5@1", "0,1@2", "2@2", "3@2", "4@2", "0@3", "1@3"}
	slices.Sort(want)
	if got := nodeSets(tree); !slices.Equal(got, want) {
		t.Fatalf("tree %v, want %v", got, want)
	}
	for v, p := range tree.Parent {
		if p >= 0 && p <= v {
			t.Fatalf("node %d's parent %d comes before it", v, p)
		}
	}
	if root := len(tree.Parent) - 1; tree.Parent[root] != -1 || slices.Contains(tree.Parent[:root], -1) {
		t.Fatalf("parents %v: want one root, the last node", tree.Parent)
	}
}

// TestLinkageTreeJoinsTiesInOneNode: classes that meet at one distance are
// children of one node, not a cascade of pairs; a chain of distinct
// distances gives a deeper tree.
func TestLinkageTreeJoinsTiesInOneNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		sim  [][]float32
		want []string
	}{
		{"all alike", [][]float32{{1, .2, .2, .2}, {.2, 1, .2, .2}, {.2, .2, 1, .2}, {.2, .2, .2, 1}},
			[]string{"0,1,2,3@0", "0@1", "1@1", "2@1", "3@1"}},
		{"chain", [][]float32{{1, .9, .5, .1}, {.9, 1, .5, .1}, {.5, .5, 1, .1}, {.1, .1, .1, 1}},
			[]string{"0,1,2,3@0", "0,1,2@1", "3@1", "0,1@2", "2@2", "0@3", "1@3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := len(tc.sim)
			m := &sdk.Matrix{Rows: c, Cols: c}
			for _, r := range tc.sim {
				m.Data = append(m.Data, r...)
			}
			tree, err := LinkageTree(m, c)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if got := nodeSets(tree); !slices.Equal(got, want) {
				t.Fatalf("tree %v, want %v", got, want)
			}
		})
	}
}

// TestHXEPlanByHand: the plan's weights are MBM's edge weights along each
// class's path, from the depths read off mbmTaxonomy by hand: λ(C) =
// exp(−α·depth)/Z over the tree's ten nodes, W[y,leaf] = λ(leaf), W[y,C] =
// λ(C) − λ(child of C on the path) above it, nothing for the root.
func TestHXEPlanByHand(t *testing.T) {
	const alpha = 0.3
	st, err := hxeBegin(lcaHeightMatrix(t, mbmLeaves), 6, map[string]string{"alpha": "0.3"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Plan(context.Background(), sdk.PlanAt{Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := sdk.ValidatePlan(p, 6, 6, 1); err != nil {
		t.Fatal(err)
	}
	// The group term alone, times the tree's 10 nodes (MBM's loss on
	// cross-entropy's scale).
	if p.Coefs != (sdk.Coefs{Group: 10}) || p.Targets != nil {
		t.Fatalf("coefficients %+v, targets %v: want the group term alone, weighted 10", p.Coefs, p.Targets)
	}
	// depths: root 0; animal, vehicle, rock 1; mammal, bird, car, bike 2; dog, cat 3
	z := 0.0
	for _, d := range []int{0, 1, 1, 1, 2, 2, 2, 2, 3, 3} {
		z += math.Exp(-alpha * float64(d))
	}
	lam := func(d int) float64 { return math.Exp(-alpha*float64(d)) / z }
	// Per class, its weights keyed by the group's member set.
	want := map[int]map[string]float64{
		0: {"0": lam(3), "0,1": lam(2) - lam(3), "0,1,2": lam(1) - lam(2)},
		1: {"1": lam(3), "0,1": lam(2) - lam(3), "0,1,2": lam(1) - lam(2)},
		2: {"2": lam(2), "0,1,2": lam(1) - lam(2)},
		3: {"3": lam(2), "3,4": lam(1) - lam(2)},
		4: {"4": lam(2), "3,4": lam(1) - lam(2)},
		5: {"5": lam(1)},
	}
	got := map[int]map[string]float64{}
	for _, w := range p.Groups.Weights {
		var s []string
		for _, c := range p.Groups.Members[w.Group] {
			s = append(s, strconv.Itoa(c))
		}
		if got[w.Class] == nil {
			got[w.Class] = map[string]float64{}
		}
		got[w.Class][strings.Join(s, ",")] = w.W
	}
	for y, ws := range want {
		if len(got[y]) != len(ws) {
			t.Fatalf("class %d: weights %v, want %v", y, got[y], ws)
		}
		for g, w := range ws {
			if math.Abs(got[y][g]-w) > 1e-12 {
				t.Fatalf("class %d, group {%s}: weight %.12g, want %.12g", y, g, got[y][g], w)
			}
		}
	}
	again, _ := st.Plan(context.Background(), sdk.PlanAt{Epoch: 0})
	if again.Groups != p.Groups {
		t.Fatal("a later plan made its groups again: want the same groups every epoch")
	}
}

func TestHXERefuses(t *testing.T) {
	sim := lcaHeightMatrix(t, mbmLeaves)
	for _, tc := range []struct {
		name   string
		sim    *sdk.Matrix
		c      int
		params map[string]string
		want   string
	}{
		{"negative alpha", sim, 6, map[string]string{"alpha": "-0.1"}, "alpha = -0.1"},
		{"infinite alpha", sim, 6, map[string]string{"alpha": "+Inf"}, `parameter "alpha": "+Inf" is not a finite number`}, // sdk.ParseParams, before Begin
		{"no similarity", nil, 6, nil, "needs a similarity matrix"},
		{"one class", &sdk.Matrix{Rows: 1, Cols: 1, Data: []float32{1}}, 1, nil, "at least 2 classes"},
		{"NaN similarity", &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{1, float32(math.NaN()), 0, 1}}, 2, nil, "want a finite value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hxeBegin(tc.sim, tc.c, tc.params)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// An alpha whose weights underflow is refused with the usable range: with
// alpha=1e6 every weight but the root's was 0 and hxe trained on a loss
// of 0 without a word (issue 48, item 7). The largest alpha accepted keeps
// every weight a normal float32 (the trainer's type), and is accepted.
func TestHXERefusesAnAlphaWhoseWeightsUnderflow(t *testing.T) {
	sim := lcaHeightMatrix(t, mbmLeaves)
	tree, err := LinkageTree(sim, len(mbmLeaves))
	if err != nil {
		t.Fatal(err)
	}
	most := tree.HXEMaxAlpha()
	for alpha, shown := range map[string]string{"1e6": "1e+06", "40": "40"} {
		_, err := hxeBegin(sim, 6, map[string]string{"alpha": alpha})
		if err == nil || !strings.Contains(err.Error(), "alpha = "+shown+": the weights of the deepest classes (depth 3 of this hierarchy) underflow to 0") ||
			!strings.Contains(err.Error(), "want 0 ≤ alpha ≤ "+strconv.FormatFloat(math.Floor(most*100)/100, 'f', 2, 64)) {
			t.Errorf("--param alpha=%s: %v; want it refused, naming the usable range 0 to %.2f", alpha, err, most)
		}
	}
	for _, alpha := range []float64{0, 0.6, math.Floor(most*100) / 100} {
		if _, err := hxeBegin(sim, 6, map[string]string{"alpha": strconv.FormatFloat(alpha, 'g', -1, 64)}); err != nil {
			t.Errorf("--param alpha=%g (usable up to %g): %v", alpha, most, err)
		}
		for _, w := range tree.HXEGroups(alpha).Weights {
			if w.Group == w.Class && float32(w.W) < float32(minHXEWeight) {
				t.Errorf("alpha %g: class %d's own weight %g underflows float32", alpha, w.Class, w.W)
			}
		}
	}
	if most < 20 || most > 30 { // depth 3, log(2^126)/3 ≈ 29.1, less the normaliser
		t.Errorf("HXEMaxAlpha of a 3-deep tree = %g, want about 29", most)
	}
}
