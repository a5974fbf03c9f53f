//go:build cgo && amd64

package data

import (
	"fmt"
	"image"
	"math"
	"testing"
)

// TestResampleKernelsMatchGo: the C kernels give the Go kernels' bits for
// every subsampling, crop, output size and flip, in bytes and in floats.
func TestResampleKernelsMatchGo(t *testing.T) {
	opt, _ := Defaults("folder")
	crops := [][4]float64{{0, 0, 500, 375}, {50.5, 20.25, 450, 320}, {300, 200, 341, 260}, {0, 0, 7, 5}, {490, 360, 500, 375}}
	for _, ratio := range []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio420, image.YCbCrSubsampleRatio411} {
		img := smoothYCbCr(500, 375, ratio)
		for _, c := range crops {
			for _, s := range []int{1, 13, 224} {
				for _, flip := range []bool{false, true} {
					t.Run(fmt.Sprintf("%v/%v/%d/%v", ratio, c, s, flip), func(t *testing.T) {
						var r resampler
						f, f8 := make([]float32, 3*s*s), make([]uint8, 3*s*s)
						if !r.ycbcrRegion(img, c[0], c[1], c[2], c[3], s, flip, &opt, f, nil) ||
							!r.ycbcrRegion(img, c[0], c[1], c[2], c[3], s, flip, &opt, nil, f8) {
							t.Fatal("fast path refused")
						}
						// The same planes through the Go kernels.
						var g resampler
						g.ycbcrRegion(img, c[0], c[1], c[2], c[3], s, flip, &opt, make([]float32, 3*s*s), nil)
						for k := range g.plane {
							p := make([]float32, s*s)
							hf, vf, _ := chromaFactors(ratio)
							src, stride, w, h, x0, y0, x1, y1 := img.Y, img.YStride, 500, 375, c[0], c[1], c[2], c[3]
							if k > 0 {
								src, stride, w, h = img.Cb, img.CStride, (500+hf-1)/hf, (375+vf-1)/vf
								if k == 2 {
									src = img.Cr
								}
								x0, y0, x1, y1 = x0/float64(hf), y0/float64(vf), x1/float64(hf), y1/float64(vf)
							}
							g.x.set(x0, x1, s, w)
							g.y.set(y0, y1, s, h)
							xlo, xhi := g.x.span()
							resizePlaneGo(src, stride, s, &g.x, &g.y, make([]float32, (xhi-xlo)*s), p)
							// The kernel for CPUs without AVX2 (r.plane has the one this CPU runs).
							q := make([]float32, s*s)
							resizePlaneC(src, stride, s, &g.x, &g.y, make([]float32, (xhi-xlo)*padded(s)), q, true)
							for i := range p {
								if math.Float32bits(p[i]) != math.Float32bits(r.plane[k][i]) || math.Float32bits(p[i]) != math.Float32bits(q[i]) {
									t.Fatalf("plane %d value %d: C %v (scalar C %v), Go %v", k, i, r.plane[k][i], q[i], p[i])
								}
							}
						}
						var scale, bias [3]float32
						for k := range 3 {
							scale[k], bias[k] = 1/(255*opt.Std[k]), -opt.Mean[k]/opt.Std[k]
						}
						gf, g8 := make([]float32, 3*s*s), make([]uint8, 3*s*s)
						ycbcrToRGBGo(r.plane[0], r.plane[1], r.plane[2], s, flip, scale, bias, gf, nil)
						ycbcrToRGBGo(r.plane[0], r.plane[1], r.plane[2], s, flip, scale, bias, nil, g8)
						for i := range gf {
							if math.Float32bits(gf[i]) != math.Float32bits(f[i]) || g8[i] != f8[i] {
								t.Fatalf("value %d: C %v/%d, Go %v/%d", i, f[i], f8[i], gf[i], g8[i])
							}
						}
					})
				}
			}
		}
	}
}
