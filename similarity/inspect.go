package similarity

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// Neighbour is one entry of a class's nearest-neighbour list.
type Neighbour struct {
	Index int
	Score float64
}

// Nearest returns the k classes most similar to class i (excluding i),
// highest score first, ties by class index. It keeps only the k best while
// scanning the row (a min-heap), so a 21,843-class row costs O(C log k).
func Nearest[T float32 | float64](data []T, c, i, k int) []Neighbour {
	k = max(min(k, c-1), 0)
	h := make([]Neighbour, 0, k)
	// worse reports whether a ranks below b: lower score, or equal score
	// and a later class.
	worse := func(a, b Neighbour) bool { return a.Score < b.Score || (a.Score == b.Score && a.Index > b.Index) }
	down := func(p int) {
		for {
			l, m := 2*p+1, p
			if l < len(h) && worse(h[l], h[m]) {
				m = l
			}
			if r := l + 1; r < len(h) && worse(h[r], h[m]) {
				m = r
			}
			if m == p {
				return
			}
			h[p], h[m] = h[m], h[p]
			p = m
		}
	}
	for j, x := range data[i*c : (i+1)*c] {
		if j == i || k == 0 {
			continue
		}
		nb := Neighbour{j, float64(x)}
		if len(h) < k {
			h = append(h, nb)
			for p := len(h) - 1; p > 0 && worse(h[p], h[(p-1)/2]); p = (p - 1) / 2 {
				h[p], h[(p-1)/2] = h[(p-1)/2], h[p]
			}
			continue
		}
		if worse(h[0], nb) {
			h[0] = nb
			down(0)
		}
	}
	sort.Slice(h, func(a, b int) bool { return worse(h[b], h[a]) })
	return h
}

// UpperTriangle returns the entries above the diagonal, row by row.
func UpperTriangle[T float32 | float64](data []T, c int) []float64 {
	out := make([]float64, 0, c*(c-1)/2)
	for i := 0; i < c; i++ {
		for _, x := range data[i*c+i+1 : (i+1)*c] {
			out = append(out, float64(x))
		}
	}
	return out
}

// DefaultComparePairs is how many class pairs Compare ranks at most: all of
// a 4,472-class matrix; larger ones are compared on a uniform sample.
const DefaultComparePairs = 10_000_000

// Compare is Spearman's rank correlation between the off-diagonal upper
// triangles of a and b, over pairs class pairs. Both must have as many
// classes and, when both are stored matrices, be of one label set; the
// errors name them by their Label. Matrices with more than
// DefaultComparePairs pairs are compared on that many pairs drawn
// uniformly with a fixed seed (CompareSample says how many; ranking
// ImageNet-21k's 238 M pairs would take about 10 GB).
func Compare(a, b *Matrix) (rho float64, pairs int, err error) {
	return CompareSample(a, b, DefaultComparePairs)
}

// CompareSample is Compare over at most maxPairs pairs (≤ 0: all of them).
func CompareSample(a, b *Matrix, maxPairs int) (rho float64, pairs int, err error) {
	if a.N() != b.N() {
		return 0, 0, fmt.Errorf("%s has %d classes, %s has %d", a.Label, a.N(), b.Label, b.N())
	}
	if a.LabelSet != "" && b.LabelSet != "" && a.LabelSet != b.LabelSet {
		return 0, 0, fmt.Errorf("%s is a matrix of %s, %s of %s", a.Label, a.LabelSet, b.Label, b.LabelSet)
	}
	c := a.N()
	all := c * (c - 1) / 2
	if maxPairs <= 0 || all <= maxPairs {
		rho, err = Spearman(UpperTriangle(a.Data, c), UpperTriangle(b.Data, c))
		return rho, all, err
	}
	rng := rand.New(rand.NewPCG(1, uint64(c)))
	x, y := make([]float64, maxPairs), make([]float64, maxPairs)
	for k := range x {
		i, j := rng.IntN(c), rng.IntN(c-1)
		if j >= i {
			j++
		}
		x[k], y[k] = float64(a.Data[i*c+j]), float64(b.Data[i*c+j])
	}
	rho, err = Spearman(x, y)
	return rho, maxPairs, err
}

// Spearman is Spearman's rank correlation of x and y (average ranks for
// ties). It is NaN when either has no variance.
func Spearman(x, y []float64) (float64, error) {
	if len(x) != len(y) {
		return 0, fmt.Errorf("spearman: %d values against %d", len(x), len(y))
	}
	if len(x) < 2 {
		return 0, fmt.Errorf("spearman: need at least 2 pairs, got %d", len(x))
	}
	rx, ry := ranks(x), ranks(y)
	return pearson(rx, ry), nil
}

func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}

func pearson(x, y []float64) float64 {
	n := float64(len(x))
	mx, my := 0.0, 0.0
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= n
	my /= n
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// Eigenvalues returns the eigenvalues of the symmetric matrix, largest
// first (the paper's Figure 4 plots this spectrum).
func Eigenvalues[T float32 | float64](data []T, c int) ([]float64, error) {
	sym := mat.NewSymDense(c, nil)
	for i := 0; i < c; i++ {
		for j := i; j < c; j++ {
			sym.SetSym(i, j, float64(data[i*c+j]))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, false) {
		return nil, fmt.Errorf("eigen-decomposition of the %d×%d matrix did not converge", c, c)
	}
	v := eig.Values(nil)
	sort.Sort(sort.Reverse(sort.Float64Slice(v)))
	return v, nil
}

// ClusterOrder orders the classes by average-linkage (UPGMA) hierarchical
// clustering on the dissimilarity 1−s, listing the leaves of the dendrogram
// left to right so similar classes sit next to each other (the paper's
// Figure 2). At each merge the older cluster goes left, which makes the order
// deterministic.
func ClusterOrder[T float32 | float64](data []T, c int) []int {
	if c == 0 {
		return nil
	}
	type cluster struct {
		members []int
	}
	clusters := make([]*cluster, c)
	d := make([][]float64, c) // distances between live clusters, by slot
	for i := 0; i < c; i++ {
		clusters[i] = &cluster{members: []int{i}}
		d[i] = make([]float64, c)
		for j := 0; j < c; j++ {
			d[i][j] = 1 - (float64(data[i*c+j])+float64(data[j*c+i]))/2
		}
	}
	alive := make([]bool, c)
	for i := range alive {
		alive[i] = true
	}
	for left := c; left > 1; left-- {
		bi, bj, best := -1, -1, math.Inf(1)
		for i := 0; i < c; i++ {
			if !alive[i] {
				continue
			}
			for j := i + 1; j < c; j++ {
				if alive[j] && d[i][j] < best {
					bi, bj, best = i, j, d[i][j]
				}
			}
		}
		ni, nj := float64(len(clusters[bi].members)), float64(len(clusters[bj].members))
		for k := 0; k < c; k++ {
			if alive[k] && k != bi && k != bj {
				x := (ni*d[bi][k] + nj*d[bj][k]) / (ni + nj)
				d[bi][k], d[k][bi] = x, x
			}
		}
		clusters[bi].members = append(clusters[bi].members, clusters[bj].members...)
		alive[bj] = false
	}
	for i := range alive {
		if alive[i] {
			return clusters[i].members
		}
	}
	return nil
}
