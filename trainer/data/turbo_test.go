package data

import (
	"context"
	"image"
	"image/jpeg"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// pixelDiff compares two normalised CHW images in 8-bit pixel units.
func pixelDiff(a, b []float32, std []float32) (mean, worst float64) {
	n := len(a) / 3
	for i := range a {
		d := math.Abs(float64(a[i]-b[i])) * 255 * float64(std[i/n])
		mean += d
		worst = math.Max(worst, d)
	}
	return mean / float64(len(a)), worst
}

func withDecoder(t *testing.T, turbo bool) {
	t.Helper()
	old := useTurbo
	useTurbo = turbo
	t.Cleanup(func() { useTurbo = old })
}

// libjpeg-turbo's path (header, crop chosen on the full size, reduced DCT
// scale, resampling on the planes) gives the Go decoder's pixels up to IDCT
// rounding and the reduced scale's filtering, for the evaluation crop and
// the random training crop (the same random draws).
func TestTurboMatchesGoDecoder(t *testing.T) {
	if !turboBuilt { // noturbo tag or CGO_ENABLED=0: Go's decoder alone
		if JPEGDecoder() != "go" {
			t.Errorf("JPEGDecoder() = %q without libjpeg-turbo", JPEGDecoder())
		}
		return
	}
	dir := t.TempDir()
	if err := WriteJPEGFolder(context.Background(), dir, 6, 500, 375, 90, 2, 3); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "train", "c0", "-big.jpg") // reduced scales for sizes 160 and 64
	writeBigJPEG(t, big, 1000, 750)
	for _, size := range []int{224, 160, 64} {
		train, _, err := Open("folder:" + dir + "?size=" + itoa(size) + "&resize=" + itoa(size*8/7))
		if err != nil {
			t.Fatal(err)
		}
		c, h, w := train.Shape()
		for i := range train.Len() {
			for _, tr := range []bool{false, true} {
				var out [2][]float32
				for k, turbo := range []bool{false, true} {
					withDecoder(t, turbo)
					out[k] = make([]float32, c*h*w)
					if err := train.Decode(i, out[k], tr, rand.New(rand.NewPCG(uint64(i), 9))); err != nil {
						t.Fatal(err)
					}
				}
				mean, worst := pixelDiff(out[0], out[1], imagenetStd)
				// The smooth image (example 0): IDCT rounding, and at
				// reduced scales the DCT-domain filter instead of the
				// bilinear one, agree within a level on average. The noisy
				// synthetic photographs differ more at reduced scales,
				// where the two filters pass different amounts of noise.
				lim, limMax := 1.0, 4.0
				if i > 0 {
					lim, limMax = 3.0, 40
					if size < 224 {
						lim, limMax = 10, 70
					}
				}
				if mean > lim || worst > limMax {
					t.Errorf("size %d, example %d, train=%v: turbo differs from Go's decoder by %.2f levels on average, %.0f at most",
						size, i, tr, mean, worst)
				}
			}
		}
	}
	// The reduced scale is used: a 1000×750 image, evaluation crop of 64 at
	// resize 73 spans 657 pixels, so 1/8 (125 wide) still covers 64.
	withDecoder(t, true)
	b, err := os.ReadFile(big)
	if err != nil {
		t.Fatal(err)
	}
	opt, _ := Defaults("folder")
	opt.Size, opt.Resize = 64, 73
	rs := new(resampler)
	if ok, err := decodeJPEGFast(b, make([]float32, 3*64*64), nil, rs, &opt, false, nil); !ok || err != nil {
		t.Fatalf("fast path: %v %v", ok, err)
	}
	if got := rs.turbo.Rect.Dx(); got != 125 {
		t.Errorf("decoded width %d, want 125 (1/8 of 1000)", got)
	}
	if JPEGDecoder() != "libjpeg-turbo" {
		t.Errorf("JPEGDecoder() = %q", JPEGDecoder())
	}
}

func itoa(n int) string {
	return string(rune('0'+n/100%10)) + string(rune('0'+n/10%10)) + string(rune('0'+n%10))
}

// writeBigJPEG writes a smooth w×h image (no noise), named so it sorts
// first in its class folder.
func writeBigJPEG(t *testing.T, path string, w, h int) {
	t.Helper()
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	for y := range h {
		for x := range w {
			img.Y[img.YOffset(x, y)] = uint8(128 + 100*math.Sin(float64(x)/60)*math.Cos(float64(y)/45))
			img.Cb[img.COffset(x, y)] = uint8(128 + 50*math.Sin(float64(y)/70))
			img.Cr[img.COffset(x, y)] = uint8(128 + 50*math.Cos(float64(x)/80))
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := jpeg.Encode(f, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
}

// DecodeU8 and a U8 loader give Decode's pixels before normalisation.
func TestDecodeU8MatchesDecode(t *testing.T) {
	dir := t.TempDir()
	if err := WriteJPEGFolder(context.Background(), dir, 8, 120, 90, 90, 2, 5); err != nil {
		t.Fatal(err)
	}
	train, _, err := Open("folder:" + dir + "?size=32&resize=37")
	if err != nil {
		t.Fatal(err)
	}
	mean, std := train.(U8Decoder).Normalization()
	cfg := LoaderConfig{Pass: Pass{Batch: 3, Shuffle: true, Seed: 4, Train: true}, Workers: 2}
	lf, err := NewLoader(context.Background(), train, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	cfg.U8 = true
	lu, err := NewLoader(context.Background(), train, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lu.Close()
	n := 32 * 32
	for {
		bf, err1 := lf.Next()
		bu, err2 := lu.Next()
		if err1 == io.EOF && err2 == io.EOF {
			break
		}
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if bu.X != nil || len(bu.X8) != len(bf.X) || bf.N != bu.N {
			t.Fatalf("u8 batch: %d bytes, %v floats, N %d/%d", len(bu.X8), bu.X != nil, bu.N, bf.N)
		}
		for i, v := range bu.X8 {
			c := (i / n) % 3
			want := (float32(v)/255 - mean[c]) / std[c]
			// Bytes are rounded to whole levels: half a level at most.
			if d := math.Abs(float64(want - bf.X[i])); d > 0.51/(255*float64(std[c])) {
				t.Fatalf("value %d: byte %d normalises to %v, float path %v", i, v, want, bf.X[i])
			}
		}
	}
	if _, err := NewLoader(context.Background(), &synthSet{n: 4, classes: 2, c: 1, h: 2, w: 2}, LoaderConfig{Pass: Pass{Batch: 2, U8: true}}); err == nil {
		t.Error("a U8 loader over synthetic data (no pixels) was accepted")
	}
}
