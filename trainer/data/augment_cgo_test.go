//go:build cgo && amd64

package data

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestAugmentKernelsMatchGo: the C kernels give the Go kernels' bytes for
// every shape (widths off the vector width, one-pixel borders), every
// blend ratio the policies use (clamping on both sides) and the sampling
// grids of every shear and rotation magnitude of both spaces, both signs.
func TestAugmentKernelsMatchGo(t *testing.T) {
	shapes := [][3]int{{3, 224, 224}, {3, 32, 32}, {1, 28, 28}, {3, 3, 3}, {3, 37, 13}, {1, 5, 67}, {3, 1, 9}}
	ratios := []float64{0, 0.05, 0.1, 0.5, 0.99, 1, 1.01, 1.5, 1.9, 1.99, -0.3}
	for _, sh := range shapes {
		c, h, w := sh[0], sh[1], sh[2]
		n := h * w
		img := augImage(c, h, w, uint64(c*h*w))
		other := augImage(c, h, w, 7)
		t.Run(fmt.Sprintf("%dx%dx%d", c, h, w), func(t *testing.T) {
			for _, ratio := range ratios {
				r, q := blendFactors(ratio)
				for _, shared := range []bool{true, false} {
					a, b := bytes.Clone(img), bytes.Clone(img)
					blendPlanes(a, other, n, c, shared, r, q)
					blendPlanesGo(b, other, n, c, shared, r, q)
					if i := firstDiff(a, b); i >= 0 {
						t.Fatalf("blend ratio %v shared %v: byte %d: C %d, Go %d", ratio, shared, i, a[i], b[i])
					}
				}
			}
			if c == 3 {
				a, b := make([]uint8, n), make([]uint8, n)
				grayPlane(img, a, n)
				grayPlaneGo(img, b, n)
				if i := firstDiff(a, b); i >= 0 {
					t.Fatalf("grey: pixel %d: C %d, Go %d", i, a[i], b[i])
				}
			}
			if h > 2 && w > 2 {
				a, b := make([]uint8, c*n), make([]uint8, c*n)
				blurPlanes(img, a, c, h, w)
				blurPlanesGo(img, b, c, h, w)
				if i := firstDiff(a, b); i >= 0 {
					t.Fatalf("blur: byte %d: C %d, Go %d", i, a[i], b[i])
				}
			}
			rng := rand.New(rand.NewPCG(uint64(n), 3))
			for _, op := range []augOp{opShearX, opShearY, opRotate} {
				for bin := range 31 {
					for _, wide := range []bool{false, true} {
						for _, neg := range []bool{false, true} {
							m := magnitude(op, bin, wide, h, w)
							if neg {
								m = -m
							}
							if bin == 30 { // off the bins
								m = (rng.Float64() - 0.5) * 2 * m
							}
							k := samplingGrid(affineOf(op, m, h, w), h, w)
							a, b := make([]uint8, c*n), make([]uint8, c*n)
							affineSample(img, a, c, h, w, &k, make([]int32, w))
							affineSampleGo(img, b, c, h, w, &k, make([]int32, w))
							if i := firstDiff(a, b); i >= 0 {
								t.Fatalf("%v magnitude %v: byte %d: C %d, Go %d", op, m, i, a[i], b[i])
							}
						}
					}
				}
			}
		})
	}
}

func firstDiff(a, b []uint8) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
