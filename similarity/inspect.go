package similarity

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// Neighbour is one entry of a class's nearest-neighbour list.
type Neighbour struct {
	Index int
	Score float64
}

// Nearest returns the k classes most similar to class i (excluding i),
// highest score first, ties by class index.
func Nearest(data []float64, c, i, k int) []Neighbour {
	out := make([]Neighbour, 0, c-1)
	for j := 0; j < c; j++ {
		if j != i {
			out = append(out, Neighbour{j, data[i*c+j]})
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Score > out[b].Score })
	if k < len(out) {
		out = out[:k]
	}
	return out
}

// UpperTriangle returns the entries above the diagonal, row by row.
func UpperTriangle(data []float64, c int) []float64 {
	out := make([]float64, 0, c*(c-1)/2)
	for i := 0; i < c; i++ {
		out = append(out, data[i*c+i+1:(i+1)*c]...)
	}
	return out
}

// Compare is Spearman's rank correlation between the off-diagonal upper
// triangles of a and b, over pairs class pairs. Both must have as many
// classes and, when both are stored matrices, be of one label set; the
// errors name them by their Label.
func Compare(a, b *Matrix) (rho float64, pairs int, err error) {
	if a.N() != b.N() {
		return 0, 0, fmt.Errorf("%s has %d classes, %s has %d", a.Label, a.N(), b.Label, b.N())
	}
	if a.LabelSet != "" && b.LabelSet != "" && a.LabelSet != b.LabelSet {
		return 0, 0, fmt.Errorf("%s is a matrix of %s, %s of %s", a.Label, a.LabelSet, b.Label, b.LabelSet)
	}
	rho, err = Spearman(UpperTriangle(a.Data, a.N()), UpperTriangle(b.Data, b.N()))
	return rho, a.N() * (a.N() - 1) / 2, err
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
func Eigenvalues(data []float64, c int) ([]float64, error) {
	sym := mat.NewSymDense(c, nil)
	for i := 0; i < c; i++ {
		for j := i; j < c; j++ {
			sym.SetSym(i, j, data[i*c+j])
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
func ClusterOrder(data []float64, c int) []int {
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
			d[i][j] = 1 - (data[i*c+j]+data[j*c+i])/2
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
