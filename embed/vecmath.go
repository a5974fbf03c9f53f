package embed

import (
	"math"

	"gonum.org/v1/gonum/blas/gonum"
)

// The inner loops are dot products and axpy updates on short float32 rows
// (d = 100). They go to gonum's pure-Go BLAS (gonum.Implementation, whose
// Sdot/Saxpy reach gonum's SIMD assembly on amd64), not to spago's mat: the
// benchmarks in vecmath_test.go measured at d=100 on the development
// machine (AMD EPYC, 2 cores): dot 10.9 ns gonum.Implementation, 12.5 ns
// blas32 wrapper, 30.6 ns hand-unrolled Go loop, 1524 ns spago
// Dense.DotUnitary (it wraps both rows in Dense values and allocates its
// result); axpy 11.4 / 15.0 / 32.2 / 778 ns likewise. spago's API costs two
// orders of magnitude here, so it is not used in the training loops. The
// training step's pair of axpy calls on one output row is fused into one
// AVX pass on amd64 (update_amd64.s: 7.5 ns against 17.5 ns for the two).
var blas gonum.Implementation

// dot returns Σ a[i]·b[i]; len(b) must be ≥ len(a).
func dot(a, b []float32) float32 {
	return blas.Sdot(len(a), a, 1, b, 1)
}

// axpy does y += alpha·x; len(y) must be ≥ len(x).
func axpy(alpha float32, x, y []float32) {
	blas.Saxpy(len(x), alpha, x, 1, y, 1)
}

// updateGo is update as two axpy calls: work += g·row, then row += g·l1.
func updateGo(g float32, l1, row, work []float32) {
	axpy(g, row[:len(l1)], work)
	axpy(g, l1, row)
}

// scal does x *= alpha.
func scal(alpha float32, x []float32) {
	for i := range x {
		x[i] *= alpha
	}
}

// Sigmoid by table lookup as in word2vec: σ is tabulated on [-maxExp, maxExp].
// The training step skips a pair whose score is saturated on the wrong
// side (as gensim does; word2vec.c clamps instead): measured on the WordNet
// corpus it scored as well as or slightly better than clamping.
const (
	maxExp       = 6
	sigTableSize = 2048
)

type sigmoidTable [sigTableSize + 1]float32

func newSigmoidTable() *sigmoidTable {
	var t sigmoidTable
	for i := range t {
		x := (float64(i)/sigTableSize*2 - 1) * maxExp
		t[i] = float32(1 / (1 + math.Exp(-x)))
	}
	return &t
}

func (t *sigmoidTable) at(f float32) float32 {
	switch {
	case f >= maxExp:
		return 1
	case f <= -maxExp:
		return 0
	}
	return t[int((f+maxExp)*(float32(sigTableSize)/(2*maxExp))+0.5)]
}
