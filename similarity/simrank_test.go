package similarity

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/wordnet"
)

func mustEdges(t *testing.T, text string) *Graph {
	t.Helper()
	g, err := ReadEdgeList(strings.NewReader(text), "test")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func simAt(t *testing.T, g *Graph, s []float64, a, b string) float64 {
	t.Helper()
	i, ok1 := g.Index(a)
	j, ok2 := g.Index(b)
	if !ok1 || !ok2 {
		t.Fatalf("no node %s or %s", a, b)
	}
	return s[i*len(g.Nodes)+j]
}

// A balanced tree: r → a, b; a → a1, a2; b → b1, b2; plus c, a leaf directly
// under r (a different depth from a1). By hand, from s(x,y) = C/(|I(x)||I(y)|)
// Σ s(parents): s(a,b) = C·s(r,r) = C; siblings a1,a2 share parent a: C;
// cousins a1,b1: C·s(a,b) = C²; a1 and c: C·s(a,r) = C·C·(no parents of r) = 0;
// any node and the root r: 0 (r has no in-neighbours).
const balancedTree = `
a r
b r
c r
a1 a
a2 a
b1 b
b2 b
`

func TestSimRankBalancedTreeByHand(t *testing.T) {
	g := mustEdges(t, balancedTree)
	for _, decay := range []float64{0.6, 0.8, 0.9} {
		s, st, err := SimRank(context.Background(), g, SimRankOptions{Decay: decay, Iterations: 100, Tolerance: 1e-12})
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			a, b string
			s    float64
		}{
			{"a1", "a1", 1},
			{"a", "b", decay},
			{"a", "c", decay},
			{"a1", "a2", decay},
			{"b1", "b2", decay},
			{"a1", "b1", decay * decay},
			{"a2", "b2", decay * decay},
			{"a1", "c", 0},
			{"a", "b1", 0},
			{"r", "a", 0},
			{"r", "a1", 0},
		}
		for _, w := range want {
			for _, pair := range [][2]string{{w.a, w.b}, {w.b, w.a}} {
				if got := simAt(t, g, s, pair[0], pair[1]); math.Abs(got-w.s) > 1e-6 {
					t.Errorf("C=%v: s(%s,%s) = %.9f, want %.9f", decay, pair[0], pair[1], got, w.s)
				}
			}
		}
		if st.Iterations > 4 {
			t.Errorf("C=%v: %d iterations on a depth-2 tree, want ≤ 4 (exact after depth+1)", decay, st.Iterations)
		}
	}
}

func TestSimRankRemediesFillDifferentDepths(t *testing.T) {
	g := mustEdges(t, balancedTree)
	for _, v := range []string{VariantStar, VariantUndirected} {
		s, _, err := SimRank(context.Background(), g, SimRankOptions{Decay: 0.8, Iterations: 1000, Tolerance: 1e-10, Variant: v})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		n := len(g.Nodes)
		for i := 0; i < n; i++ {
			if d := s[i*n+i]; math.Abs(d-1) > 1e-12 {
				t.Errorf("%s: s(%s,%s) = %v, want 1", v, g.Nodes[i], g.Nodes[i], d)
			}
			for j := 0; j < n; j++ {
				if math.Abs(s[i*n+j]-s[j*n+i]) > 1e-12 {
					t.Errorf("%s: asymmetric at (%s,%s)", v, g.Nodes[i], g.Nodes[j])
				}
			}
		}
		sib, cous, diff := simAt(t, g, s, "a1", "a2"), simAt(t, g, s, "a1", "b1"), simAt(t, g, s, "a1", "c")
		if !(diff > 0) {
			t.Errorf("%s: s(a1,c) = %v, want > 0 for leaves at different depths", v, diff)
		}
		if !(sib > cous && cous > 0) {
			t.Errorf("%s: siblings %.4f, cousins %.4f: want siblings > cousins > 0", v, sib, cous)
		}
	}
}

// SimRank* on a two-leaf star r → x, y by hand: with Q the parent-mean
// matrix, S = (C/2)(QS + SQᵀ) + (1−C)I. s(r,r) = 1−C; s(x,r) = (C/2)s(r,r)
// (x's parent is r; r has none); s(x,x) = (C/2)(2·s(r,x)) + 1−C; and
// s(x,y) = (C/2)(s(r,y) + s(x,r)) = C·s(x,r). Normalised by √(s(x,x)s(y,y)).
func TestSimRankStarByHand(t *testing.T) {
	g := mustEdges(t, "x r\ny r\n")
	const c = 0.8
	rr := 1 - c
	xr := c / 2 * rr
	xx := c*xr + 1 - c
	xy := c * xr
	s, _, err := SimRank(context.Background(), g, SimRankOptions{Decay: c, Iterations: 100, Tolerance: 1e-14, Variant: VariantStar})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := simAt(t, g, s, "x", "y"), xy/xx; math.Abs(got-want) > 1e-9 {
		t.Errorf("s*(x,y) = %v, want %v", got, want)
	}
	if got, want := simAt(t, g, s, "x", "r"), xr/math.Sqrt(xx*rr); math.Abs(got-want) > 1e-9 {
		t.Errorf("s*(x,r) = %v, want %v", got, want)
	}
}

func TestSimRankRejectsBadOptions(t *testing.T) {
	g := mustEdges(t, balancedTree)
	for _, opt := range []SimRankOptions{
		{Decay: 0, Iterations: 10, Tolerance: 1e-4},
		{Decay: 1, Iterations: 10, Tolerance: 1e-4},
		{Decay: 0.8, Iterations: 0, Tolerance: 1e-4},
		{Decay: 0.8, Iterations: 10, Tolerance: 0},
		{Decay: 0.8, Iterations: 10, Tolerance: 1e-4, Variant: "bogus"},
		{Decay: 0.8, Iterations: 1, Tolerance: 1e-9}, // cannot converge in one step
	} {
		if _, _, err := SimRank(context.Background(), g, opt); err == nil {
			t.Errorf("%+v: no error", opt)
		}
	}
}

func TestEdgeListErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"cycle", "a b\nb c\nc a\n", "cycle"},
		{"self", "a a\n", "own parent"},
		{"fields", "a b c\n", "test:1"},
		{"empty", "# nothing\n", "no edges"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadEdgeList(strings.NewReader(tc.text), "test")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	_, err := ReadEdgeList(strings.NewReader("a b\nb c\nc a\n"), "test")
	for _, n := range []string{"a", "b", "c"} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("cycle error %q does not name %s", err, n)
		}
	}
	if _, err := HierarchyGraph([]labels.Node{{ID: "1", Parent: "2"}, {ID: "2", Parent: "1"}}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cyclic hierarchy: err = %v", err)
	}
}

func openWordNet(t testing.TB) *wordnet.DB {
	t.Helper()
	wn, err := wordnet.Open("")
	if err != nil {
		t.Fatalf("WordNet 3.0 is needed (make deps installs wordnet-base): %v", err)
	}
	return wn
}

func imagenetGraph(t testing.TB) (*labels.Set, *Graph) {
	t.Helper()
	set, err := labels.Builtin("imagenet")
	if err != nil {
		t.Fatal(err)
	}
	g, err := WordNetGraph(openWordNet(t), set.WNIDs())
	if err != nil {
		t.Fatal(err)
	}
	return set, g
}

func TestImageNetWordNetGraphSize(t *testing.T) {
	_, g := imagenetGraph(t)
	if len(g.Nodes) != 1860 || g.Edges() != 1937 {
		t.Fatalf("ImageNet hypernym DAG: %d nodes, %d edges; want 1860, 1937", len(g.Nodes), g.Edges())
	}
	if _, ok := g.Index("n00001740"); !ok {
		t.Error("entity.n.01 (n00001740) is not in the graph")
	}
}

// writeGraph writes the edge list, node order and class nodes for the
// reference script.
func writeGraph(t testing.TB, dir string, g *Graph, classes []int) (edges, nodes, cls string) {
	t.Helper()
	var e, n, c strings.Builder
	for child, ps := range g.Parents {
		for _, p := range ps {
			e.WriteString(g.Nodes[child] + " " + g.Nodes[p] + "\n")
		}
	}
	for _, id := range g.Nodes {
		n.WriteString(id + "\n")
	}
	for _, i := range classes {
		c.WriteString(g.Nodes[i] + "\n")
	}
	edges, nodes, cls = filepath.Join(dir, "edges"), filepath.Join(dir, "nodes"), filepath.Join(dir, "classes")
	for path, text := range map[string]string{edges: e.String(), nodes: n.String(), cls: c.String()} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return edges, nodes, cls
}

// TestSimRankEqualsNetworkx compares against networkx's simrank_similarity
// on ImageNet-1k's WordNet DAG (about 4 s in networkx). networkx comes from
// Debian's python3-networkx (make deps); without it the test fails.
func TestSimRankEqualsNetworkx(t *testing.T) {
	py := testdep.PythonModules(t, "networkx", "numpy")
	set, g := imagenetGraph(t)
	classes, err := g.ClassNodes(set)
	if err != nil {
		t.Fatal(err)
	}
	const decay, tol = 0.8, 1e-4
	s, _, err := SimRank(context.Background(), g, SimRankOptions{Decay: decay, Iterations: 1000, Tolerance: tol})
	if err != nil {
		t.Fatal(err)
	}
	ours := Submatrix(s, len(g.Nodes), classes)

	dir := t.TempDir()
	edges, nodes, cls := writeGraph(t, dir, g, classes)
	out := filepath.Join(dir, "nx.npy")
	script, _ := filepath.Abs(filepath.Join("..", "testdata", "similarity", "simrank_reference.py"))
	cmd := py.Command(script, edges, nodes, cls, "0.8", "1e-4", out, "networkx")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("networkx reference: %v\n%s", err, b)
	}
	ref, n, err := ReadMatrixFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n != set.Len() {
		t.Fatalf("reference is %d×%d, want %d", n, n, set.Len())
	}
	worst, wi := 0.0, 0
	for i := range ref {
		if d := math.Abs(float64(ref[i]) - ours[i]); d > worst {
			worst, wi = d, i
		}
	}
	if worst > 1e-6 {
		t.Fatalf("max |ours − networkx| = %.3g at (%s, %s), want ≤ 1e-6", worst, set.Classes[wi/n].ID, set.Classes[wi%n].ID)
	}
	if z := ZeroShare(ours, n); z < 0.5 {
		t.Errorf("zero share %.3f: plain SimRank on the WordNet DAG should be mostly zero", z)
	}
}

func BenchmarkSimRankImageNet(b *testing.B) {
	_, g := imagenetGraph(b)
	for _, v := range []string{VariantJehWidom, VariantStar, VariantUndirected} {
		b.Run(v, func(b *testing.B) {
			for range b.N {
				if _, _, err := SimRank(context.Background(), g, SimRankOptions{Decay: 0.8, Iterations: 1000, Tolerance: 1e-4, Variant: v}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The sparse iteration must equal the dense one on any graph, including
// multiple parents and several roots.
func TestSimRankSparseEqualsDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 20; trial++ {
		n := 5 + rng.IntN(60)
		in := make([][]int, n)
		for v := 1; v < n; v++ { // parents have smaller indices: acyclic
			for k := 0; k < 1+rng.IntN(3); k++ {
				if rng.IntN(5) > 0 {
					p := rng.IntN(v)
					if !slices.Contains(in[v], p) {
						in[v] = append(in[v], p)
					}
				}
			}
			slices.Sort(in[v])
		}
		opt := SimRankOptions{Decay: 0.5 + 0.4*rng.Float64(), Iterations: 1000, Tolerance: 1e-9}
		sparse, s1, err := simrankSparse(context.Background(), in, opt)
		if err != nil {
			t.Fatal(err)
		}
		dense, s2, err := simrankPlain(context.Background(), in, opt)
		if err != nil {
			t.Fatal(err)
		}
		if s1.Iterations != s2.Iterations {
			t.Errorf("trial %d: %d iterations sparse, %d dense", trial, s1.Iterations, s2.Iterations)
		}
		for k := range dense {
			if math.Abs(dense[k]-sparse[k]) > 1e-12 {
				t.Fatalf("trial %d: sparse %v, dense %v at (%d,%d)", trial, sparse[k], dense[k], k/n, k%n)
			}
		}
	}
}

// On CIFAR-100's WordNet DAG plain SimRank is mostly zero; both remedies
// fill every pair and track Wu-Palmer far better.
func TestSimRankRemediesOnCIFAR100(t *testing.T) {
	wn := openWordNet(t)
	open := func() (*wordnet.DB, error) { return wn, nil }
	set, err := labels.Builtin("cifar100")
	if err != nil {
		t.Fatal(err)
	}
	wup, err := Compute(context.Background(), LCA{WordNet: open}, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := set.Len()
	rho := map[string]float64{}
	zero := map[string]float64{}
	for _, v := range []string{VariantJehWidom, VariantStar, VariantUndirected} {
		res, err := Compute(context.Background(), SimRankSource{WordNet: open}, set, map[string]string{"variant": v})
		if err != nil {
			t.Fatal(err)
		}
		zero[v] = ZeroShare(res.Data, c)
		rho[v], _ = Spearman(UpperTriangle(res.Data, c), UpperTriangle(wup.Data, c))
	}
	if zero[VariantJehWidom] < 0.8 {
		t.Errorf("plain SimRank zero share %.3f, want ≥ 0.8 on CIFAR-100's WordNet DAG", zero[VariantJehWidom])
	}
	for _, v := range []string{VariantStar, VariantUndirected} {
		if zero[v] != 0 || rho[v] < rho[VariantJehWidom]+0.3 {
			t.Errorf("%s: zero share %.3f, spearman vs wup %.3f (plain %.3f): want 0 and clearly better", v, zero[v], rho[v], rho[VariantJehWidom])
		}
	}
}
