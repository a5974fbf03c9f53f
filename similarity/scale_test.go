package similarity

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/wordnet"
)

// refGraphWuPalmer and refLCAHeight are the per-pair forms lca used before
// the ancestor-list engine (two breadth-first searches and a map
// intersection per pair): the engine must give exactly their values.
func refGraphWuPalmer(g *Graph, classes []int) func(i, j int) float64 {
	minD, maxD := depths(g)
	up := make([]map[int]int, len(classes))
	for i, n := range classes {
		up[i] = distancesUp(g, n)
	}
	return func(i, j int) float64 {
		a, b := up[i], up[j]
		lcs, best := -1, -1
		for n := range a {
			if _, ok := b[n]; ok && (minD[n] > best || (minD[n] == best && n < lcs)) {
				lcs, best = n, minD[n]
			}
		}
		if lcs < 0 {
			return 0
		}
		depth := float64(maxD[lcs] + 1)
		return 2 * depth / (float64(a[lcs]+b[lcs]) + 2*depth)
	}
}

func refLCAHeight(g *Graph, classes []int) func(i, j int) float64 {
	height, top := heights(g)
	up := make([]map[int]int, len(classes))
	for i, c := range classes {
		up[i] = distancesUp(g, c)
	}
	return func(i, j int) float64 {
		if top == 0 {
			return 1
		}
		a, b := up[i], up[j]
		h := -1
		for v := range a {
			if _, ok := b[v]; ok && (h < 0 || height[v] < h) {
				h = height[v]
			}
		}
		if h < 0 {
			return 0
		}
		return 1 - float64(h)/float64(top)
	}
}

// On ImageNet-1k's WordNet graph the engine's graph forms equal the
// per-pair forms on every pair.
func TestLCAEngineEqualsPerPairForms(t *testing.T) {
	set, g := imagenetGraph(t)
	classes, err := g.ClassNodes(set)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind lcaKind
		ref  func(i, j int) float64
	}{{lcaGraphWuPalmer, refGraphWuPalmer(g, classes)}, {lcaHeight, refLCAHeight(g, classes)}} {
		e, _ := newLCAEngine(g, classes, tc.kind, nil)
		m, err := e.matrix(context.Background(), noProgress{})
		if err != nil {
			t.Fatal(err)
		}
		c := len(classes)
		for i := range classes {
			for j := i; j < c; j++ {
				got, want := e.pair(i, j), tc.ref(i, j)
				if got != want || m[i*c+j] != float32(want) || m[j*c+i] != float32(want) {
					t.Fatalf("kind %d: (%s, %s) = %v (matrix %v, %v), per-pair form %v", tc.kind, set.Classes[i].ID, set.Classes[j].ID, got, m[i*c+j], m[j*c+i], want)
				}
			}
		}
	}
	// Several roots, no common ancestor, classes on inner nodes.
	h := mustEdges(t, "a r\nb r\nb q\nc q\nd c\ne d\nx y\n")
	hs := &labels.Set{Name: "h", Classes: []labels.Class{{ID: "a"}, {ID: "e"}, {ID: "b"}, {ID: "c"}, {ID: "x"}, {ID: "r"}}}
	hc, err := h.ClassNodes(hs)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []lcaKind{lcaGraphWuPalmer, lcaHeight} {
		e, _ := newLCAEngine(h, hc, kind, nil)
		ref := map[lcaKind]func(i, j int) float64{lcaGraphWuPalmer: refGraphWuPalmer(h, hc), lcaHeight: refLCAHeight(h, hc)}[kind]
		for i := range hc {
			for j := i; j < len(hc); j++ {
				if got, want := e.pair(i, j), ref(i, j); got != want {
					t.Errorf("kind %d: (%s, %s) = %v, per-pair form %v", kind, hs.Classes[i].ID, hs.Classes[j].ID, got, want)
				}
			}
		}
	}
}

// On ImageNet-21k, whose classes include many inner synsets, the engine is
// nltk's wup_similarity ((*wordnet.DB).WuPalmer, tested against nltk) on
// random pairs and on pairs of a class and one of its ancestors, where
// nltk's preference for the first synset itself applies.
func TestLCAEngineIsNLTKOnImageNet21k(t *testing.T) {
	wn := openWordNet(t)
	set := builtin(t, "imagenet21k")
	g, err := WordNetGraph(wn, set.WNIDs())
	if err != nil {
		t.Fatal(err)
	}
	classes, err := g.ClassNodes(set)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newLCAEngine(g, classes, lcaNLTK, wn)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	mark := make([]int32, len(g.Nodes))
	row := make([]float32, set.Len())
	check := func(i, j int) {
		if i > j {
			i, j = j, i
		}
		want, err := wn.WuPalmer(set.Classes[i].WNID, set.Classes[j].WNID)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.pair(i, j); got != want {
			t.Fatalf("(%s, %s) = %v, WuPalmer %v", set.Classes[i].WNID, set.Classes[j].WNID, got, want)
		}
	}
	// The matrix's row walk finds what the merge finds.
	for range 20 {
		i := rng.IntN(set.Len())
		e.row(i, row, mark)
		for j := i; j < set.Len(); j++ {
			if want := e.pair(i, j); row[j] != float32(want) {
				t.Fatalf("row %d: (%s, %s) = %v, merge %v", i, set.Classes[i].WNID, set.Classes[j].WNID, row[j], want)
			}
		}
	}
	for range 3000 {
		check(rng.IntN(set.Len()), rng.IntN(set.Len()))
	}
	classOf := map[int]int{}
	for i, n := range classes {
		classOf[n] = i
	}
	// (Without the preference for the first synset, these pairs fail.)
	for range 3000 {
		j := rng.IntN(set.Len())
		for a := range distancesUp(g, classes[j]) {
			if i, ok := classOf[a]; ok {
				check(i, j)
			}
		}
	}
}

// The class-block SimRank equals the dense iteration's classes on random
// DAGs (several roots and parents, classes on inner nodes and leaves) and
// on ImageNet-1k's WordNet graph, to float32 rounding.
func TestSimRankClassesEqualsDense(t *testing.T) {
	check := func(name string, g *Graph, classes []int, opt SimRankOptions) {
		t.Helper()
		dense, _, err := SimRank(context.Background(), g, opt)
		if err != nil {
			t.Fatal(err)
		}
		got, st, err := simrankClasses(context.Background(), g, classes, opt)
		if err != nil {
			t.Fatal(err)
		}
		if st.Iterations > 2 || st.Delta != 0 {
			t.Errorf("%s: %d sweeps, last change %g; want the fixed point after one sweep, confirmed by a second", name, st.Iterations, st.Delta)
		}
		want := Submatrix(dense, len(g.Nodes), classes)
		c := len(classes)
		for k := range want {
			if d := math.Abs(float64(got[k]) - want[k]); d > 1e-6 || (k/c == k%c && got[k] != 1) {
				t.Fatalf("%s: (%d, %d) = %v, dense %v", name, k/c, k%c, got[k], want[k])
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 20; trial++ {
		n := 5 + rng.IntN(60)
		g := &Graph{Nodes: make([]string, n), Parents: make([][]int, n)}
		for v := 1; v < n; v++ {
			for k := 0; k < 1+rng.IntN(3); k++ {
				if rng.IntN(5) > 0 {
					if p := rng.IntN(v); !slices.Contains(g.Parents[v], p) {
						g.Parents[v] = append(g.Parents[v], p)
					}
				}
			}
			sort.Ints(g.Parents[v])
		}
		classes := rng.Perm(n)[:1+rng.IntN(n)]
		check("random", g, classes, SimRankOptions{Decay: 0.5 + 0.4*rng.Float64(), Iterations: 100, Tolerance: 1e-9})
	}
	set, g := imagenetGraph(t)
	classes, err := g.ClassNodes(set)
	if err != nil {
		t.Fatal(err)
	}
	check("imagenet", g, classes, SimRankOptions{Decay: 0.8, Iterations: 1000, Tolerance: 1e-6})
}

// Cosine in blocks of BLAS products equals the direct float64 loop,
// rounded once, across block edges.
func TestCosineBlocksEqualDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const c, d = 2*cosineBlock + 37, 50
	x := make([][]float64, c)
	for i := range x {
		x[i] = make([]float64, d)
		for k := range x[i] {
			x[i][k] = rng.NormFloat64()
		}
	}
	got, err := Cosine(x, func(int) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c; i++ {
		for j := 0; j < c; j++ {
			dot, ni, nj := 0.0, 0.0, 0.0
			for k := range x[i] {
				dot += x[i][k] * x[j][k]
				ni += x[i][k] * x[i][k]
				nj += x[j][k] * x[j][k]
			}
			want := dot / (math.Sqrt(ni) * math.Sqrt(nj))
			if g := got[i*c+j]; math.Abs(float64(g)-want) > 1e-7 || g != got[j*c+i] {
				t.Fatalf("(%d, %d) = %v, direct %v, mirror %v", i, j, g, want, got[j*c+i])
			}
		}
	}
}

// Normalize in tiles equals the rule applied pair by pair.
func TestNormalizeTilesEqualPairwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const c = 3*normTile + 5
	data := make([]float32, c*c)
	for k := range data {
		data[k] = float32(rng.Float64()*1.2 - 0.1)
	}
	for i := 0; i < c; i++ { // some symmetric pairs, kept bit for bit
		for j := 0; j < i; j += 3 {
			data[i*c+j] = data[j*c+i]
		}
	}
	want := slices.Clone(data)
	negative, asym := 0, 0.0
	for i := 0; i < c; i++ {
		for j := i + 1; j < c; j++ {
			a, b := want[i*c+j], want[j*c+i]
			asym = max(asym, math.Abs(float64(a)-float64(b)))
			m := float32((float64(a) + float64(b)) / 2)
			if m < 0 {
				negative++
				m = 0
			}
			want[i*c+j], want[j*c+i] = m, m
		}
		want[i*c+i] = 1
	}
	names := make([]string, c)
	for i := range names {
		names[i] = string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	notes, err := Normalize(data, names)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(data, want) {
		t.Fatal("tiled Normalize differs from the pairwise rule")
	}
	if len(notes) != 2 || negative == 0 || asym < 0.5 {
		t.Errorf("notes %q (%d negatives, asymmetry %g)", notes, negative, asym)
	}
}

// Nearest's heap keeps what a full sort keeps, ties by class index.
func TestNearestHeapEqualsSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const c = 300
	data := make([]float32, c*c)
	for k := range data {
		data[k] = float32(rng.IntN(20)) / 20 // many ties
	}
	for i := 0; i < c; i += 7 {
		for _, k := range []int{0, 1, 5, c - 1, c, c + 3} {
			var all []Neighbour
			for j := 0; j < c; j++ {
				if j != i {
					all = append(all, Neighbour{j, float64(data[i*c+j])})
				}
			}
			sort.SliceStable(all, func(a, b int) bool { return all[a].Score > all[b].Score })
			want := all[:min(k, len(all))]
			if got := Nearest(data, c, i, k); !slices.Equal(got, want) {
				t.Fatalf("row %d top %d: %v, want %v", i, k, got, want)
			}
		}
	}
}

// Compare ranks every pair up to its limit and a uniform sample beyond; the
// sample's correlation estimates the whole one.
func TestCompareSamplesLargeMatrices(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const c = 400
	a := &Matrix{Data: make([]float32, c*c), IDs: make([]string, c), Label: "a"}
	b := &Matrix{Data: make([]float32, c*c), IDs: make([]string, c), Label: "b"}
	for i := 0; i < c; i++ {
		for j := i; j < c; j++ {
			x := rng.Float64()
			y := x + 0.5*rng.NormFloat64()
			a.Data[i*c+j], a.Data[j*c+i] = float32(x), float32(x)
			b.Data[i*c+j], b.Data[j*c+i] = float32(y), float32(y)
		}
	}
	all, pairs, err := CompareSample(a, b, 0)
	if err != nil || pairs != c*(c-1)/2 {
		t.Fatalf("all pairs: %v, %d", err, pairs)
	}
	if full, n, _ := CompareSample(a, b, pairs); full != all || n != pairs {
		t.Errorf("a limit of every pair: %v over %d, want %v", full, n, all)
	}
	sample, n, err := CompareSample(a, b, 20000)
	if err != nil || n != 20000 || math.Abs(sample-all) > 0.03 {
		t.Errorf("sample of 20000: %v over %d (%v), whole %v", sample, n, err, all)
	}
}

// ImageNet-1k's lca matrix as lcl similarity stores it (normalised,
// float32) is nltk's Wu–Palmer pair by pair, rounded once: the matrix
// today's per-pair code gave, checked on the first 100 classes' pairs and
// on random pairs of all 1000.
func TestLCAImageNet1kIsPerPairWuPalmer(t *testing.T) {
	wn := openWordNet(t)
	set := builtin(t, "imagenet")
	res, err := Compute(context.Background(), LCA{WordNet: func() (*wordnet.DB, error) { return wn, nil }}, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := set.Len()
	check := func(i, j int) {
		if i == j {
			return // the diagonal is 1 by the policy
		}
		a, b := min(i, j), max(i, j)
		want, err := wn.WuPalmer(set.Classes[a].WNID, set.Classes[b].WNID)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Data[i*c+j]; got != float32(want) {
			t.Fatalf("(%s, %s) = %v, WuPalmer %v", set.Classes[i].WNID, set.Classes[j].WNID, got, want)
		}
	}
	for i := 0; i < 100; i++ {
		for j := 0; j < 100; j++ {
			check(i, j)
		}
	}
	rng := rand.New(rand.NewPCG(17, 18))
	for range 3000 {
		check(rng.IntN(c), rng.IntN(c))
	}
}

// normalizeUpper, given the upper triangle of a symmetric matrix and
// garbage below it, gives what Normalize gives for the whole matrix: the
// same values, notes and first-error message.
func TestNormalizeUpperEqualsNormalize(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	const c = 2*normTile + 9
	names := make([]string, c)
	for i := range names {
		names[i] = fmt.Sprint("c", i)
	}
	whole := make([]float32, c*c)
	for i := 0; i < c; i++ {
		for j := i; j < c; j++ {
			x := float32(rng.Float64()*1.2 - 0.1)
			whole[i*c+j], whole[j*c+i] = x, x
		}
	}
	upper := slices.Clone(whole)
	for i := 0; i < c; i++ {
		for j := 0; j <= i; j++ {
			upper[i*c+j] = float32(math.NaN()) // never read
		}
	}
	wantNotes, err := Normalize(whole, names)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := normalizeUpper(upper, names)
	if err != nil || !slices.Equal(upper, whole) || !slices.Equal(notes, wantNotes) {
		t.Fatalf("notes %q (%v), want %q; equal values: %v", notes, err, wantNotes, slices.Equal(upper, whole))
	}
	for _, k := range []int{3*c + 100, 130*c + 131} { // in the first and third tile rows
		bad := slices.Clone(whole)
		bad[k] = float32(math.Inf(-1))
		_, want := Normalize(slices.Clone(bad), names)
		_, got := normalizeUpper(bad, names)
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("entry %d: %v, Normalize: %v", k, got, want)
		}
	}
}
