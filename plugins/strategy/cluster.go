package strategy

import (
	"math"
	"sort"
)

// Subset ranks of CurriculumNet's split, easiest first.
const (
	Clean     = 0
	Noisy     = 1
	VeryNoisy = 2
)

// Densities returns CurriculumNet's local density of each of n points
// (rows of x, each of dimension dim) and the cutoff used:
//
//	d_ij = ‖x_i − x_j‖ (Euclidean), over all n² ordered pairs, self-pairs included;
//	d_c  = the element at index ⌊pct·n²⌋ of the n² distances sorted ascending
//	       (pct = 0.6 in the paper; the index is clamped to n²−1);
//	ρ_i  = #{j : d_ij < d_c} − 1   (the −1 drops the point itself).
//
// This follows the authors' public clustering code; with d_c = 0 (all points
// equal) every ρ is −1 and the class stays one cluster.
func Densities(x []float32, n, dim int, pct float64) (rho []int, cutoff float64) {
	d := make([]float64, n*n)
	for i := 0; i < n; i++ {
		xi := x[i*dim : (i+1)*dim]
		for j := i + 1; j < n; j++ {
			xj := x[j*dim : (j+1)*dim]
			s := 0.0
			for k := range xi {
				t := float64(xi[k]) - float64(xj[k])
				s += t * t
			}
			s = math.Sqrt(s)
			d[i*n+j], d[j*n+i] = s, s
		}
	}
	sorted := append([]float64(nil), d...)
	sort.Float64s(sorted)
	k := int(pct * float64(n*n))
	k = min(max(k, 0), n*n-1)
	cutoff = sorted[k]
	rho = make([]int, n)
	for i := 0; i < n; i++ {
		cnt := 0
		for _, v := range d[i*n : (i+1)*n] {
			if v < cutoff {
				cnt++
			}
		}
		rho[i] = cnt - 1
	}
	return rho, cutoff
}

// DensitySubsets clusters densities into k groups with one-dimensional
// k-means and returns each point's rank: 0 for the cluster with the highest
// centre (clean), up to k−1 for the lowest (very noisy).
//
// The original runs sklearn's KMeans (random k-means++ starts, a local
// optimum). Here the k-means objective (within-cluster sum of squares) is
// minimised exactly by dynamic programming over the sorted distinct values,
// which is deterministic and never worse. With fewer distinct densities than
// k, each distinct value is its own cluster, ranked from densest down (so a
// class whose points are all alike is all clean).
func DensitySubsets(rho []int, k int) []int {
	n := len(rho)
	rank := make([]int, n)
	if n == 0 {
		return rank
	}
	// Distinct values (ascending) with their counts.
	sorted := append([]int(nil), rho...)
	sort.Ints(sorted)
	var vals []float64
	var cnt []float64
	for i, v := range sorted {
		if i == 0 || v != sorted[i-1] {
			vals = append(vals, float64(v))
			cnt = append(cnt, 0)
		}
		cnt[len(cnt)-1]++
	}
	m := len(vals)
	index := func(v int) int { return sort.SearchFloat64s(vals, float64(v)) }
	if m <= k {
		for i, v := range rho {
			rank[i] = m - 1 - index(v)
		}
		return rank
	}
	// Prefix sums of weights, weighted values and weighted squares.
	w := make([]float64, m+1)
	s1 := make([]float64, m+1)
	s2 := make([]float64, m+1)
	for i := 0; i < m; i++ {
		w[i+1] = w[i] + cnt[i]
		s1[i+1] = s1[i] + cnt[i]*vals[i]
		s2[i+1] = s2[i] + cnt[i]*vals[i]*vals[i]
	}
	// sse(a, b): within-cluster sum of squares of distinct values a..b-1.
	sse := func(a, b int) float64 {
		ww, ss := w[b]-w[a], s1[b]-s1[a]
		return s2[b] - s2[a] - ss*ss/ww
	}
	// cost[j][b]: best cost of splitting values 0..b-1 into j+1 clusters;
	// from[j][b]: where the last of them starts.
	cost := make([][]float64, k)
	from := make([][]int, k)
	for j := range cost {
		cost[j] = make([]float64, m+1)
		from[j] = make([]int, m+1)
		for b := range cost[j] {
			cost[j][b] = math.Inf(1)
		}
	}
	for b := 1; b <= m; b++ {
		cost[0][b] = sse(0, b)
	}
	for j := 1; j < k; j++ {
		for b := j + 1; b <= m; b++ {
			for a := j; a < b; a++ {
				if c := cost[j-1][a] + sse(a, b); c < cost[j][b] {
					cost[j][b], from[j][b] = c, a
				}
			}
		}
	}
	// Walk back: cluster of each distinct value, 0 = lowest densities.
	cluster := make([]int, m)
	b := m
	for j := k - 1; j >= 0; j-- {
		a := 0
		if j > 0 {
			a = from[j][b]
		}
		for i := a; i < b; i++ {
			cluster[i] = j
		}
		b = a
	}
	for i, v := range rho {
		rank[i] = k - 1 - cluster[index(v)]
	}
	return rank
}
