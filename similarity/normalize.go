package similarity

import (
	"fmt"
	"math"
	"sync"
)

// AsymmetryTolerance is the largest |s(i,j) − s(j,i)| that Normalize
// accepts silently; beyond it the matrix is still symmetrised but a note
// says by how much it was asymmetric.
const AsymmetryTolerance = 1e-6

// normTile is the side of the square tiles Normalize pairs up: a tile and
// its mirror image are both in cache while their entries are averaged, so a
// 21,843² matrix is not walked down its columns.
const normTile = 64

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
// Values above 1 are kept: LCL normalises each row to a distribution. The
// mean of two entries is taken in float64 and rounded once, so a symmetric
// entry is kept bit for bit. Work is spread over every CPU in tiles.
func Normalize(data []float32, classes []string) (notes []string, err error) {
	c := len(classes)
	if len(data) != c*c {
		return nil, fmt.Errorf("matrix has %d values, want %d×%d", len(data), c, c)
	}
	if k := firstNonFinite(data); k >= 0 {
		i, j := k/c, k%c
		return nil, fmt.Errorf("s(%s, %s) [row %d, column %d] is %v: similarities must be finite", classes[i], classes[j], i, j, data[k])
	}
	tiles := (c + normTile - 1) / normTile
	type stat struct {
		asym     float64
		ai, aj   int
		negative int
	}
	var mu sync.Mutex
	total := stat{ai: -1}
	parallelDynamic(tiles, func(ti int) {
		st := stat{ai: -1}
		i0, i1 := ti*normTile, min(ti*normTile+normTile, c)
		for tj := ti; tj < tiles; tj++ {
			j0, j1 := tj*normTile, min(tj*normTile+normTile, c)
			for i := i0; i < i1; i++ {
				row := data[i*c : (i+1)*c]
				lo := j0
				if ti == tj {
					lo = i + 1
				}
				for j := lo; j < j1; j++ {
					a, b := row[j], data[j*c+i]
					if a == b && a >= 0 {
						continue
					}
					if d := math.Abs(float64(a) - float64(b)); d > st.asym || (d == st.asym && d > 0 && before(i, j, st.ai, st.aj)) {
						st.asym, st.ai, st.aj = d, i, j
					}
					m := float32((float64(a) + float64(b)) / 2)
					if m < 0 {
						st.negative++
						m = 0
					}
					row[j], data[j*c+i] = m, m
				}
			}
		}
		for i := i0; i < i1; i++ {
			data[i*c+i] = 1
		}
		mu.Lock()
		total.negative += st.negative
		if st.asym > total.asym || (st.asym == total.asym && st.asym > 0 && before(st.ai, st.aj, total.ai, total.aj)) {
			total.asym, total.ai, total.aj = st.asym, st.ai, st.aj
		}
		mu.Unlock()
	})
	if total.asym > AsymmetryTolerance {
		notes = append(notes, fmt.Sprintf("asymmetry: max |s(i,j) − s(j,i)| = %.3g at (%s, %s); symmetrised as (S+Sᵀ)/2", total.asym, classes[total.ai], classes[total.aj]))
	}
	if total.negative > 0 {
		notes = append(notes, fmt.Sprintf("negatives clamped: %d pairs set to 0", total.negative))
	}
	return notes, nil
}

// before orders pairs row-major; (−1, ·) is after everything.
func before(i, j, ai, aj int) bool {
	return ai < 0 || i < ai || (i == ai && j < aj)
}

// firstNonFinite is the index of the first NaN or ±Inf in data, or −1.
func firstNonFinite(data []float32) int {
	const part = 1 << 20
	parts := (len(data) + part - 1) / part
	first := make([]int, parts)
	parallelDynamic(parts, func(p int) {
		first[p] = -1
		lo := p * part
		for k, x := range data[lo:min(lo+part, len(data))] {
			if x-x != 0 { // NaN or ±Inf
				first[p] = lo + k
				return
			}
		}
	})
	for _, k := range first {
		if k >= 0 {
			return k
		}
	}
	return -1
}

// normalizeUpper applies the policy to a matrix whose source filled only
// its upper triangle (entries j > i; the rest is ignored and overwritten): a
// symmetric matrix by construction, so step 2 is the mirror image. Checks,
// clamping and notes are Normalize's, on the upper entries, in one pass of
// tiles: sources that compute half a matrix (lca, semantic) leave the
// mirroring to it.
func normalizeUpper(data []float32, classes []string) (notes []string, err error) {
	c := len(classes)
	if len(data) != c*c {
		return nil, fmt.Errorf("matrix has %d values, want %d×%d", len(data), c, c)
	}
	tiles := (c + normTile - 1) / normTile
	bad := make([]int, tiles) // the first non-finite upper entry of each tile row, or −1
	negative := make([]int, tiles)
	parallelDynamic(tiles, func(ti int) {
		bad[ti] = -1
		i0, i1 := ti*normTile, min(ti*normTile+normTile, c)
		// Rows of the tile row first (row-major order for the first bad entry).
		for i := i0; i < i1 && bad[ti] < 0; i++ {
			for j, x := range data[i*c+i+1 : (i+1)*c] {
				if x-x != 0 {
					bad[ti] = i*c + i + 1 + j
					return
				}
				if x < 0 {
					negative[ti]++
					data[i*c+i+1+j] = 0
				}
			}
		}
		for j := i0; j < c; j++ {
			for i := i0; i < min(i1, j); i++ {
				data[j*c+i] = data[i*c+j]
			}
		}
		for i := i0; i < i1; i++ {
			data[i*c+i] = 1
		}
	})
	total := 0
	for ti := range bad {
		if k := bad[ti]; k >= 0 {
			i, j := k/c, k%c
			return nil, fmt.Errorf("s(%s, %s) [row %d, column %d] is %v: similarities must be finite", classes[i], classes[j], i, j, data[k])
		}
		total += negative[ti]
	}
	if total > 0 {
		notes = append(notes, fmt.Sprintf("negatives clamped: %d pairs set to 0", total))
	}
	return notes, nil
}
