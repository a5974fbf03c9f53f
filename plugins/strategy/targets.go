package strategy

import (
	"fmt"
	"math"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// OneHot returns the C×C identity: every class's target is itself (rows
// computed as they are sent).
func OneHot(c int) *sdk.Matrix {
	return sdk.NewRowMatrix(c, c, func(i int, dst []float32) {
		clear(dst)
		dst[i] = 1
	})
}

// Smoothed returns the label-smoothing targets (1−α)·onehot + α/C (rows
// computed as they are sent: a 21,843-class LS plan is never held whole).
func Smoothed(c int, alpha float64) *sdk.Matrix {
	off := float32(alpha / float64(c))
	diag := float32(1 - alpha + alpha/float64(c))
	return sdk.NewRowMatrix(c, c, func(i int, dst []float32) {
		for j := range dst {
			dst[j] = off
		}
		dst[i] = diag
	})
}

// CheckSimilarity checks that s is a C×C matrix of finite, non-negative
// values whose every row has a positive sum, as LCL's normalisation needs.
func CheckSimilarity(s *sdk.Matrix, c int) error {
	_, err := rowSums(s, c)
	return err
}

// rowSums checks s as CheckSimilarity does and returns its row sums
// (float64, in column order).
func rowSums(s *sdk.Matrix, c int) ([]float64, error) {
	if err := sdk.ValidateSimilarity(s, c); err != nil {
		return nil, err
	}
	sums := make([]float64, c)
	row := make([]float32, c)
	for i := 0; i < c; i++ {
		sum := 0.0
		for j, v := range s.RowInto(i, row) {
			if v < 0 {
				return nil, fmt.Errorf("s[%d][%d] = %g is negative; LCL needs non-negative similarities (clip them, or pass --param clip-negative=true)", i, j, v)
			}
			sum += float64(v)
		}
		if sum <= 0 {
			return nil, fmt.Errorf("row %d of the similarity matrix sums to 0", i)
		}
		sums[i] = sum
	}
	return sums, nil
}

// lclTargets computes LCL's targets from a similarity matrix row by row, in
// the float64 arithmetic of LCLTargets(LCLInitial(Float64(s))) and rounded
// once: v(0) is never stored, and a plan is a Fill matrix over s, so the
// plugin holds one C×C matrix (s) however many epochs it plans.
type lclTargets struct {
	s    *sdk.Matrix
	sum  []float64 // Σ_k s(c,k)
	rest []float64 // Σ_{k≠c} v0(c,k), the off-target mass of v(0)
}

// newLCLTargets checks s (CheckSimilarity) and prepares its rows.
func newLCLTargets(s *sdk.Matrix, c int) (*lclTargets, error) {
	sums, err := rowSums(s, c)
	if err != nil {
		return nil, err
	}
	l := &lclTargets{s: s, sum: sums, rest: make([]float64, c)}
	row := make([]float32, c)
	for i := 0; i < c; i++ {
		rest := 0.0
		for k, x := range s.RowInto(i, row) {
			if k != i {
				rest += float64(x) / sums[i]
			}
		}
		l.rest[i] = rest
	}
	return l, nil
}

// at is v(t) after t updates, as a Fill matrix (safe for concurrent rows).
func (l *lclTargets) at(eps float64, t int) *sdk.Matrix {
	c := len(l.sum)
	return sdk.NewRowMatrix(c, c, func(i int, dst []float32) {
		src := l.s.RowInto(i, dst) // dst may be overwritten below: read first
		sum, rest := l.sum[i], l.rest[i]
		if t == 0 || rest <= 0 {
			for j, x := range src {
				dst[j] = float32(float64(x) / sum)
			}
			return
		}
		rt := lclRest(rest, eps, t)
		f := rt / rest
		for j, x := range src {
			dst[j] = float32(float64(x) / sum * f)
		}
		dst[i] = float32(1 - rt)
	})
}

// Matrix64 is a square float64 matrix, row-major: the exact arithmetic of
// LCL's targets for tests and tools (plans travel as float32).
type Matrix64 struct {
	N    int
	Data []float64
}

// Float64 is s in float64.
func Float64(s *sdk.Matrix) *Matrix64 {
	m := &Matrix64{N: s.Rows, Data: make([]float64, s.Rows*s.Cols)}
	for i := 0; i < s.Rows; i++ {
		for j, x := range s.Row(i) {
			m.Data[i*s.Cols+j] = float64(x)
		}
	}
	return m
}

// At returns element (i, j).
func (m *Matrix64) At(i, j int) float64 { return m.Data[i*m.N+j] }

// Row returns row i, sharing storage.
func (m *Matrix64) Row(i int) []float64 { return m.Data[i*m.N : (i+1)*m.N] }

// Clone returns a copy.
func (m *Matrix64) Clone() *Matrix64 {
	return &Matrix64{N: m.N, Data: append([]float64(nil), m.Data...)}
}

// LCLInitial returns v(0): every row of s divided by its sum,
// v(0)[c][j] = s(c,j) / Σ_k s(c,k). s must pass CheckSimilarity.
func LCLInitial(s *Matrix64) *Matrix64 {
	v := s.Clone()
	for i := 0; i < v.N; i++ {
		row := v.Row(i)
		sum := 0.0
		for _, x := range row {
			sum += x
		}
		for j := range row {
			row[j] /= sum
		}
	}
	return v
}

// LCLStep applies the paper's update once to every row of v, in place:
//
//	v_c ← 1/(1+ε·Σ_{k≠c} v_k),  v_j ← ε·v_j/(1+ε·Σ_{k≠c} v_k)  (j ≠ c)
//
// where c is the row's own class (the diagonal). This is the literal rule;
// LCLTargets computes the same result in closed form.
func LCLStep(v *Matrix64, eps float64) {
	for c := 0; c < v.N; c++ {
		row := v.Row(c)
		rest := 0.0
		for k, x := range row {
			if k != c {
				rest += x
			}
		}
		den := 1 + eps*rest
		for j := range row {
			if j == c {
				row[j] = 1 / den
			} else {
				row[j] = eps * row[j] / den
			}
		}
	}
}

// LCLTargets returns v(t), the targets after t updates of v(0) = LCLInitial(s).
//
// Closed form: each update keeps the off-target shape q_j = v_j/R (R = Σ_{k≠c}
// v_k = 1 − v_c) and maps R ↦ εR/(1+εR), i.e. u = 1/R ↦ u/ε + 1, so
// u(t) = ε^−t·u(0) + Σ_{i<t} ε^−i. Computing it this way costs O(C²) for any t
// (per-step mode asks for t in the hundreds of thousands) and is what the
// tests compare against t applications of LCLStep.
func LCLTargets(v0 *Matrix64, eps float64, t int) *Matrix64 {
	v := v0.Clone()
	if t == 0 {
		return v
	}
	for c := 0; c < v.N; c++ {
		row := v.Row(c)
		rest := 0.0
		for k, x := range row {
			if k != c {
				rest += x
			}
		}
		if rest <= 0 {
			continue // already one-hot
		}
		rt := lclRest(rest, eps, t)
		for j := range row {
			if j == c {
				row[j] = 1 - rt
			} else {
				row[j] *= rt / rest
			}
		}
	}
	return v
}

// lclRest is the off-target mass after t updates starting from r.
func lclRest(r, eps float64, t int) float64 {
	if eps == 0 {
		return 0
	}
	if t <= 64 {
		// Iterate exactly for the epochs users look at, so per-epoch plans
		// equal the literal rule to the last bit.
		for i := 0; i < t; i++ {
			r = eps * r / (1 + eps*r)
		}
		return r
	}
	var u float64
	if eps == 1 {
		u = 1/r + float64(t)
	} else {
		g := math.Pow(eps, -float64(t)) // ε^−t, +Inf for huge t: then R = 0
		u = g/r + geomSum(eps, t)
	}
	if math.IsInf(u, 1) {
		return 0
	}
	return 1 / u
}

// geomSum returns Σ_{i=0}^{t−1} ε^−i = (ε^−t − 1)/(ε^−1 − 1).
func geomSum(eps float64, t int) float64 {
	g := math.Pow(eps, -float64(t))
	return (g - 1) / (1/eps - 1)
}

// Entropy returns the Shannon entropy (nats) of a probability vector.
func Entropy[T float32 | float64](p []T) float64 {
	h := 0.0
	for _, x := range p {
		if x > 0 {
			h -= float64(x) * math.Log(float64(x))
		}
	}
	return h
}

// TargetStats returns the mean row entropy (nats) and the mean true-class
// mass (the diagonal) of a C×C target matrix.
func TargetStats(v *sdk.Matrix) (entropy, trueMass float64) {
	row := make([]float32, v.Cols)
	for c := 0; c < v.Rows; c++ {
		r := v.RowInto(c, row)
		entropy += Entropy(r)
		trueMass += float64(r[c])
	}
	n := float64(v.Rows)
	return entropy / n, trueMass / n
}
