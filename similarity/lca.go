package similarity

import (
	"context"
	"fmt"
	"runtime"
	"sort"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/wordnet"
)

// Forms of the lca source (parameter "form").
const (
	// FormWuPalmer is Wu–Palmer similarity 2·depth(LCA)/(depth(a)+depth(b)),
	// depths counted with the root at 1. On the WordNet graph it is exactly
	// nltk's wup_similarity ((*wordnet.DB).WuPalmer); on other graphs the
	// same rule: the lowest common ancestor is the common ancestor of
	// greatest shortest-path depth, its depth is its longest-path depth + 1,
	// and each class's path to it is the shortest.
	FormWuPalmer = "wup"
	// FormHeight is the LCA-height similarity of Bertinetto et al. (CVPR
	// 2020, "Making better mistakes"): s(a,b) = 1 − height(LCA)/H, where the
	// height of a node is its longest path down to a leaf, LCA is the common
	// ancestor of least height and H the height of the graph's highest
	// node. Classes with no common ancestor get 0.
	FormHeight = "height"
)

// LCA derives similarity from the lowest common ancestor of two classes in a
// label graph (parameters "graph" as for simrank, "form" wup or height).
type LCA struct {
	WordNet  WordNetFunc
	Progress ProgressFunc // optional, one unit per class row
	// MaxMemory bounds the matrix it may plan to hold, in bytes (0:
	// DefaultMaxMemory).
	MaxMemory int64
}

// Name implements Source.
func (LCA) Name() string { return "lca" }

func (l LCA) resolve(set *labels.Set, in map[string]string) (*params, *labelGraph, string, error) {
	p, err := newParams(in, "lca")
	if err != nil {
		return nil, nil, "", err
	}
	form, err := p.choice("form", FormWuPalmer, FormHeight)
	if err != nil {
		return nil, nil, "", err
	}
	lg, err := resolveGraph(set, p, l.WordNet)
	if err != nil {
		return nil, nil, "", err
	}
	return p, lg, form, nil
}

// Prepare implements Preparer.
func (l LCA) Prepare(_ context.Context, set *labels.Set, in map[string]string) (Provenance, error) {
	p, lg, _, err := l.resolve(set, in)
	if err != nil {
		return Provenance{}, err
	}
	return Provenance{Params: p.effective, Inputs: lg.inputs(set)}, nil
}

// Compute implements Source.
func (l LCA) Compute(ctx context.Context, set *labels.Set, in map[string]string) (*Result, error) {
	p, lg, form, err := l.resolve(set, in)
	if err != nil {
		return nil, err
	}
	if err := checkMemory(fmt.Sprintf("lca of %d classes (a %d×%d float32 matrix)", set.Len(), set.Len(), set.Len()), MatrixBytes(set.Len()), l.MaxMemory); err != nil {
		return nil, err
	}
	var e *lcaEngine
	switch {
	case form == FormWuPalmer && lg.kind == GraphWordNet:
		wn, err := l.WordNet()
		if err != nil {
			return nil, err
		}
		e, err = newLCAEngine(lg.g, lg.classes, lcaNLTK, wn)
		if err != nil {
			return nil, err
		}
	case form == FormWuPalmer:
		e, _ = newLCAEngine(lg.g, lg.classes, lcaGraphWuPalmer, nil)
	default:
		e, _ = newLCAEngine(lg.g, lg.classes, lcaHeight, nil)
	}
	c := set.Len()
	bar := l.Progress.start(int64(c), "lca "+form)
	defer bar.Finish()
	data, err := e.upperTriangle(ctx, bar)
	if err != nil {
		return nil, err
	}
	return &Result{
		Classes:    ClassIDs(set),
		Data:       data,
		Provenance: Provenance{Params: p.effective, Inputs: lg.inputs(set)},
		Notes: []string{
			lg.note(),
			fmt.Sprintf("zero pairs: %.1f%% of %d class pairs", 100*ZeroShare(data, c), c*(c-1)/2),
		},
		upper: true, // Compute mirrors it
	}, nil
}

// lcaKind is the rule an lcaEngine follows.
type lcaKind int

const (
	// lcaNLTK is nltk's wup_similarity on WordNet: the lowest common
	// hypernym is the common ancestor of greatest minimum depth, ties to
	// the first class itself, else to the smallest nltk name; each class's
	// distance to it is nltk's shortest_path_distance (the shortest path
	// through a common ancestor of the two).
	lcaNLTK lcaKind = iota
	// lcaGraphWuPalmer is FormWuPalmer on any graph: ties to the smallest
	// node index, distances the shortest hypernym paths.
	lcaGraphWuPalmer
	// lcaHeight is FormHeight.
	lcaHeight
)

// lcaEngine answers LCA similarities by merging two short sorted lists:
// every class keeps its ancestors (itself included) sorted by one total
// order of the graph's nodes in which a better lowest common ancestor comes
// first (greater minimum depth, then the tie-break; or lower height), with
// its distance to each. The first ancestor two lists share is the pair's
// LCA, so a pair costs a merge of two lists of about a dozen entries
// instead of two breadth-first searches: 238 M pairs of ImageNet-21k take
// seconds.
type lcaEngine struct {
	kind    lcaKind
	classes []int   // class → node
	off     []int32 // class k's entries are [off[k], off[k+1])
	rank    []int32 // an entry's ancestor's position in the order
	node    []int32 // an entry's ancestor
	dist    []int32 // the class's distance to the ancestor (see lcaKind)
	self    []int32 // a class's own rank
	minD    []int
	maxD    []int
	height  []int
	top     int // greatest height
}

func newLCAEngine(g *Graph, classes []int, kind lcaKind, wn *wordnet.DB) (*lcaEngine, error) {
	n := len(g.Nodes)
	e := &lcaEngine{kind: kind, classes: classes}
	e.minD, e.maxD = depths(g)
	order, err := e.order(g, wn)
	if err != nil {
		return nil, err
	}
	rank := make([]int32, n)
	for r, v := range order {
		rank[v] = int32(r)
	}
	// Every node's shortest distances up, as (ancestor, distance) lists.
	up := make([][][2]int32, n)
	upOf := func(v int) [][2]int32 {
		if up[v] == nil {
			for a, d := range distancesUp(g, v) {
				up[v] = append(up[v], [2]int32{int32(a), int32(d)})
			}
		}
		return up[v]
	}
	e.off = make([]int32, len(classes)+1)
	e.self = make([]int32, len(classes))
	da := make([]int32, n) // da[x] = distance from the class to x, +1; 0 = not an ancestor
	type entry struct{ rank, node, dist int32 }
	var ents []entry
	for k, v := range classes {
		anc := upOf(v)
		for _, ad := range anc {
			da[ad[0]] = ad[1] + 1
		}
		ents = ents[:0]
		for _, ad := range anc {
			x, d := ad[0], ad[1]
			if kind == lcaNLTK {
				// nltk's shortest_path_distance(class, x): the shortest
				// path up from both to an ancestor they share.
				for _, yd := range upOf(int(x)) {
					if dy := da[yd[0]]; dy > 0 && dy-1+yd[1] < d {
						d = dy - 1 + yd[1]
					}
				}
			}
			ents = append(ents, entry{rank[x], x, d})
		}
		for _, ad := range anc {
			da[ad[0]] = 0
		}
		sort.Slice(ents, func(a, b int) bool { return ents[a].rank < ents[b].rank })
		for _, en := range ents {
			e.rank = append(e.rank, en.rank)
			e.node = append(e.node, en.node)
			e.dist = append(e.dist, en.dist)
		}
		e.off[k+1] = int32(len(e.rank))
		e.self[k] = rank[v]
	}
	return e, nil
}

// order returns the nodes in the order the engine ranks ancestors by, the
// first shared one being the answer: the deepest first (nltk: by name
// among equals; the graph form: by node), or the lowest first for heights
// (which it computes into e.height and e.top).
func (e *lcaEngine) order(g *Graph, wn *wordnet.DB) ([]int, error) {
	n, kind := len(g.Nodes), e.kind
	order := make([]int, n)
	for v := range order {
		order[v] = v
	}
	switch kind {
	case lcaNLTK:
		name := make([]string, n)
		for v, id := range g.Nodes {
			nm, err := wn.NLTKName(id)
			if err != nil {
				return nil, err
			}
			name[v] = nm
		}
		sort.SliceStable(order, func(a, b int) bool {
			va, vb := order[a], order[b]
			if e.minD[va] != e.minD[vb] {
				return e.minD[va] > e.minD[vb]
			}
			return name[va] < name[vb]
		})
	case lcaGraphWuPalmer:
		sort.SliceStable(order, func(a, b int) bool {
			va, vb := order[a], order[b]
			if e.minD[va] != e.minD[vb] {
				return e.minD[va] > e.minD[vb]
			}
			return va < vb
		})
	case lcaHeight:
		e.height, e.top = heights(g)
		sort.SliceStable(order, func(a, b int) bool {
			va, vb := order[a], order[b]
			if e.height[va] != e.height[vb] {
				return e.height[va] < e.height[vb]
			}
			return va < vb
		})
	}
	return order, nil
}

// heights returns every node's longest path down to a leaf and the
// greatest of them.
func heights(g *Graph) ([]int, int) {
	n := len(g.Nodes)
	height := make([]int, n)
	done := make([]bool, n)
	ch := g.Children()
	var visit func(int)
	visit = func(v int) {
		if done[v] {
			return
		}
		done[v] = true
		for _, c := range ch[v] {
			visit(c)
			height[v] = max(height[v], height[c]+1)
		}
	}
	top := 0
	for v := range g.Nodes {
		visit(v)
		top = max(top, height[v])
	}
	return height, top
}

// pair is the similarity of classes i ≤ j (nltk's rule is not symmetric in
// its ties: i plays nltk's self), found by merging the two lists.
func (e *lcaEngine) pair(i, j int) float64 {
	if e.kind == lcaHeight && e.top == 0 {
		return 1
	}
	a0, a1, b0, b1 := e.off[i], e.off[i+1], e.off[j], e.off[j+1]
	p, q := a0, b0
	for p < a1 && q < b1 {
		ra, rb := e.rank[p], e.rank[q]
		if ra == rb {
			return e.value(i, j, p, q)
		}
		if ra < rb {
			p++
		} else {
			q++
		}
	}
	return 0 // no common ancestor
}

// value is the similarity of classes i ≤ j whose lowest common ancestor is
// entry p of i's list and entry q of j's.
func (e *lcaEngine) value(i, j int, p, q int32) float64 {
	lcs := int(e.node[p])
	switch e.kind {
	case lcaHeight:
		if e.top == 0 {
			return 1
		}
		return 1 - float64(e.height[lcs])/float64(e.top)
	case lcaGraphWuPalmer:
		depth := float64(e.maxD[lcs] + 1)
		return 2 * depth / (float64(e.dist[p]+e.dist[q]) + 2*depth)
	}
	d1, d2 := e.dist[p], e.dist[q]
	if self := e.classes[i]; lcs != self && e.minD[self] == e.minD[lcs] {
		// nltk prefers the first synset itself among equally deep
		// candidates: is it an ancestor of the second?
		want := e.self[i]
		b0, b1 := e.off[j], e.off[j+1]
		k := b0 + int32(sort.Search(int(b1-b0), func(k int) bool { return e.rank[b0+int32(k)] >= want }))
		if k < b1 && e.rank[k] == want {
			lcs, d1, d2 = self, 0, e.dist[k]
		}
	}
	depth := float64(e.maxD[lcs] + 1)
	l1, l2 := float64(d1)+depth, float64(d2)+depth
	return 2 * depth / (l1 + l2)
}

// row fills row[j] for j ≥ i. It marks i's ancestors by rank in mark (one
// entry per node, all 0 on entry and on return) and walks each j's list to
// its first marked entry: about half the steps of a merge, over memory that
// stays in cache.
func (e *lcaEngine) row(i int, row []float32, mark []int32) {
	a0, a1 := e.off[i], e.off[i+1]
	for p := a0; p < a1; p++ {
		mark[e.rank[p]] = p + 1
	}
	for j := i; j < len(e.classes); j++ {
		x := 0.0
		if e.kind == lcaHeight && e.top == 0 {
			x = 1
		} else {
			for q := e.off[j]; q < e.off[j+1]; q++ {
				if p := mark[e.rank[q]]; p > 0 {
					x = e.value(i, j, p-1, q)
					break
				}
			}
		}
		row[j] = float32(x)
	}
	for p := a0; p < a1; p++ {
		mark[e.rank[p]] = 0
	}
}

// matrix fills the C×C matrix: the upper triangle, then its mirror image.
func (e *lcaEngine) matrix(ctx context.Context, bar Progress) ([]float32, error) {
	out, err := e.upperTriangle(ctx, bar)
	if err != nil {
		return nil, err
	}
	mirrorUpper(out, len(e.classes))
	return out, nil
}

// upperTriangle fills the entries on and above the diagonal of the C×C
// matrix, row by row on every CPU. bar gets one unit per row.
func (e *lcaEngine) upperTriangle(ctx context.Context, bar Progress) ([]float32, error) {
	c := len(e.classes)
	out := make([]float32, c*c)
	marks := make(chan []int32, runtime.GOMAXPROCS(0))
	for range cap(marks) {
		marks <- make([]int32, len(e.minD))
	}
	err := parallelDynamicCtx(ctx, c, func(i int) {
		mark := <-marks
		e.row(i, out[i*c:(i+1)*c], mark)
		marks <- mark
		bar.Add(1)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mirrorUpper copies the upper triangle of a C×C matrix onto the lower, in
// tiles on every CPU.
func mirrorUpper(data []float32, c int) {
	tiles := (c + normTile - 1) / normTile
	parallelDynamic(tiles, func(ti int) {
		i0, i1 := ti*normTile, min(ti*normTile+normTile, c)
		for j := i0; j < c; j++ {
			for i := i0; i < min(i1, j); i++ {
				data[j*c+i] = data[i*c+j]
			}
		}
	})
}

// distancesUp returns the shortest distance from node to itself (0) and to
// each of its ancestors.
func distancesUp(g *Graph, node int) map[int]int {
	dist := map[int]int{node: 0}
	frontier := []int{node}
	for d := 1; len(frontier) > 0; d++ {
		var next []int
		for _, n := range frontier {
			for _, p := range g.Parents[n] {
				if _, ok := dist[p]; !ok {
					dist[p] = d
					next = append(next, p)
				}
			}
		}
		frontier = next
	}
	return dist
}

// depths returns every node's shortest and longest path length to a root,
// visiting nodes in topological order (the graph is acyclic).
func depths(g *Graph) (minD, maxD []int) {
	n := len(g.Nodes)
	minD, maxD = make([]int, n), make([]int, n)
	done := make([]bool, n)
	var visit func(int)
	visit = func(v int) {
		if done[v] {
			return
		}
		done[v] = true
		for i, p := range g.Parents[v] {
			visit(p)
			if i == 0 || minD[p]+1 < minD[v] {
				minD[v] = minD[p] + 1
			}
			if maxD[p]+1 > maxD[v] {
				maxD[v] = maxD[p] + 1
			}
		}
	}
	for v := range g.Nodes {
		visit(v)
	}
	return minD, maxD
}
