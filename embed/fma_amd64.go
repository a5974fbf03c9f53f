package embed

import "golang.org/x/sys/cpu"

// dotFMA and updateFMA are the shared-negatives step's kernels
// (fma_amd64.s): 8-wide fused multiply-adds.
//
//go:noescape
func dotFMA(a, b *float32, n int) float32

//go:noescape
func updateFMA(alpha float32, l1, row, work *float32, n int)

// hasFMA: the CPU runs fma_amd64.s (AVX2's fused multiply-add on ymm).
var hasFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// fastDot returns Σ a[i]·b[i] (len(b) ≥ len(a)), in another order of
// additions than dot where the CPU has FMA.
func fastDot(a, b []float32) float32 {
	if n := len(a); n > 0 && hasFMA {
		_ = b[n-1]
		return dotFMA(&a[0], &b[0], n)
	}
	return dot(a, b)
}

// fastUpdate is update (work += g·row, then row += g·l1) with fused
// multiply-adds where the CPU has them.
func fastUpdate(g float32, l1, row, work []float32) {
	if n := len(l1); n > 0 && hasFMA {
		_, _ = row[n-1], work[n-1]
		updateFMA(g, &l1[0], &row[0], &work[0], n)
		return
	}
	update(g, l1, row, work)
}
