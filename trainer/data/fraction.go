package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Fraction returns the paper's data reduction (DR) of a training split: a
// class-stratified subset in which each class c with n_c examples keeps
// round(frac·n_c) of them, at least one, chosen at random from seed. The
// indices are returned in ascending order; frac = 1 returns every index.
// The same (data set, frac, seed) always gives the same subset, and a
// smaller fraction does not in general give a subset of a larger one. Test
// splits are never reduced: evaluate on the whole test split.
func Fraction(ds Dataset, frac float64, seed int64) ([]int, error) {
	if !(frac > 0 && frac <= 1) {
		return nil, fmt.Errorf("data: fraction %v: want 0 < fraction <= 1", frac)
	}
	n, k := ds.Len(), ds.NumClasses()
	byClass := make([][]int, k)
	for i := range n {
		l := ds.Label(i)
		if l < 0 || l >= k {
			return nil, fmt.Errorf("data: fraction: example %d: label %d out of range 0..%d", i, l, k-1)
		}
		byClass[l] = append(byClass[l], i)
	}
	if frac == 1 {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	var out []int
	for c, idx := range byClass {
		if len(idx) == 0 {
			continue
		}
		keep := max(1, int(math.Round(frac*float64(len(idx)))))
		// One stream per class, so a class's subset does not depend on the others.
		rng := rand.New(rand.NewPCG(mix(uint64(seed), 0x4652414354494f4e), uint64(c)))
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		out = append(out, idx[:keep]...)
	}
	slices.Sort(out)
	return out, nil
}

// mix is SplitMix64's finaliser over a^b·φ: it turns (seed, epoch, index)
// tuples into well-spread, independent PCG seeds.
func mix(a, b uint64) uint64 {
	z := a ^ (b * 0x9e3779b97f4a7c15)
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
