package similarity

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/lcl-project/lcl/internal/crash"
	"github.com/lcl-project/lcl/labels"
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
	c := set.Len()
	var pair func(i, j int) (float64, error)
	switch {
	case form == FormWuPalmer && lg.kind == GraphWordNet:
		wn, err := l.WordNet()
		if err != nil {
			return nil, err
		}
		pair = func(i, j int) (float64, error) { return wn.WuPalmer(set.Classes[i].WNID, set.Classes[j].WNID) }
	case form == FormWuPalmer:
		pair = newGraphWuPalmer(lg.g, lg.classes)
	default:
		pair = newLCAHeight(lg.g, lg.classes)
	}
	bar := l.Progress.start(int64(c), "lca "+form)
	defer bar.Finish()
	data, err := pairwise(ctx, c, pair, bar)
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
	}, nil
}

// pairwise fills a symmetric C×C matrix from pair(i, j), i ≤ j, on every CPU.
func pairwise(ctx context.Context, c int, pair func(i, j int) (float64, error), bar Progress) ([]float64, error) {
	out := make([]float64, c*c)
	rows := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer crash.Handle() // a panic here is a bug: one line, a report, exit 70
			defer wg.Done()
			for i := range rows {
				for j := i; j < c; j++ {
					x, err := pair(i, j)
					if err != nil {
						once.Do(func() { first = err })
						continue
					}
					out[i*c+j], out[j*c+i] = x, x
				}
				bar.Add(1)
			}
		}()
	}
	var err error
	for i := 0; i < c; i++ {
		if err = ctx.Err(); err != nil {
			break
		}
		rows <- i
	}
	close(rows)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return out, first
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

func newGraphWuPalmer(g *Graph, classes []int) func(i, j int) (float64, error) {
	minD, maxD := depths(g)
	up := make([]map[int]int, len(classes))
	for i, n := range classes {
		up[i] = distancesUp(g, n)
	}
	return func(i, j int) (float64, error) {
		a, b := up[i], up[j]
		lcs, best := -1, -1
		for n := range a {
			if _, ok := b[n]; ok && (minD[n] > best || (minD[n] == best && n < lcs)) {
				lcs, best = n, minD[n]
			}
		}
		if lcs < 0 {
			return 0, nil
		}
		depth := float64(maxD[lcs] + 1)
		return 2 * depth / (float64(a[lcs]+b[lcs]) + 2*depth), nil
	}
}

func newLCAHeight(g *Graph, classes []int) func(i, j int) (float64, error) {
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
	up := make([]map[int]int, len(classes))
	for i, c := range classes {
		up[i] = distancesUp(g, c)
	}
	return func(i, j int) (float64, error) {
		if top == 0 {
			return 1, nil
		}
		a, b := up[i], up[j]
		h := -1
		for v := range a {
			if _, ok := b[v]; ok && (h < 0 || height[v] < h) {
				h = height[v]
			}
		}
		if h < 0 {
			return 0, nil
		}
		return 1 - float64(h)/float64(top), nil
	}
}
