package similarity

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/lcl-project/lcl/internal/crash"
)

// SimRank variants selectable with the simrank source's "variant" parameter.
const (
	// VariantJehWidom is plain SimRank (Jeh & Widom 2002) on the directed
	// graph: s(a,b) = C/(|I(a)||I(b)|) Σ s(i,j) over in-neighbours (parents),
	// iterated as S ← C·WᵀSW with the diagonal reset to 1, exactly as
	// networkx's simrank_similarity. On a tree two leaves are similar only
	// when they sit at the same depth below a common ancestor.
	VariantJehWidom = "jeh-widom"
	// VariantStar is SimRank* (Yu et al., VLDB 2013):
	// S ← (C/2)(QS + SQᵀ) + (1−C)I with Q the row-normalised parent matrix,
	// which also counts in-link paths of unequal lengths, so leaves at
	// different depths under a common ancestor get a non-zero score. Its
	// diagonal is not 1; the result is rescaled to s(a,b)/√(s(a,a)s(b,b)).
	VariantStar = "star"
	// VariantUndirected is plain SimRank on the undirected graph with a
	// self-loop at every node: each node's neighbours are itself, its parents
	// and its children. The self-loop lets a walk wait, so different depths
	// meet.
	VariantUndirected = "undirected"
)

// MaxSimRankNodes bounds the graphs SimRank accepts: it keeps three dense
// n×n float64 matrices, 2.4 GB at 10000 nodes (ImageNet's WordNet graph has
// about 1900 nodes, NABirds' taxonomy 1011).
const MaxSimRankNodes = 10000

// checkSimRankSize refuses graphs of more than MaxSimRankNodes nodes.
func checkSimRankSize(n int) error {
	if n <= MaxSimRankNodes {
		return nil
	}
	gb := func(n int) string { return fmt.Sprintf("%.1f GB", 3*8*float64(n)*float64(n)/1e9) }
	return fmt.Errorf("the graph has %d nodes; SimRank keeps 3 dense %d×%d float64 matrices (%s), the limit is %d nodes (%s)",
		n, n, n, gb(n), MaxSimRankNodes, gb(MaxSimRankNodes))
}

// SimRankOptions are the iteration settings.
type SimRankOptions struct {
	Decay      float64 // C in (0,1); Jeh & Widom used 0.8, networkx defaults to 0.9
	Iterations int     // maximum number of iterations
	Tolerance  float64 // stop when no entry changes by more than this
	Variant    string  // VariantJehWidom (default), VariantStar, VariantUndirected
	// Progress, if set, gets one unit per iteration.
	Progress Progress
}

// SimRankStats says how the iteration went.
type SimRankStats struct {
	Iterations int     // iterations run
	Delta      float64 // largest change in the last iteration
}

// SimRank computes the node × node SimRank matrix of g (row-major,
// len(g.Nodes)² values). The graph is held sparse (parent lists); the score
// matrix is dense because it is mostly non-zero for the remedies.
func SimRank(ctx context.Context, g *Graph, opt SimRankOptions) ([]float64, SimRankStats, error) {
	if !(opt.Decay > 0 && opt.Decay < 1) {
		return nil, SimRankStats{}, fmt.Errorf("simrank: decay %v must lie strictly between 0 and 1", opt.Decay)
	}
	if opt.Iterations <= 0 {
		return nil, SimRankStats{}, fmt.Errorf("simrank: iterations must be positive, got %d", opt.Iterations)
	}
	if !(opt.Tolerance > 0) {
		return nil, SimRankStats{}, fmt.Errorf("simrank: tolerance must be positive, got %v", opt.Tolerance)
	}
	if err := checkSimRankSize(len(g.Nodes)); err != nil {
		return nil, SimRankStats{}, fmt.Errorf("simrank: %w", err)
	}
	return simrankDense(ctx, g, opt)
}

// simrankDense is SimRank without its size limit (the source checks memory
// against its own limit instead).
func simrankDense(ctx context.Context, g *Graph, opt SimRankOptions) ([]float64, SimRankStats, error) {
	switch opt.Variant {
	case "", VariantJehWidom:
		return simrankSparse(ctx, g.Parents, opt)
	case VariantUndirected:
		ch := g.Children()
		nb := make([][]int, len(g.Nodes))
		for i := range nb {
			nb[i] = append(append([]int{i}, g.Parents[i]...), ch[i]...)
		}
		return simrankPlain(ctx, nb, opt)
	case VariantStar:
		return simrankStar(ctx, g.Parents, opt)
	default:
		return nil, SimRankStats{}, fmt.Errorf("simrank: unknown variant %q (want %s, %s or %s)", opt.Variant, VariantJehWidom, VariantStar, VariantUndirected)
	}
}

// parallelRows runs fn over row ranges on every CPU.
func parallelRows(n int, fn func(lo, hi int)) {
	w := runtime.GOMAXPROCS(0)
	if w > n {
		w = n
	}
	if w <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + w - 1) / w
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer crash.Handle() // a panic here is a bug: one line, a report, exit 70
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// maxAbsDiff returns max |a−b|.
func maxAbsDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		if x := math.Abs(a[i] - b[i]); x > d {
			d = x
		}
	}
	return d
}

// iterate runs step, one iteration of a SimRank fixed point returning the
// largest change of a score, until that change is within opt.Tolerance:
// it checks ctx before each iteration, gives opt.Progress units after each,
// and refuses a fixed point not reached in opt.Iterations (what names the
// variant in the error).
func iterate(ctx context.Context, what string, opt SimRankOptions, units int, step func() float64) (SimRankStats, error) {
	return iterateErr(ctx, what, opt, units, func() (float64, error) { return step(), nil })
}

// iterateErr is iterate with a step that may fail (and end the iteration
// with its error).
func iterateErr(ctx context.Context, what string, opt SimRankOptions, units int, step func() (float64, error)) (SimRankStats, error) {
	var st SimRankStats
	for it := 1; it <= opt.Iterations; it++ {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		d, err := step()
		if err != nil {
			return st, err
		}
		st = SimRankStats{Iterations: it, Delta: d}
		if opt.Progress != nil {
			opt.Progress.Add(units)
		}
		if st.Delta <= opt.Tolerance {
			return st, nil
		}
	}
	return st, fmt.Errorf("%s: not converged after %d iterations (last change %.3g > tolerance %g); raise --iterations or --tolerance", what, opt.Iterations, st.Delta, opt.Tolerance)
}

// maxOf is the largest of ds (0 for none).
func maxOf(ds []float64) float64 {
	m := 0.0
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// meanRows sets dst[a][:] = scale·mean of src's rows over in[a] (0 when a
// has no in-neighbours): the product WᵀX for the column-normalised adjacency
// W, done row by row so every inner loop is contiguous.
func meanRows(dst, src []float64, n int, in [][]int, scale float64) {
	parallelRows(n, func(lo, hi int) {
		for a := lo; a < hi; a++ {
			out := dst[a*n : (a+1)*n]
			ps := in[a]
			if len(ps) == 0 {
				clear(out)
				continue
			}
			copy(out, src[ps[0]*n:(ps[0]+1)*n])
			for _, i := range ps[1:] {
				row := src[i*n : (i+1)*n]
				for b, x := range row {
					out[b] += x
				}
			}
			f := scale / float64(len(ps))
			for b := range out {
				out[b] *= f
			}
		}
	})
}

// transpose writes srcᵀ into dst, in cache-sized blocks.
func transpose(dst, src []float64, n int) {
	const blk = 32
	nb := (n + blk - 1) / blk
	parallelRows(nb, func(lo, hi int) {
		for bi := lo; bi < hi; bi++ {
			i0, i1 := bi*blk, min(bi*blk+blk, n)
			for j0 := 0; j0 < n; j0 += blk {
				j1 := min(j0+blk, n)
				for i := i0; i < i1; i++ {
					for j := j0; j < j1; j++ {
						dst[j*n+i] = src[i*n+j]
					}
				}
			}
		}
	})
}

// simrankPlain iterates S ← C·WᵀSW, diag(S) = 1, where column b of W holds
// 1/|I(b)| at b's in-neighbours I(b). A step is two sparse products of
// O(N·|E|) each: T = S·W (a gather within each row of S, which stays in
// cache) and S' = C·Wᵀ·T (a sum of T's rows), with the convergence check
// fused into the second.
func simrankPlain(ctx context.Context, in [][]int, opt SimRankOptions) ([]float64, SimRankStats, error) {
	n := len(in)
	s := make([]float64, n*n)
	next := make([]float64, n*n)
	t := make([]float64, n*n)
	for i := 0; i < n; i++ {
		s[i*n+i] = 1
	}
	inv := make([]float64, n)
	for i, ps := range in {
		if len(ps) > 0 {
			inv[i] = 1 / float64(len(ps))
		}
	}
	// Flatten the in-neighbour lists (CSC of W) for the gather.
	ptr := make([]int32, n+1)
	var idx []int32
	for b, ps := range in {
		for _, j := range ps {
			idx = append(idx, int32(j))
		}
		ptr[b+1] = int32(len(idx))
	}
	deltas := make([]float64, n)
	st, err := iterate(ctx, "simrank", opt, 1, func() float64 {
		parallelRows(n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				row := s[i*n : (i+1)*n]
				out := t[i*n : (i+1)*n]
				for b := range out {
					sum := 0.0
					for _, j := range idx[ptr[b]:ptr[b+1]] {
						sum += row[j]
					}
					out[b] = sum * inv[b]
				}
			}
		})
		parallelRows(n, func(lo, hi int) {
			for a := lo; a < hi; a++ {
				out := next[a*n : (a+1)*n]
				ps := in[a]
				if len(ps) == 0 {
					clear(out)
				} else {
					copy(out, t[ps[0]*n:(ps[0]+1)*n])
					for _, i := range ps[1:] {
						row := t[i*n : (i+1)*n]
						for b, x := range row {
							out[b] += x
						}
					}
				}
				f := opt.Decay * inv[a]
				old := s[a*n : (a+1)*n]
				d := 0.0
				for b, x := range out {
					x *= f
					out[b] = x
					if e := math.Abs(x - old[b]); e > d && b != a {
						d = e
					}
				}
				out[a] = 1
				deltas[a] = d
			}
		})
		s, next = next, s
		return maxOf(deltas)
	})
	if err != nil {
		return nil, st, err
	}
	return s, st, nil
}

// simrankSparse computes the same iteration as simrankPlain, S ← C·WᵀSW
// with diag(S) = 1, touching only non-zero scores. Plain SimRank grows
// monotonically from S = I, so each row's non-zero pattern only grows, and on
// a hierarchy it stays sparse (16% of ImageNet's DAG pairs at the fixed
// point, fewer before). Each row keeps a dense value array (for O(1) access)
// and a list of its non-zero columns: T = S·W scatters each non-zero S[i][j]
// to j's children, and S' = C·WᵀT sums the sparse rows of T over each
// node's parents.
func simrankSparse(ctx context.Context, in [][]int, opt SimRankOptions) ([]float64, SimRankStats, error) {
	sp := newSparseSimrank(in)
	st, err := iterate(ctx, "simrank", opt, 1, func() float64 {
		sp.scatter()
		d := sp.gather(opt.Decay)
		sp.s, sp.next = sp.next, sp.s
		sp.nzS, sp.nzN = sp.nzN, sp.nzS
		return d
	})
	if err != nil {
		return nil, st, err
	}
	return sp.s, st, nil
}

// sparseSimrank is simrankSparse's state.
type sparseSimrank struct {
	n        int
	in       [][]int   // in-neighbours (parents)
	children [][]int32 // out-neighbours
	inv      []float64 // 1/|I(b)| (0 for a root)
	// Only nodes with children are anyone's parent, so only their rows of
	// T = S·W are ever read: T holds those rows alone (row tRow[i]).
	tRow     []int
	internal []int
	s, next  []float64 // n×n scores, and the next iteration's
	t        []float64 // len(internal)×n
	nzS      [][]int32 // non-zero columns of each row of s
	nzN      [][]int32 // of next (its stale content, cleared before reuse)
	nzT      [][]int32
	deltas   []float64 // per row, the largest change of the last iteration
}

func newSparseSimrank(in [][]int) *sparseSimrank {
	n := len(in)
	sp := &sparseSimrank{n: n, in: in, children: make([][]int32, n), inv: make([]float64, n), tRow: make([]int, n)}
	for b, ps := range in {
		for _, j := range ps {
			sp.children[j] = append(sp.children[j], int32(b))
		}
		if len(ps) > 0 {
			sp.inv[b] = 1 / float64(len(ps))
		}
	}
	for i := range sp.children {
		sp.tRow[i] = -1
		if len(sp.children[i]) > 0 {
			sp.tRow[i] = len(sp.internal)
			sp.internal = append(sp.internal, i)
		}
	}
	sp.s = make([]float64, n*n)
	sp.next = make([]float64, n*n)
	sp.t = make([]float64, len(sp.internal)*n)
	sp.nzS = make([][]int32, n)
	sp.nzN = make([][]int32, n)
	sp.nzT = make([][]int32, len(sp.internal))
	for i := 0; i < n; i++ {
		sp.s[i*n+i] = 1
		sp.nzS[i] = []int32{int32(i)}
	}
	sp.deltas = make([]float64, n)
	return sp
}

// scatter computes T = S·W: each non-zero S[i][j] goes to j's children.
func (sp *sparseSimrank) scatter() {
	n, s, t := sp.n, sp.s, sp.t
	parallelRows(len(sp.internal), func(lo, hi int) {
		mark := make([]bool, n)
		for r := lo; r < hi; r++ {
			i := sp.internal[r]
			row := s[i*n : (i+1)*n]
			trow := t[r*n : (r+1)*n]
			tn := sp.nzT[r][:0]
			for _, j := range sp.nzS[i] {
				x := row[j]
				for _, b := range sp.children[j] {
					if !mark[b] {
						mark[b] = true
						tn = append(tn, b)
						trow[b] = 0
					}
					trow[b] += x * sp.inv[b]
				}
			}
			for _, b := range tn {
				mark[b] = false
			}
			sp.nzT[r] = tn
		}
	})
}

// gather computes next = C·WᵀT, diag 1, summing the sparse rows of T over
// each node's parents, and returns the largest change from s.
func (sp *sparseSimrank) gather(decay float64) float64 {
	n, t, next := sp.n, sp.t, sp.next
	parallelRows(n, func(lo, hi int) {
		mark := make([]bool, n)
		for a := lo; a < hi; a++ {
			nrow := next[a*n : (a+1)*n]
			for _, b := range sp.nzN[a] {
				nrow[b] = 0
			}
			nn := sp.nzN[a][:0]
			f := decay * sp.inv[a]
			switch ps := sp.in[a]; len(ps) {
			case 0: // a root: similar only to itself
				nn = append(nn, int32(a))
			case 1: // most nodes: S'[a] = C·T[parent], no merging needed
				r := sp.tRow[ps[0]]
				trow := t[r*n : (r+1)*n]
				nn = append(nn, sp.nzT[r]...)
				for _, b := range nn {
					nrow[b] = f * trow[b]
				}
			default:
				for _, i := range ps {
					r := sp.tRow[i]
					trow := t[r*n : (r+1)*n]
					for _, b := range sp.nzT[r] {
						if !mark[b] {
							mark[b] = true
							nn = append(nn, b)
						}
						nrow[b] += trow[b]
					}
				}
				for _, b := range nn {
					mark[b] = false
					nrow[b] *= f
				}
			}
			// a is in the pattern: T[p][a] ≥ S[p][p]/|I(a)| > 0 for a parent p.
			nrow[a] = 1
			old := sp.s[a*n : (a+1)*n]
			d := 0.0
			for _, b := range nn {
				if e := math.Abs(nrow[b] - old[b]); e > d {
					d = e
				}
			}
			sp.nzN[a] = nn
			sp.deltas[a] = d
		}
	})
	return maxOf(sp.deltas)
}

// simrankStar iterates S ← (C/2)(QS + (QS)ᵀ) + (1−C)I from S = (1−C)I, with
// Q = Wᵀ the row-normalised parent matrix, then rescales to a unit diagonal.
func simrankStar(ctx context.Context, in [][]int, opt SimRankOptions) ([]float64, SimRankStats, error) {
	n := len(in)
	s := make([]float64, n*n)
	next := make([]float64, n*n)
	p := make([]float64, n*n)
	for i := 0; i < n; i++ {
		s[i*n+i] = 1 - opt.Decay
	}
	st, err := iterate(ctx, "simrank*", opt, 1, func() float64 {
		meanRows(p, s, n, in, opt.Decay/2) // (C/2)·QS
		transpose(next, p, n)
		for i, x := range p {
			next[i] += x
		}
		for i := 0; i < n; i++ {
			next[i*n+i] += 1 - opt.Decay
		}
		s, next = next, s
		return maxAbsDiff(s, next)
	})
	if err != nil {
		return nil, st, err
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = math.Sqrt(s[i*n+i])
	}
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			s[a*n+b] /= d[a] * d[b]
		}
	}
	return s, st, nil
}

// Submatrix picks rows and columns idx of an n×n row-major matrix.
func Submatrix(m []float64, n int, idx []int) []float64 {
	c := len(idx)
	out := make([]float64, c*c)
	for i, a := range idx {
		for j, b := range idx {
			out[i*c+j] = m[a*n+b]
		}
	}
	return out
}

// submatrix32 is Submatrix rounded to float32.
func submatrix32(m []float64, n int, idx []int) []float32 {
	c := len(idx)
	out := make([]float32, c*c)
	for i, a := range idx {
		for j, b := range idx {
			out[i*c+j] = float32(m[a*n+b])
		}
	}
	return out
}

// ZeroShare is the share of off-diagonal pairs (i<j) of a C×C matrix whose
// value is exactly 0.
func ZeroShare[T float32 | float64](m []T, c int) float64 {
	if c < 2 {
		return 0
	}
	zero := 0
	for i := 0; i < c; i++ {
		for j := i + 1; j < c; j++ {
			if m[i*c+j] == 0 {
				zero++
			}
		}
	}
	return float64(zero) / float64(c*(c-1)/2)
}

// simrankClasses computes plain (Jeh–Widom) SimRank between the classes of
// g only, on graphs too large for the dense n×n form. A score
// s(a,b) = C/(|I(a)||I(b)|) Σ s(i,j) reads only pairs of in-neighbours, and
// an in-neighbour is an internal node (one with children), so the fixed
// point on the m internal nodes determines every other pair:
//
//  1. the m×m internal block is iterated in place (Gauss–Seidel), rows in
//     topological order and the rows of one level on every CPU: a row is
//     computed from its parents' rows of the same sweep, so on an acyclic
//     graph the first sweep reaches the fixed point and the second confirms
//     it with no change (the iteration still stops only at Tolerance);
//  2. each class row is then gathered from the block, C×C, in float32.
//
// The block is float64 (ImageNet-21k's WordNet closure has 6,293 internal
// nodes: 317 MB), so the class matrix equals the dense float64 form to
// float32 rounding. Memory: 8m² + 4C² bytes, and one float64 row of m per
// CPU. opt.Progress gets one unit per row computed (block rows, sweep after
// sweep, then class rows).
func simrankClasses(ctx context.Context, g *Graph, classes []int, opt SimRankOptions) ([]float32, SimRankStats, error) {
	b := newSimrankBlock(g)
	st, err := iterateErr(ctx, "simrank", opt, b.m, func() (float64, error) { return b.sweep(ctx, opt.Decay) })
	if err != nil {
		return nil, st, err
	}
	out, err := b.classRows(ctx, classes, opt)
	if err != nil {
		return nil, st, err
	}
	return out, st, nil
}

// simrankBlock is simrankClasses' state: the SimRank scores between the m
// internal nodes of a graph of n nodes.
type simrankBlock struct {
	m        int
	internal []int     // block index → node
	par      [][]int32 // node → its parents, in block indices (every parent is internal)
	inv      []float64 // node → 1/|I(v)| (0 for a root)
	levels   [][]int   // block indices by level (a node's longest path from a root)
	s        []float64 // m×m
	deltas   []float64 // block row → its largest change in the last sweep
	// scratch holds one row of m per CPU.
	scratch chan []float64
}

func newSimrankBlock(g *Graph) *simrankBlock {
	n := len(g.Nodes)
	pos := make([]int, n) // node → index in the internal block, −1 for a leaf
	for v := range pos {
		pos[v] = -1
	}
	b := &simrankBlock{par: make([][]int32, n), inv: make([]float64, n)}
	for _, ps := range g.Parents {
		for _, p := range ps {
			if pos[p] < 0 {
				pos[p] = 0
			}
		}
	}
	for v := range pos {
		if pos[v] == 0 {
			pos[v] = len(b.internal)
			b.internal = append(b.internal, v)
		}
	}
	m := len(b.internal)
	b.m = m
	for v, ps := range g.Parents {
		for _, p := range ps {
			b.par[v] = append(b.par[v], int32(pos[p]))
		}
		if len(ps) > 0 {
			b.inv[v] = 1 / float64(len(ps))
		}
	}
	// Parents lie on lower levels.
	_, level := depths(g)
	for k, v := range b.internal {
		for len(b.levels) <= level[v] {
			b.levels = append(b.levels, nil)
		}
		b.levels[level[v]] = append(b.levels[level[v]], k)
	}
	b.s = make([]float64, m*m)
	for k := 0; k < m; k++ {
		b.s[k*m+k] = 1
	}
	b.deltas = make([]float64, m)
	b.scratch = make(chan []float64, runtime.GOMAXPROCS(0))
	for range cap(b.scratch) {
		b.scratch <- make([]float64, m)
	}
	return b
}

// sumParents sets r = Σ_{p∈I(a)} s[p] over the block's columns, and
// reports whether a has parents.
func (b *simrankBlock) sumParents(r []float64, a int) bool {
	ps, m := b.par[a], b.m
	if len(ps) == 0 {
		return false
	}
	copy(r, b.s[int(ps[0])*m:(int(ps[0])+1)*m])
	for _, p := range ps[1:] {
		row := b.s[int(p)*m : (int(p)+1)*m]
		for q, x := range row {
			r[q] += x
		}
	}
	return true
}

// sweep is one Gauss–Seidel sweep over the block, level by level (the
// rows of a level on every CPU), returning the largest change.
func (b *simrankBlock) sweep(ctx context.Context, decay float64) (float64, error) {
	m := b.m
	for _, rows := range b.levels {
		err := parallelDynamicCtx(ctx, len(rows), func(x int) {
			k := rows[x]
			a := b.internal[k]
			out := b.s[k*m : (k+1)*m]
			r := <-b.scratch
			defer func() { b.scratch <- r }()
			d := 0.0
			if !b.sumParents(r, a) {
				for c := range out {
					if c != k {
						d = max(d, math.Abs(out[c]))
						out[c] = 0
					}
				}
			} else {
				// out[c] = C·inv[a]·inv[v]·Σ_{q∈I(v)} r[q] for node v of column c.
				f := decay * b.inv[a]
				for c, v := range b.internal {
					if c == k {
						continue
					}
					sum := 0.0
					for _, q := range b.par[v] {
						sum += r[q]
					}
					x := f * b.inv[v] * sum
					d = max(d, math.Abs(x-out[c]))
					out[c] = x
				}
			}
			b.deltas[k] = d
		})
		if err != nil {
			return 0, err
		}
	}
	return maxOf(b.deltas), nil
}

// classRows gathers the C×C class matrix, in float32, from the block.
func (b *simrankBlock) classRows(ctx context.Context, classes []int, opt SimRankOptions) ([]float32, error) {
	c := len(classes)
	out := make([]float32, c*c)
	err := parallelDynamicCtx(ctx, c, func(i int) {
		a := classes[i]
		row := out[i*c : (i+1)*c]
		r := <-b.scratch
		defer func() { b.scratch <- r }()
		if b.sumParents(r, a) {
			f := opt.Decay * b.inv[a]
			for j, v := range classes {
				if v == a { // two classes on one node
					row[j] = 1
					continue
				}
				sum := 0.0
				for _, q := range b.par[v] {
					sum += r[q]
				}
				row[j] = float32(f * b.inv[v] * sum)
			}
		}
		row[i] = 1
		if opt.Progress != nil && i%64 == 0 {
			opt.Progress.Add(64)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
