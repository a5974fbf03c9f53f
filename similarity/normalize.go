package similarity

import (
	"fmt"
	"math"
)

// AsymmetryTolerance is the largest |s(i,j) − s(j,i)| that Normalize
// accepts silently; beyond it the matrix is still symmetrised but a note
// says by how much it was asymmetric.
const AsymmetryTolerance = 1e-6

// Normalize applies the policy every stored matrix obeys, in place:
//
//  1. NaN or ±Inf anywhere is an error naming the first offending pair;
//  2. the matrix is made symmetric as (S+Sᵀ)/2 (asymmetry beyond
//     AsymmetryTolerance is reported in a note, not rejected: an imported
//     matrix may be a deliberately asymmetric score);
//  3. negative values are clamped to 0 (LCL's targets need s ≥ 0), with a
//     note counting them;
//  4. the diagonal is set to 1.
//
// Values above 1 are kept: LCL normalises each row to a distribution.
func Normalize(data []float64, classes []string) (notes []string, err error) {
	c := len(classes)
	if len(data) != c*c {
		return nil, fmt.Errorf("matrix has %d values, want %d×%d", len(data), c, c)
	}
	for i := 0; i < c; i++ {
		for j := 0; j < c; j++ {
			if x := data[i*c+j]; math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("s(%s, %s) [row %d, column %d] is %v: similarities must be finite", classes[i], classes[j], i, j, x)
			}
		}
	}
	asym, ai, aj := 0.0, 0, 0
	negative := 0
	for i := 0; i < c; i++ {
		for j := i + 1; j < c; j++ {
			a, b := data[i*c+j], data[j*c+i]
			if d := math.Abs(a - b); d > asym {
				asym, ai, aj = d, i, j
			}
			m := (a + b) / 2
			if m < 0 {
				negative++
				m = 0
			}
			data[i*c+j], data[j*c+i] = m, m
		}
		data[i*c+i] = 1
	}
	if asym > AsymmetryTolerance {
		notes = append(notes, fmt.Sprintf("asymmetry: max |s(i,j) − s(j,i)| = %.3g at (%s, %s); symmetrised as (S+Sᵀ)/2", asym, classes[ai], classes[aj]))
	}
	if negative > 0 {
		notes = append(notes, fmt.Sprintf("negatives clamped: %d pairs set to 0", negative))
	}
	return notes, nil
}
