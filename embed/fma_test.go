package embed

import (
	"math"
	"testing"
)

// The fused kernels against float64 sums, for every tail length: the
// 32-, 16- and 8-wide loops and the scalar tail each get covered.
func TestFusedKernels(t *testing.T) {
	r := newRNG(7, 1)
	for n := 0; n <= 100; n++ {
		a, b, w := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range n {
			a[i], b[i], w[i] = 2*r.float32()-1, 2*r.float32()-1, 2*r.float32()-1
		}
		var want float64
		for i := range n {
			want += float64(a[i]) * float64(b[i])
		}
		if got := fastDot(a, b); math.Abs(float64(got)-want) > 1e-5*(1+float64(n)) {
			t.Errorf("n=%d: fastDot %v, want %v", n, got, want)
		}
		const g = 0.37
		wantRow, wantWork := make([]float64, n), make([]float64, n)
		for i := range n {
			wantWork[i] = float64(w[i]) + g*float64(b[i])
			wantRow[i] = float64(b[i]) + g*float64(a[i])
		}
		fastUpdate(g, a, b, w)
		for i := range n {
			if math.Abs(float64(b[i])-wantRow[i]) > 1e-6 || math.Abs(float64(w[i])-wantWork[i]) > 1e-6 {
				t.Fatalf("n=%d i=%d: fastUpdate row %v work %v, want %v %v", n, i, b[i], w[i], wantRow[i], wantWork[i])
			}
		}
	}
}
