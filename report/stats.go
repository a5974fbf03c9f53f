package report

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Ranks ranks the methods (columns) within each block (row) of scores: the
// highest score gets rank 1; ties share the average of the ranks they span,
// as in Demšar (2006), section 3.2.2.
func Ranks(scores [][]float64) [][]float64 {
	out := make([][]float64, len(scores))
	for i, row := range scores {
		idx := make([]int, len(row))
		for j := range idx {
			idx[j] = j
		}
		sort.SliceStable(idx, func(a, b int) bool { return row[idx[a]] > row[idx[b]] })
		ranks := make([]float64, len(row))
		for a := 0; a < len(idx); {
			b := a
			for b+1 < len(idx) && row[idx[b+1]] == row[idx[a]] {
				b++
			}
			avg := float64(a+b)/2 + 1
			for c := a; c <= b; c++ {
				ranks[idx[c]] = avg
			}
			a = b + 1
		}
		out[i] = ranks
	}
	return out
}

// Friedman is the Friedman test over N blocks and k methods with the
// Iman–Davenport correction and the Nemenyi critical difference (Demšar
// 2006, sections 3.2.2 and 3.2.3).
type Friedman struct {
	N, K     int
	AvgRanks []float64
	// ChiSq is Friedman's χ²_F with k−1 degrees of freedom; ChiSqP its p-value.
	ChiSq, ChiSqP float64
	// FF is Iman and Davenport's F_F with (k−1, (k−1)(N−1)) degrees of
	// freedom; FFP its p-value and FCrit the critical value at Alpha.
	FF, FFP, FCrit float64
	DF1, DF2       float64
	// Alpha is the significance level of FCrit, Q and CD.
	Alpha float64
	// Q is q_α of the Nemenyi test (the studentized range statistic for k
	// means and infinite degrees of freedom, divided by √2) and CD the
	// critical difference of average ranks, q_α·√(k(k+1)/(6N)).
	Q, CD float64
	// MinP is (k!)^(1−N), the exact probability under equal performance
	// that all N blocks rank the methods alike: the smallest p-value any
	// rank test of these N blocks can reach (Friedman's χ²_F is largest
	// exactly then).
	MinP float64
	// Unanimous says every block ranks the methods alike (no ties): F_F's
	// denominator is 0, so FF is +Inf, and FFP is MinP, that event's exact
	// probability, instead of the F distribution's 0.
	Unanimous bool
}

// TooFewBlocks reports whether N blocks cannot show a difference between
// the K methods at Alpha at all: even identical rankings in every block
// are at least that likely (MinP ≥ Alpha), so a "significant" F_F or
// χ²_F there would be the asymptotic distributions' artefact.
func (f Friedman) TooFewBlocks() bool { return f.MinP >= f.Alpha }

// Significant reports whether the Iman–Davenport test rejects equal
// performance at Alpha; never with too few blocks.
func (f Friedman) Significant() bool { return !f.TooFewBlocks() && f.FFP < f.Alpha }

// FriedmanTest runs the test on scores[block][method] (higher is better).
func FriedmanTest(scores [][]float64, alpha float64) (Friedman, error) {
	n := len(scores)
	if n < 2 {
		return Friedman{}, fmt.Errorf("friedman: need at least 2 blocks, got %d", n)
	}
	k := len(scores[0])
	if k < 2 {
		return Friedman{}, fmt.Errorf("friedman: need at least 2 methods, got %d", k)
	}
	for i, row := range scores {
		if len(row) != k {
			return Friedman{}, fmt.Errorf("friedman: block %d has %d scores, want %d", i, len(row), k)
		}
	}
	ranks := Ranks(scores)
	avg := make([]float64, k)
	for _, row := range ranks {
		for j, r := range row {
			avg[j] += r / float64(n)
		}
	}
	return FriedmanFromRanks(avg, n, alpha)
}

// FriedmanFromRanks runs the test from the methods' average ranks over n blocks.
func FriedmanFromRanks(avg []float64, n int, alpha float64) (Friedman, error) {
	k := len(avg)
	if n < 2 || k < 2 {
		return Friedman{}, fmt.Errorf("friedman: need at least 2 blocks and 2 methods, got %d and %d", n, k)
	}
	N, K := float64(n), float64(k)
	var sumSq float64
	for _, r := range avg {
		sumSq += r * r
	}
	chi := 12 * N / (K * (K + 1)) * (sumSq - K*(K+1)*(K+1)/4)
	if chi < 0 { // rounding when every method has the same average rank
		chi = 0
	}
	lg, _ := math.Lgamma(K + 1)
	f := Friedman{N: n, K: k, AvgRanks: avg, ChiSq: chi, Alpha: alpha,
		DF1: K - 1, DF2: (K - 1) * (N - 1), MinP: math.Exp(-(N - 1) * lg)}
	f.ChiSqP = distuv.ChiSquared{K: K - 1}.Survival(chi)
	fDist := distuv.F{D1: f.DF1, D2: f.DF2}
	f.FCrit = fDist.Quantile(1 - alpha)
	if denom := N*(K-1) - chi; denom > 1e-12 {
		f.FF = (N - 1) * chi / denom
		f.FFP = fDist.Survival(f.FF)
	} else {
		// Every block ranks the methods identically: the statistic is
		// unbounded, and the F distribution's p = 0 says nothing; the
		// event's exact probability is its p-value.
		f.FF, f.FFP, f.Unanimous = math.Inf(1), f.MinP, true
	}
	q, err := NemenyiQ(k, alpha)
	if err != nil {
		return f, err
	}
	f.Q = q
	f.CD = q * math.Sqrt(K*(K+1)/(6*N))
	return f, nil
}

// NemenyiQ returns q_α for comparing k methods with the Nemenyi test: the
// 1−α quantile of the studentized range of k independent standard normals
// (infinite degrees of freedom) divided by √2. It is computed, not looked up:
// P(range ≤ w) = k ∫ φ(z) [Φ(z) − Φ(z−w)]^(k−1) dz, integrated numerically
// and inverted by bisection. The unit test checks it against Demšar (2006),
// Table 5(a), which gives e.g. 2.569 for k = 4 and 3.164 for k = 10 at α = 0.05.
func NemenyiQ(k int, alpha float64) (float64, error) {
	if k < 2 {
		return 0, fmt.Errorf("nemenyi: need at least 2 methods, got %d", k)
	}
	if !(alpha > 0 && alpha < 1) {
		return 0, fmt.Errorf("nemenyi: alpha %v not in (0, 1)", alpha)
	}
	target := 1 - alpha
	lo, hi := 0.0, 20.0
	for range 50 {
		mid := (lo + hi) / 2
		if rangeCDF(mid, k) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2 / math.Sqrt2, nil
}

// rangeCDF is P(max−min ≤ w) for k iid standard normals, by Simpson's rule.
func rangeCDF(w float64, k int) float64 {
	norm := distuv.UnitNormal
	const a, b, n = -9.0, 9.0, 1800 // even n; φ is negligible outside [−9, 9]
	h := (b - a) / n
	f := func(z float64) float64 {
		d := norm.CDF(z) - norm.CDF(z-w)
		return norm.Prob(z) * math.Pow(d, float64(k-1))
	}
	sum := f(a) + f(b)
	for i := 1; i < n; i++ {
		c := 2.0
		if i%2 == 1 {
			c = 4
		}
		sum += c * f(a+float64(i)*h)
	}
	return float64(k) * sum * h / 3
}

// Paired is a paired comparison of a method against a baseline over seeds.
type Paired struct {
	N int
	// Diff is the mean of method − baseline over the pairs; SD their standard deviation.
	Diff, SD float64
	// T is the paired t statistic with N−1 degrees of freedom and P its two-sided p-value.
	T, P float64
}

// ErrTooFewPairs means a paired test needs at least two pairs.
var ErrTooFewPairs = errors.New("paired t-test: need at least 2 pairs")

// PairedT runs the two-sided paired t-test of a against b (same length, paired by index).
func PairedT(a, b []float64) (Paired, error) {
	if len(a) != len(b) {
		return Paired{}, fmt.Errorf("paired t-test: %d values against %d", len(a), len(b))
	}
	n := len(a)
	if n < 2 {
		return Paired{N: n}, ErrTooFewPairs
	}
	d := make([]float64, n)
	for i := range a {
		d[i] = a[i] - b[i]
	}
	mean, sd := meanSD(d)
	p := Paired{N: n, Diff: mean, SD: sd}
	switch {
	case sd == 0 && mean == 0:
		// Identical pairs: t is 0/0, undefined (scipy.stats.ttest_rel gives
		// NaN too); the report prints "–".
		p.T, p.P = math.NaN(), math.NaN()
	case sd == 0:
		p.T, p.P = math.Copysign(math.Inf(1), mean), 0
	default:
		p.T = mean / (sd / math.Sqrt(float64(n)))
		p.P = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Survival(math.Abs(p.T))
	}
	return p, nil
}

// meanSD returns the mean and the sample standard deviation (n−1); the
// deviation of a single value is 0.
func meanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}
