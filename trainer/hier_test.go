package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/torch"
)

// hierTaxonomy is a small tree whose leaves are at depths 2 and 3:
//
//	root ─ animal ─ mammal ─ cat, dog
//	     │        └ bird
//	     └ vehicle ─ car
//	              └ boat ─ sailboat, canoe
//
// Heights (longest path down to a leaf): the leaves 0, mammal and boat 1,
// animal and vehicle 2, root 3.
func hierTaxonomy() *labels.Set {
	nodes := []labels.Node{{ID: "root"}, {ID: "animal", Parent: "root"}, {ID: "vehicle", Parent: "root"},
		{ID: "mammal", Parent: "animal"}, {ID: "boat", Parent: "vehicle"}}
	set := &labels.Set{Name: "toy"}
	for i, c := range []struct{ id, parent string }{{"cat", "mammal"}, {"dog", "mammal"}, {"bird", "animal"},
		{"car", "vehicle"}, {"sailboat", "boat"}, {"canoe", "boat"}} {
		nodes = append(nodes, labels.Node{ID: c.id, Parent: c.parent})
		set.Classes = append(set.Classes, labels.Class{Index: i, ID: c.id, Name: c.id})
	}
	set.Hierarchy = nodes
	return set
}

// hierCase: four examples of the taxonomy's classes (cat 0, dog 1, bird 2,
// car 3, sailboat 4, canoe 5) with each one's classes ranked best first.
var hierCase = struct {
	y   []int64
	top []int32
}{
	y: []int64{0, 1, 4, 3},
	top: []int32{
		0, 1, 2, 3, 4, 5, // cat: right
		2, 1, 0, 5, 3, 4, // dog taken for a bird: LCA animal, 2
		5, 3, 4, 0, 1, 2, // sailboat for a canoe: LCA boat, 1
		0, 2, 1, 3, 4, 5, // car for a cat: LCA root, 3
	},
}

// TestHierMetricsByHand: mistake severity and hierarchical distance@k on
// the taxonomy, derived by hand from its LCA heights.
func TestHierMetricsByHand(t *testing.T) {
	h, err := similarity.NewHierarchy(hierTaxonomy(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a, b int
		want float64
	}{{0, 0, 0}, {0, 1, 1}, {0, 2, 2}, {1, 2, 2}, {0, 3, 3}, {2, 5, 3}, {3, 4, 2}, {3, 5, 2}, {4, 5, 1}} {
		if got := h.Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := h.Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%d, %d) = %v, want %v (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
	var s hierSums
	s.add(h, hierCase.y, hierCase.top, 6)
	got := s.metrics(4)
	// Severity: mistakes cost 2, 1, 3: mean 2. @1: (0+2+1+3)/4. @5: the
	// five best cost 0+1+2+3+3, 2+0+1+3+3, 1+2+0+3+3 and 3+3+3+0+2, each
	// over 5. @20 is @6 (six classes): every class, the rows of cat, dog
	// and sailboat sum to 12, car's to 13, each over 6.
	// By height: one mistake each at 1, 2 and 3, none at 0.
	want := HierMetrics{MistakeSeverity: 2, Mistakes: 3, MistakesByHeight: []int64{0, 1, 1, 1}, HDist1: 6.0 / 4, HDist5: (9.0/5*3 + 11.0/5) / 4,
		HDist20: (3*12.0/6 + 13.0/6) / 4}
	if !closeHier(*got, want, 1e-12) {
		t.Errorf("metrics %+v, want %+v", *got, want)
	}
}

// TestHierMetricsEqualNetworkx: the same figures from networkx's
// lowest_common_ancestor and heights computed on its DiGraph of the tree.
func TestHierMetricsEqualNetworkx(t *testing.T) {
	py := testdep.PythonModules(t, "networkx")
	set := hierTaxonomy()
	h, err := similarity.NewHierarchy(set, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var s hierSums
	s.add(h, hierCase.y, hierCase.top, 6)
	got := s.metrics(float64(len(hierCase.y)))
	var edges, classes []string
	for _, n := range set.Hierarchy {
		if n.Parent != "" {
			edges = append(edges, n.Parent+" "+n.ID)
		}
	}
	for _, c := range set.Classes {
		classes = append(classes, c.ID)
	}
	in, _ := json.Marshal(map[string]any{"edges": edges, "classes": classes, "y": hierCase.y, "top": hierCase.top})
	out := py.Run(`
import json, sys
import networkx as nx
d = json.loads(sys.argv[1])
g = nx.DiGraph([e.split() for e in d["edges"]])
height = {}
def h(v):
    if v not in height:
        height[v] = max((h(c) + 1 for c in g.successors(v)), default=0)
    return height[v]
cls, C = d["classes"], len(d["classes"])
def dist(a, b):
    return 0 if a == b else h(nx.lowest_common_ancestor(g, cls[a], cls[b]))
y, top = d["y"], d["top"]
n = len(y)
rows = [top[i*C:(i+1)*C] for i in range(n)]
mis = [dist(y[i], rows[i][0]) for i in range(n) if rows[i][0] != y[i]]
res = {"mistake_severity": sum(mis) / len(mis), "mistakes": len(mis),
       "mistakes_by_height": [mis.count(v) for v in range(max(mis) + 1)]}
for k in (1, 5, 20):
    kk = min(k, C)
    res["hdist%d" % k] = sum(sum(dist(y[i], c) for c in rows[i][:kk]) / kk for i in range(n)) / n
print(json.dumps(res))
`, string(in))
	var want HierMetrics
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatalf("networkx reference %q: %v", out, err)
	}
	if !closeHier(*got, want, 1e-12) {
		t.Errorf("metrics %+v, networkx %+v", *got, want)
	}
}

func closeHier(a, b HierMetrics, tol float64) bool {
	return a.Mistakes == b.Mistakes && slices.Equal(a.MistakesByHeight, b.MistakesByHeight) && math.Abs(a.MistakeSeverity-b.MistakeSeverity) <= tol &&
		math.Abs(a.HDist1-b.HDist1) <= tol && math.Abs(a.HDist5-b.HDist5) <= tol && math.Abs(a.HDist20-b.HDist20) <= tol
}

// TestHierSumsCapK: with fewer than 20 classes (and fewer than 5) the
// distances @5 and @20 are over every class: each @k is the mean over the
// first min(k, C) entries of a row.
func TestHierSumsCapK(t *testing.T) {
	h := matrixCost{c: 3, d: []float64{0, 1, 4, 1, 0, 2, 4, 2, 0}}
	var s hierSums
	s.add(h, []int64{2}, []int32{1, 2, 0}, 3)
	m := s.metrics(1)
	want := HierMetrics{MistakeSeverity: 2, Mistakes: 1, MistakesByHeight: []int64{0, 0, 1}, HDist1: 2, HDist5: 2, HDist20: 2}
	if !closeHier(*m, want, 1e-12) {
		t.Errorf("metrics %+v, want %+v", *m, want)
	}
	if got := fmt.Sprint(hierTopK(3), hierTopK(1000)); got != "3 20" {
		t.Errorf("hierTopK(3), hierTopK(1000) = %s, want 3 20", got)
	}
}

// TestHierSumsHeightBins: mistakes count at their cost rounded to a whole
// height, those of HierHeights−1 and more in the last element, which ends
// at the greatest height with a mistake; without mistakes it is empty.
func TestHierSumsHeightBins(t *testing.T) {
	far := float64(HierHeights + 7)
	h := matrixCost{c: 3, d: []float64{0, 1.4, far, 1.4, 0, 2.6, far, 2.6, 0}}
	for _, tc := range []struct {
		name string
		y    []int64
		top  []int32 // the best class of each example
		want []int64
	}{
		{"right", []int64{0, 1}, []int32{0, 1}, nil},
		{"rounded", []int64{0, 1, 2}, []int32{1, 0, 1}, []int64{0, 2, 0, 1}},
		{"capped", []int64{0, 2, 1}, []int32{2, 0, 2}, func() []int64 {
			w := make([]int64, HierHeights)
			w[3], w[HierHeights-1] = 1, 2 // 2.6 and twice HierHeights+7
			return w
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s hierSums
			s.add(h, tc.y, tc.top, 1)
			if got := s.metrics(float64(len(tc.y))).MistakesByHeight; !slices.Equal(got, tc.want) {
				t.Errorf("by height %v, want %v", got, tc.want)
			}
		})
	}
}

// matrixCost is a Hierarchy given by its C×C cost matrix.
type matrixCost struct {
	c int
	d []float64
}

func (m matrixCost) Distance(i, j int) float64 { return m.d[i*m.c+j] }

// TestRunReportsHierarchicalMetrics: a run with a Hierarchy logs the
// hierarchical metrics of every epoch in metrics.jsonl and the final
// ones in result.json; hier. dist@1 is the mistakes' share times their
// severity (a correct prediction costs 0), and the mistakes are top-1's.
func TestRunReportsHierarchicalMetrics(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Optim.Epochs, cfg.Hierarchy = 2, shardCost
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := float64(cfg.Test.Len())
	for _, em := range res.Epochs {
		h := em.TestHier
		if h == nil {
			t.Fatalf("epoch %d: no hierarchical metrics", em.Epoch)
		}
		if want := float64(h.Mistakes) / n * h.MistakeSeverity; math.Abs(h.HDist1-want) > 1e-12 {
			t.Errorf("epoch %d: hdist@1 %v, want mistakes/n · severity = %v", em.Epoch, h.HDist1, want)
		}
		if math.Abs(float64(h.Mistakes)/n-(1-em.TestTop1)) > 1e-12 {
			t.Errorf("epoch %d: %d mistakes of %v, top-1 %v", em.Epoch, h.Mistakes, n, em.TestTop1)
		}
		if h.HDist5 <= h.HDist1 || h.HDist20 != h.HDist5 {
			// 4 classes: @5 and @20 are both over every class, and the
			// mean cost of all of them exceeds the best one's.
			t.Errorf("epoch %d: %+v: want hdist@1 < hdist@5 = hdist@20", em.Epoch, *h)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		MistakeSeverity         []float64 `json:"mistake_severity"`
		HDist1, HDist5, HDist20 []float64
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	last := res.Epochs[len(res.Epochs)-1].TestHier
	if len(file.MistakeSeverity) != 1 || file.MistakeSeverity[0] != last.MistakeSeverity || file.HDist5[0] != last.HDist5 ||
		file.HDist1[0] != last.HDist1 || file.HDist20[0] != last.HDist20 {
		t.Errorf("result.json %+v, last epoch %+v", file, *last)
	}
	lines, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(string(lines), `"test_hier":{"mistake_severity":`); c != 2 {
		t.Errorf("metrics.jsonl has %d lines with test_hier, want 2:\n%s", c, lines)
	}
}

// TestEvaluateCRMEqualsBruteForce: EvaluateOn with a cost matrix reports
// conditional risk minimisation's top-1 and hierarchical metrics as a
// brute force over the model's logits computes them: each example's
// classes sorted by Σ_i softmax(z)_i·D[i][j], the argmin its prediction.
func TestEvaluateCRMEqualsBruteForce(t *testing.T) {
	ctx := context.Background()
	test := blobs(90, 4, 6, 7)
	spec, err := models.Builtin().Get("mlp:hidden=8", models.Input{C: 1, H: 6, W: 6, NumClasses: 4})
	if err != nil {
		t.Fatal(err)
	}
	var m *torch.Model
	if err := torch.Seeded(3, func() (err error) { m, err = torch.NewModel(spec, "cpu"); return err }); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// An asymmetric cost, so that CRM's choice differs from the argmax.
	cost := matrixCost{c: 4, d: []float64{0, 1, 3, 3, 1, 0, 3, 3, 2, 3, 0, 1, 3, 3, 1, 0}}
	d32 := make([]float32, 16)
	for i, v := range cost.d {
		d32[i] = float32(v)
	}
	got, err := EvaluateOn(ctx, m, test, memLoader, EvalOptions{Batch: 16, Hierarchy: cost, Cost: d32})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := torch.NewEngine("cpu", torch.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var hits, mistakes int
	var sev, hd [3]float64
	var byHeight []int64
	differs := 0
	err = eachBatch(ctx, memLoader, test, Pass{Batch: 16}, func(b *MiniBatch) error {
		if err := eng.Put(torch.Input{N: b.N, C: 1, H: 6, W: 6, X: b.X, Y: b.Y}); err != nil {
			return err
		}
		ev, err := eng.Eval(m, true, false)
		if err != nil {
			return err
		}
		for e, y := range b.Y {
			order, argmax := crmOrder(ev.Logits[e*4:(e+1)*4], cost)
			if order[0] != argmax {
				differs++
			}
			t := int(y)
			if order[0] == t {
				hits++
			} else {
				mistakes++
				sev[0] += cost.Distance(t, order[0])
				byHeight = countAt(byHeight, int(cost.Distance(t, order[0])))
			}
			for ki, k := range []int{1, 4, 4} { // @1, @5 and @20 over 4 classes
				var c float64
				for _, j := range order[:k] {
					c += cost.Distance(t, j)
				}
				hd[ki] += c / float64(k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := float64(test.Len())
	want := CRMMetrics{Top1: float64(hits) / n, HierMetrics: HierMetrics{MistakeSeverity: sev[0] / float64(mistakes),
		Mistakes: int64(mistakes), MistakesByHeight: byHeight, HDist1: hd[0] / n, HDist5: hd[1] / n, HDist20: hd[2] / n}}
	if c := got.TestCRM; c == nil || math.Abs(c.Top1-want.Top1) > 1e-12 || !closeHier(c.HierMetrics, want.HierMetrics, 1e-9) {
		t.Errorf("CRM %+v, brute force %+v", c, want)
	}
	if differs == 0 {
		t.Errorf("CRM chose the argmax on every example: the test cannot tell them apart")
	}
	t.Logf("CRM top-1 %.3f (argmax %.3f), differs on %d of %v examples", want.Top1, got.TestTop1, differs, n)
}

// countAt adds one to counts[h], growing counts as needed.
func countAt(counts []int64, h int) []int64 {
	for len(counts) <= h {
		counts = append(counts, 0)
	}
	counts[h]++
	return counts
}

// crmOrder ranks the classes of logits z by their expected cost under
// softmax(z), least first, as CRM does (ties in class order), and returns
// the argmax of z too.
func crmOrder(z []float32, cost matrixCost) (order []int, argmax int) {
	c := len(z)
	p := make([]float64, c)
	var s float64
	for i := range c {
		p[i] = math.Exp(float64(z[i]))
		s += p[i]
	}
	risk := make([]float64, c)
	for j := range c {
		for i := range c {
			risk[j] += p[i] / s * cost.d[i*c+j]
		}
		if z[j] > z[argmax] {
			argmax = j
		}
		order = append(order, j)
	}
	sort.SliceStable(order, func(a, b int) bool { return risk[order[a]] < risk[order[b]] })
	return order, argmax
}
