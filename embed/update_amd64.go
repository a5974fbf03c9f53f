package embed

import "golang.org/x/sys/cpu"

// updateAVX is update's kernel with 8-wide AVX loads (update_amd64.s).
//
//go:noescape
func updateAVX(alpha float32, l1, row, work *float32, n int)

// update does work += g·row, then row += g·l1, over len(l1) elements: a
// negative-sampling step's two axpy calls in one pass over row (each row is
// read once instead of twice; the two calls were half of doc2vec's training
// time). The sums are rounded as the two calls round them, so the vectors
// are the same bit for bit. row and work must hold len(l1) elements.
func update(g float32, l1, row, work []float32) {
	n := len(l1)
	if n == 0 || g == 0 { // gonum's Saxpy returns at once for alpha 0
		return
	}
	_, _ = row[n-1], work[n-1]
	if cpu.X86.HasAVX {
		updateAVX(g, &l1[0], &row[0], &work[0], n)
		return
	}
	updateGo(g, l1, row, work)
}
