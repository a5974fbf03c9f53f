//go:build !amd64

package embed

// fastDot is dot (fma_amd64.go has the fused kernel).
func fastDot(a, b []float32) float32 { return dot(a, b) }

// fastUpdate is update (fma_amd64.go has the fused kernel).
func fastUpdate(g float32, l1, row, work []float32) { update(g, l1, row, work) }
