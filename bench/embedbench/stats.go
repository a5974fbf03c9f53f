package main

import (
	"math"
	"sort"
)

// ranks returns average ranks (ties share the mean of their positions), as
// scipy.stats.rankdata's default.
func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { return x[idx[i]] < x[idx[j]] })
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

func pearson(a, b []float64) float64 {
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma /= float64(len(a))
	mb /= float64(len(b))
	var sab, saa, sbb float64
	for i := range a {
		da, db := a[i]-ma, b[i]-mb
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	return sab / math.Sqrt(saa*sbb)
}

func spearman(a, b []float64) float64 { return pearson(ranks(a), ranks(b)) }

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// pairCosines returns the cosines of all pairs i<j, in row order.
func pairCosines(vecs [][]float32) []float64 {
	var out []float64
	for i := range vecs {
		for j := i + 1; j < len(vecs); j++ {
			out = append(out, cosine(vecs[i], vecs[j]))
		}
	}
	return out
}

// tfidf returns, for the documents picked, sparse tf·log(N/df) vectors
// whose document frequencies are counted over the whole corpus, and the
// cosines of all their pairs.
func tfidfCosines(corpus [][]string, picked []int) []float64 {
	df := map[string]int{}
	for _, d := range corpus {
		seen := map[string]bool{}
		for _, w := range d {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	n := float64(len(corpus))
	vecs := make([]map[string]float64, len(picked))
	norms := make([]float64, len(picked))
	for k, i := range picked {
		v := map[string]float64{}
		for _, w := range corpus[i] {
			v[w]++
		}
		for w, tf := range v {
			v[w] = tf * math.Log(n/float64(df[w]))
			norms[k] += v[w] * v[w]
		}
		norms[k] = math.Sqrt(norms[k])
		vecs[k] = v
	}
	var out []float64
	for i := range vecs {
		for j := i + 1; j < len(vecs); j++ {
			var s float64
			a, b := vecs[i], vecs[j]
			if len(a) > len(b) {
				a, b = b, a
			}
			for w, x := range a {
				s += x * b[w]
			}
			if norms[i] > 0 && norms[j] > 0 {
				s /= norms[i] * norms[j]
			}
			out = append(out, s)
		}
	}
	return out
}
