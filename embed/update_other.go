//go:build !amd64

package embed

// update does work += g·row, then row += g·l1, over len(l1) elements (on
// amd64 in one AVX pass, update_amd64.go).
func update(g float32, l1, row, work []float32) {
	updateGo(g, l1, row, work)
}
