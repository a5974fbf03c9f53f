package strategy

import (
	"fmt"
	"math"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// OneHot returns the C×C identity: every class's target is itself.
func OneHot(c int) *sdk.Matrix {
	m := sdk.NewMatrix(c, c)
	for i := 0; i < c; i++ {
		m.Set(i, i, 1)
	}
	return m
}

// Smoothed returns the label-smoothing targets (1−α)·onehot + α/C.
func Smoothed(c int, alpha float64) *sdk.Matrix {
	m := sdk.NewMatrix(c, c)
	for i := range m.Data {
		m.Data[i] = alpha / float64(c)
	}
	for i := 0; i < c; i++ {
		m.Set(i, i, 1-alpha+alpha/float64(c))
	}
	return m
}

// CheckSimilarity checks that s is a C×C matrix of finite, non-negative
// values whose every row has a positive sum, as LCL's normalisation needs.
func CheckSimilarity(s *sdk.Matrix, c int) error {
	if err := sdk.ValidateSimilarity(s, c); err != nil {
		return err
	}
	for i := 0; i < c; i++ {
		sum := 0.0
		for j, v := range s.Row(i) {
			if v < 0 {
				return fmt.Errorf("s[%d][%d] = %g is negative; LCL needs non-negative similarities (clip them, or pass --param clip-negative=true)", i, j, v)
			}
			sum += v
		}
		if sum <= 0 {
			return fmt.Errorf("row %d of the similarity matrix sums to 0", i)
		}
	}
	return nil
}

// LCLInitial returns v(0): every row of s divided by its sum,
// v(0)[c][j] = s(c,j) / Σ_k s(c,k). s must pass CheckSimilarity.
func LCLInitial(s *sdk.Matrix) *sdk.Matrix {
	v := s.Clone()
	for i := 0; i < v.Rows; i++ {
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
func LCLStep(v *sdk.Matrix, eps float64) {
	for c := 0; c < v.Rows; c++ {
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
func LCLTargets(v0 *sdk.Matrix, eps float64, t int) *sdk.Matrix {
	v := v0.Clone()
	if t == 0 {
		return v
	}
	for c := 0; c < v.Rows; c++ {
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
func Entropy(p []float64) float64 {
	h := 0.0
	for _, x := range p {
		if x > 0 {
			h -= x * math.Log(x)
		}
	}
	return h
}

// TargetStats returns the mean row entropy (nats) and the mean true-class
// mass (the diagonal) of a C×C target matrix.
func TargetStats(v *sdk.Matrix) (entropy, trueMass float64) {
	for c := 0; c < v.Rows; c++ {
		entropy += Entropy(v.Row(c))
		trueMass += v.At(c, c)
	}
	n := float64(v.Rows)
	return entropy / n, trueMass / n
}
