package data

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/image/draw"
)

// smoothYCbCr fills a YCbCr image with smooth colour gradients and a mild
// ripple, the kind of content where two bilinear resamplers should agree.
func smoothYCbCr(w, h int, ratio image.YCbCrSubsampleRatio) *image.YCbCr {
	img := image.NewYCbCr(image.Rect(0, 0, w, h), ratio)
	for y := range h {
		for x := range w {
			img.Y[img.YOffset(x, y)] = uint8(128 + 90*math.Sin(float64(x)/23+float64(y)/41))
		}
	}
	for y := range h {
		for x := range w {
			o := img.COffset(x, y)
			img.Cb[o] = uint8(128 + 60*math.Cos(float64(x)/37))
			img.Cr[o] = uint8(128 + 60*math.Sin(float64(y)/29+1))
		}
	}
	return img
}

// TestYCbCrFastPath checks the plane resampler against x/image/draw's
// bilinear resize of the same crop (RGB values in 0..255).
func TestYCbCrFastPath(t *testing.T) {
	ratios := []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422,
		image.YCbCrSubsampleRatio420, image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410}
	sizes := [][2]int{{500, 375}, {97, 131}, {40, 30}}
	for _, ratio := range ratios {
		for _, sz := range sizes {
			t.Run(fmt.Sprintf("%v/%dx%d", ratio, sz[0], sz[1]), func(t *testing.T) {
				img := smoothYCbCr(sz[0], sz[1], ratio)
				opt := Options{Size: 32, Resize: 36, RandomResizedCrop: true, Scale: [2]float64{0.08, 1},
					Ratio: [2]float64{0.75, 4.0 / 3}, Mean: []float32{0, 0, 0}, Std: []float32{1.0 / 255, 1.0 / 255, 1.0 / 255}}
				rng := rand.New(rand.NewPCG(9, uint64(sz[0])))
				rs := new(resampler)
				fast := make([]float32, 3*32*32)
				ref := image.NewRGBA(image.Rect(0, 0, 32, 32))
				var sum, worst float64
				n := 0
				for trial := range 20 {
					r := cropRect(sz[0], sz[1], &opt, trial > 0, rng)
					if !rs.ycbcr(img, r, 32, false, &opt, fast, nil) {
						t.Fatal("fast path refused a plain YCbCr image")
					}
					flipped := make([]float32, len(fast))
					rs.ycbcr(img, r, 32, true, &opt, flipped, nil)
					for p := range fast {
						if row, col := p/32, p%32; fast[p] != flipped[row*32+31-col] {
							t.Fatalf("flip: value %d differs from its mirror", p)
						}
					}
					draw.BiLinear.Scale(ref, ref.Rect, img, r, draw.Src, nil)
					for c := range 3 {
						for p := range 32 * 32 {
							d := math.Abs(float64(fast[c*1024+p]) - float64(ref.Pix[4*p+c]))
							sum += d
							worst = max(worst, d)
							n++
						}
					}
				}
				// Measured: mean ≤ 0.6, worst ≤ 12 levels (x/image takes the
				// nearest chroma sample where this path interpolates).
				if mean := sum / float64(n); mean > 0.8 || worst > 16 {
					t.Fatalf("fast path differs from x/image/draw: mean %.2f, worst %.1f levels", mean, worst)
				}
			})
		}
	}
	// A sub-image (origin not at 0,0) takes the generic path.
	img := smoothYCbCr(64, 64, image.YCbCrSubsampleRatio420).SubImage(image.Rect(8, 8, 40, 40)).(*image.YCbCr)
	if new(resampler).ycbcr(img, image.Rect(8, 8, 40, 40), 16, false, &Options{}, make([]float32, 3*256), nil) {
		t.Fatal("fast path accepted a sub-image")
	}
}

func BenchmarkResizeYCbCr(b *testing.B) {
	img := smoothYCbCr(500, 375, image.YCbCrSubsampleRatio420)
	opt, _ := Defaults("folder")
	dst, dst8 := make([]float32, 3*224*224), make([]uint8, 3*224*224)
	r := image.Rect(50, 20, 450, 320)
	// A typical random-resized crop (about 290² of 500×375), the largest
	// square one (the full height), and a 400×300 crop, to 224².
	for _, c := range []struct {
		name string
		r    image.Rectangle
	}{{"fast", r}, {"fast-290", image.Rect(105, 40, 395, 330)}, {"fast-375", image.Rect(62, 0, 437, 375)}} {
		b.Run(c.name, func(b *testing.B) {
			rs := new(resampler)
			for b.Loop() {
				rs.ycbcr(img, c.r, 224, false, &opt, dst, nil)
			}
		})
	}
	b.Run("fast-290-u8-flip", func(b *testing.B) {
		rs := new(resampler)
		for b.Loop() {
			rs.ycbcr(img, image.Rect(105, 40, 395, 330), 224, true, &opt, nil, dst8)
		}
	})
	b.Run("x-image-draw", func(b *testing.B) {
		rgba := image.NewRGBA(image.Rect(0, 0, 224, 224))
		for b.Loop() {
			draw.BiLinear.Scale(rgba, rgba.Rect, img, r, draw.Src, nil)
		}
	})
}

// TestResampleReadsOnlyTheSpans: the resampler reads only the rows and
// columns its taps name (the libjpeg-turbo path leaves the rows below the
// crop's undecoded, stale): overwriting every other sample of the planes
// leaves the output unchanged.
func TestResampleReadsOnlyTheSpans(t *testing.T) {
	opt, _ := Defaults("folder")
	for _, ratio := range []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio420, image.YCbCrSubsampleRatio411} {
		for _, c := range [][4]float64{{50.5, 20.25, 450, 320}, {300, 200, 341, 260}, {490, 360, 500, 375}} {
			for _, s := range []int{13, 224} {
				img := smoothYCbCr(500, 375, ratio)
				var r resampler
				want := make([]float32, 3*s*s)
				r.ycbcrRegion(img, c[0], c[1], c[2], c[3], s, false, &opt, want, nil)
				hf, vf, _ := chromaFactors(ratio)
				for k, p := range [][]byte{img.Y, img.Cb, img.Cr} {
					stride, w, h, f, g := img.YStride, 500, 375, 1.0, 1.0
					if k > 0 {
						stride, w, h, f, g = img.CStride, (500+hf-1)/hf, (375+vf-1)/vf, float64(hf), float64(vf)
					}
					var ax, ay axis
					ax.set(c[0]/f, c[2]/f, s, w)
					ay.set(c[1]/g, c[3]/g, s, h)
					xlo, xhi := ax.span()
					ylo, yhi := ay.span()
					for i := range p {
						if x, y := i%stride, i/stride; x < xlo || x >= xhi || y < ylo || y >= yhi {
							p[i] = uint8(i*7919) | 1
						}
					}
				}
				got := make([]float32, 3*s*s)
				r.ycbcrRegion(img, c[0], c[1], c[2], c[3], s, false, &opt, got, nil)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v %v %d: value %d is %v with the samples outside the spans overwritten, %v before", ratio, c, s, i, got[i], want[i])
					}
				}
			}
		}
	}
}
