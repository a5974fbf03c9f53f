package strategy

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// HXE is the hierarchical cross-entropy of Bertinetto et al. (CVPR 2020,
// "Making Better Mistakes"): an example of class y is trained on
//
//	−Σ_l λ(C_l)·log p(C_l | C_{l+1})
//
// along the path y = C_0, C_1, …, C_L = root of the class hierarchy, with
// p(C) the summed softmax probabilities of the classes under node C and
// λ(C) = exp(−α·depth(C)), normalised to sum to 1 over the tree's nodes, as
// fiveai/making-better-mistakes' get_exponential_weighting computes it
// (depth: edges from the root, the code's len(position); the paper writes
// h(C), and with α > 0 the weights fall down the hierarchy, as the paper
// says they should). It is the engine's group term: a group per node but
// the root, W[y,C_0] = λ(C_0) and W[y,C_l] = λ(C_l) − λ(C_{l−1}), since
// log p(C_l | C_{l+1}) = log p(C_l) − log p(C_{l+1}) and p(root) = 1. The
// plan is made once, in Begin, and every epoch's plan carries the same
// groups.
//
// The hierarchy is the one the similarity matrix describes: the
// single-linkage tree of the distances d = 1 − s, classes joined into one
// node at each distance where they meet (not pairwise). On the lca source's
// height form that is the label set's LCA tree with its one-child nodes
// left out; those add nothing to the loss (p(C | parent) = 1 for an only
// child) but would deepen the nodes below them. Any other similarity gives
// its own single-linkage tree.
//
// The loss is MBM's times the tree's node count N, so that α = 0 (every λ
// 1/N) is plain cross-entropy: −Σ_l log p(C_l | C_{l+1}) telescopes to
// −log p_y. MBM trains with Adam, which a constant factor of the loss does
// not change; lcl's presets train with SGD, where MBM's loss, N times
// smaller than cross-entropy's, would train as with an N times smaller
// learning rate.
type HXE struct {
	base
	groups *sdk.Groups
	scale  float64
}

var hxeParams = []sdk.Param{
	{Name: "alpha", Type: sdk.ParamFloat, Default: "0.1", Help: "decay α ≥ 0 of the edge weights λ(C) = exp(−α·depth(C)) down the hierarchy (paper: 0.1 to 0.6; 0 weighs every edge alike)"},
}

func (s *HXE) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "hxe", Version: Version,
		Summary: "MBM hierarchical cross-entropy (Bertinetto et al. 2020): −Σ λ(C)·log p(C | parent) along the true class's path",
		Params:  hxeParams, MaxPeers: 1, Stages: []string{"train"}, NeedsSimilarity: true}, nil
}

func (s *HXE) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, hxeParams); err != nil {
		return nil, err
	}
	alpha := s.params.Float("alpha")
	if !(alpha >= 0) || math.IsInf(alpha, 1) {
		return nil, fmt.Errorf("alpha = %g, want a finite value ≥ 0", alpha)
	}
	if run.Similarity == nil {
		return nil, fmt.Errorf("hxe needs a similarity matrix whose tree it walks (--source lca --form height, or --matrix)")
	}
	c := len(run.Classes)
	if c < 2 {
		return nil, fmt.Errorf("hxe needs at least 2 classes, not %d", c)
	}
	t, err := LinkageTree(run.Similarity, c)
	if err != nil {
		return nil, fmt.Errorf("similarity matrix: %w", err)
	}
	if g := int64(len(t.Parent) - 1); g*int64(c) > sdk.MaxGroupCells {
		return nil, fmt.Errorf("%d classes make %d groups, more than the trainer holds (%d groups × classes)", c, g, sdk.MaxGroupCells)
	}
	if most := t.HXEMaxAlpha(); alpha > most {
		return nil, fmt.Errorf("alpha = %g: the weights of the deepest classes (depth %d of this hierarchy) underflow to 0 (the loss would be 0, nothing learnt): want 0 ≤ alpha ≤ %.2f on it (paper: 0.1 to 0.6)",
			alpha, t.leafDepth(), math.Floor(most*100)/100)
	}
	s.groups, s.scale = t.HXEGroups(alpha), float64(len(t.Parent))
	s.stages = oneStage("train", run.Epochs, 1)
	return s.stagesRead()
}

func (s *HXE) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	return &sdk.Plan{Coefs: sdk.Coefs{Group: s.scale}, Groups: s.groups}, nil
}

// Tree is a class hierarchy: nodes 0..C−1 are the classes (leaves), the
// others the groups above them, each created after its children, so the
// root is the last node.
type Tree struct {
	Parent  []int   // parent node; −1 for the root
	Members [][]int // the classes under each node, ascending
	Depth   []int   // edges from the root
}

// LinkageTree is the single-linkage tree of the distances d = 1 − s over
// c classes: clusters that meet at the same distance d become the children
// of one new node (a node of the tree may have many children). For a
// tree's LCA heights (any height that grows up the tree) this gives the
// tree back, without its one-child nodes. It reads s row by row, c times
// (Prim's minimum spanning tree: O(c²)).
func LinkageTree(s *sdk.Matrix, c int) (*Tree, error) {
	if err := sdk.ValidateSimilarity(s, c); err != nil {
		return nil, err
	}
	edges := spanningEdges(s, c)
	t := &Tree{Parent: make([]int, c), Members: make([][]int, c)}
	for i := range c {
		t.Parent[i], t.Members[i] = -1, []int{i}
	}
	uf := newUnionFind(c) // over classes
	node := make([]int, c)
	for i := range node {
		node[i] = i
	}
	find := uf.find
	for _, round := range mergeRounds(edges) {
		// The clusters this distance joins, before any joining: each
		// becomes a child of the node its new cluster gets.
		var olds []int
		for _, e := range round {
			olds = append(olds, find(e.a), find(e.b))
		}
		uf.join(round)
		slices.Sort(olds)
		olds = slices.Compact(olds)
		made := map[int]int{} // new cluster root → its node
		for _, o := range olds {
			r := find(o)
			p, ok := made[r]
			if !ok {
				p = len(t.Parent)
				made[r] = p
				t.Parent = append(t.Parent, -1)
				t.Members = append(t.Members, nil)
			}
			t.Parent[node[o]] = p
			t.Members[p] = append(t.Members[p], t.Members[node[o]]...)
		}
		for r, p := range made {
			node[r] = p
			slices.Sort(t.Members[p])
		}
	}
	t.Depth = make([]int, len(t.Parent))
	for v := len(t.Parent) - 1; v >= 0; v-- { // parents come after their children
		if p := t.Parent[v]; p >= 0 {
			t.Depth[v] = t.Depth[p] + 1
		}
	}
	return t, nil
}

// unionFind is a disjoint-set forest over classes 0..n−1 (path halving).
type unionFind []int

func newUnionFind(n int) unionFind {
	u := make(unionFind, n)
	for i := range u {
		u[i] = i
	}
	return u
}

// find is x's cluster's root.
func (u unionFind) find(x int) int {
	for u[x] != x {
		u[x] = u[u[x]]
		x = u[x]
	}
	return x
}

// join merges the clusters of each edge's ends.
func (u unionFind) join(edges []linkEdge) {
	for _, e := range edges {
		u[u.find(e.a)] = u.find(e.b)
	}
}

// mergeRounds splits edges sorted by distance into the runs of equal
// distance: the clusters single linkage merges at one height.
func mergeRounds(edges []linkEdge) [][]linkEdge {
	var out [][]linkEdge
	for i := 0; i < len(edges); {
		j := i
		for j < len(edges) && edges[j].d == edges[i].d {
			j++
		}
		out = append(out, edges[i:j])
		i = j
	}
	return out
}

// A linkEdge joins classes a and b at distance d = 1 − s.
type linkEdge struct {
	a, b int
	d    float64
}

// spanningEdges returns the c−1 edges of the minimum spanning tree of the
// distances 1 − s (Prim, reading s row by row), sorted by distance, ties in
// the order Prim took them.
func spanningEdges(s *sdk.Matrix, c int) []linkEdge {
	// Prim: best[j] is the smallest distance from the spanning tree to j.
	in, best, from := make([]bool, c), make([]float64, c), make([]int, c)
	for j := range best {
		best[j] = math.Inf(1)
	}
	row := make([]float32, c)
	edges := make([]linkEdge, 0, c-1)
	next := 0
	for k := 0; k < c; k++ {
		v := next
		in[v] = true
		if k > 0 {
			edges = append(edges, linkEdge{from[v], v, best[v]})
		}
		next = -1
		for j, sv := range s.RowInto(v, row) {
			if in[j] {
				continue
			}
			if d := 1 - float64(sv); d < best[j] {
				best[j], from[j] = d, v
			}
			if next < 0 || best[j] < best[next] {
				next = j
			}
		}
	}
	slices.SortStableFunc(edges, func(x, y linkEdge) int { return cmp.Compare(x.d, y.d) })
	return edges
}

// minHXEWeight is the least weight λ(C) of a class HXE accepts: the
// smallest normal float32, the trainer's type for the group weights
// (smaller ones are flushed to 0 or lose their precision).
const minHXEWeight = 0x1p-126

// leafDepth is the depth of t's deepest class.
func (t *Tree) leafDepth() int {
	c := len(t.Members[len(t.Members)-1])
	return slices.Max(t.Depth[:c])
}

// HXEMaxAlpha is the largest decay α whose weights λ(y) = exp(−α·depth(y))
// / Σ_C exp(−α·depth(C)) of the classes on t all stay at least
// minHXEWeight: beyond it the deepest classes' weights (and, far beyond,
// every weight) underflow to 0 as the trainer holds them, and HXE trains
// on a loss that is 0. log λ(y) falls as α grows for the deepest class
// (its depth is at least the λ-weighted mean depth), so bisection finds it.
func (t *Tree) HXEMaxAlpha() float64 {
	deepest := float64(t.leafDepth())
	logMin := math.Log(minHXEWeight)
	ok := func(alpha float64) bool {
		// Σ_C exp(−α·depth(C)) is the root's 1 plus the rest.
		rest := 0.0
		for _, d := range t.Depth {
			if d > 0 {
				rest += math.Exp(-alpha * float64(d))
			}
		}
		return -alpha*deepest-math.Log1p(rest) >= logMin
	}
	lo, hi := 0.0, -logMin/deepest // at hi, λ ≤ exp(−α·depth) = minHXEWeight
	for range 100 {
		mid := (lo + hi) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// HXEGroups are the class groups of HXE's loss on t with decay alpha: one
// group per node but the root (group g = node g), W along each class's
// path (see HXE).
func (t *Tree) HXEGroups(alpha float64) *sdk.Groups {
	n := len(t.Parent)
	lambda := make([]float64, n)
	total := 0.0
	for v, d := range t.Depth {
		lambda[v] = math.Exp(-alpha * float64(d))
		total += lambda[v]
	}
	for v := range lambda {
		lambda[v] /= total
	}
	g := &sdk.Groups{Members: t.Members[:n-1]}
	c := len(t.Members[n-1])
	for y := range c {
		g.Weights = append(g.Weights, sdk.GroupWeight{Class: y, Group: y, W: lambda[y]})
		for v := y; t.Parent[t.Parent[v]] >= 0; v = t.Parent[v] {
			p := t.Parent[v]
			g.Weights = append(g.Weights, sdk.GroupWeight{Class: y, Group: p, W: lambda[p] - lambda[v]})
		}
	}
	return g
}
