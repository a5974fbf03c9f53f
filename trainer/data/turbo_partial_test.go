//go:build cgo && !noturbo

package data

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
)

// pilJPEGs writes JPEGs in the layouts libjpeg-turbo's path handles (4:4:4,
// 4:2:2, 4:2:0, baseline and progressive, with restart markers, odd sizes)
// with PIL, from a smooth field plus noise, and returns their paths.
func pilJPEGs(t *testing.T) []string {
	t.Helper()
	py := testdep.PythonModules(t, "PIL", "numpy")
	dir := t.TempDir()
	py.Run(`
import sys, numpy as np
from PIL import Image, ImageFile
ImageFile.MAXBLOCK = 1 << 24  # progressive files are written in one block
out = sys.argv[1]
rng = np.random.default_rng(7)
for i, (w, h, sub, prog) in enumerate([(500, 375, 2, False), (375, 500, 1, False), (500, 375, 0, True),
                                       (1000, 750, 2, False), (1000, 750, 2, True), (61, 47, 2, False), (333, 257, 1, True)]):
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([128 + 90 * np.sin(x / (20 + 5 * c)) * np.cos(y / (17 + 3 * c)) for c in range(3)], -1)
    img = np.clip(img + rng.normal(0, 25, img.shape), 0, 255).astype(np.uint8)
    Image.fromarray(img).save(f"{out}/{i}.jpg", quality=90, subsampling=sub, progressive=prog)
`, dir)
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jpg"))
	if len(paths) != 7 {
		t.Fatalf("PIL wrote %d JPEGs, want 7", len(paths))
	}
	return paths
}

// poison fills the whole capacity of the decode planes with a pattern, so a
// read of a sample the partial decode left out changes the output.
func poison(img *image.YCbCr) {
	for _, p := range [][]byte{img.Y[:cap(img.Y)], img.Cb[:cap(img.Cb)], img.Cr[:cap(img.Cr)]} {
		for i := range p {
			p[i] = byte(i*131 + 7)
		}
	}
}

// The partial decode (the crop's iMCU columns, down to its last row) gives
// the whole decode's pixels bit for bit, for random training crops and the
// evaluation crop, at full and reduced DCT scales, in every layout; and it
// does leave rows and columns undecoded.
func TestTurboPartialDecodeMatchesWhole(t *testing.T) {
	withDecoder(t, true)
	paths := pilJPEGs(t)
	opt, _ := Defaults("folder")
	skippedRows, skippedCols := 0, 0
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok, err := turboHeader(b); !ok || err != nil {
			t.Fatalf("%s: libjpeg-turbo's path refuses it: %v", path, err)
		}
		for _, size := range []int{224, 64, 13} {
			n := 12
			if size == 13 {
				n = 3
			}
			opt.Size, opt.Resize = size, size*8/7
			for k := range n {
				train := k > 0
				var out [2][]uint8
				var outf [2][]float32
				rs := new(resampler)
				for whole := range 2 {
					out[whole] = make([]uint8, 3*size*size)
					outf[whole] = make([]float32, 3*size*size)
					for _, f8 := range []bool{true, false} {
						if rs.turbo != nil {
							poison(rs.turbo)
						}
						d, d8 := outf[whole], []uint8(nil)
						if f8 {
							d, d8 = nil, out[whole]
						}
						rng := rand.New(rand.NewPCG(uint64(k), 3))
						ok, err := jpegFast(b, d, d8, rs, &opt, train, rng, whole == 1)
						if !ok || err != nil {
							t.Fatalf("%s: %v %v", path, ok, err)
						}
						if whole == 0 && !f8 { // decoded over poison
							img := rs.turbo
							last := img.Y[(img.Rect.Dy()-1)*img.YStride:]
							first := img.Y[:img.Rect.Dx()]
							if bytes.Equal(last[:img.Rect.Dx()], poisoned(last, (img.Rect.Dy()-1)*img.YStride, img.Rect.Dx())) {
								skippedRows++
							}
							if bytes.Equal(first[:8], poisoned(first, 0, 8)) {
								skippedCols++
							}
						}
					}
				}
				name := fmt.Sprintf("%s size %d crop %d", filepath.Base(path), size, k)
				if !bytes.Equal(out[0], out[1]) {
					t.Fatalf("%s: the partial decode's bytes differ from the whole decode's", name)
				}
				for i := range outf[0] {
					if outf[0][i] != outf[1][i] {
						t.Fatalf("%s: float value %d: partial %v, whole %v", name, i, outf[0][i], outf[1][i])
					}
				}
			}
		}
	}
	if skippedRows == 0 || skippedCols == 0 {
		t.Errorf("the partial decode skipped the last row %d times and the first columns %d times: want both", skippedRows, skippedCols)
	}
}

// poisoned is what poison wrote at p's offset off, for n bytes.
func poisoned(p []byte, off, n int) []byte {
	q := make([]byte, n)
	for i := range q {
		q[i] = byte((off+i)*131 + 7)
	}
	return q
}

// A truncated JPEG is an error whatever the crop, though the rows below a
// crop are never decoded: the end-of-image marker is checked first.
func TestTurboTruncatedIsAnError(t *testing.T) {
	withDecoder(t, true)
	b, err := os.ReadFile(pilJPEGs(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	opt, _ := Defaults("folder")
	for _, cut := range []int{len(b) - 2, len(b) * 9 / 10, len(b) / 2} {
		for k := range 20 {
			ok, err := decodeJPEGFast(b[:cut], nil, make([]uint8, 3*224*224), new(resampler), &opt, true, rand.New(rand.NewPCG(uint64(k), 1)))
			if !ok || err == nil || !strings.Contains(err.Error(), "end-of-image") {
				t.Fatalf("cut at %d of %d, crop %d: ok %v, err %v; want an end-of-image error", cut, len(b), k, ok, err)
			}
		}
	}
}

// A progressive file of more scans than the limit is refused (the limit
// set low here: crafting thousands of scans is what it guards against).
func TestTurboScanLimit(t *testing.T) {
	withDecoder(t, true)
	b, err := os.ReadFile(pilJPEGs(t)[2]) // progressive 4:4:4
	if err != nil {
		t.Fatal(err)
	}
	whole := func(w, h, hf, vf int) (int, int, int) { return 0, w, h }
	if _, err := decodeTurboScans(b, 1, nil, whole, jpegMaxScans); err != nil {
		t.Fatalf("under the limit: %v", err)
	}
	if _, err := decodeTurboScans(b, 1, nil, whole, 3); err == nil || !strings.Contains(err.Error(), "more than 3 scans") {
		t.Fatalf("a progressive file with a limit of 3 scans: err %v", err)
	}
}

// FuzzDecodeJPEG: whatever the bytes, libjpeg-turbo's path returns an
// error or pixels, never crashes; and when it returns pixels, the partial
// decode's are the whole decode's.
func FuzzDecodeJPEG(f *testing.F) {
	for _, c := range []struct {
		w, h, q int
	}{{16, 16, 90}, {37, 23, 50}, {64, 48, 100}} {
		img := image.NewYCbCr(image.Rect(0, 0, c.w, c.h), image.YCbCrSubsampleRatio420)
		for i := range img.Y {
			img.Y[i] = byte(i * 7)
		}
		for i := range img.Cb {
			img.Cb[i], img.Cr[i] = byte(i*3), byte(255-i)
		}
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: c.q}); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes(), uint64(c.w))
	}
	opt, _ := Defaults("folder")
	opt.Size, opt.Resize = 16, 18
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		if !turboBuilt || len(b) < 3 {
			return
		}
		if w, h, _, err := turboHeader(b); err != nil || w*h > 1<<20 {
			return // keep the fuzzer on small images; the limit itself is TestDecodeCraftedHugeImage's
		}
		var out [2][]uint8
		var errs [2]error
		for whole := range 2 {
			out[whole] = make([]uint8, 3*16*16)
			rs := new(resampler)
			_, errs[whole] = jpegFast(b, nil, out[whole], rs, &opt, seed%2 == 0, rand.New(rand.NewPCG(seed, 1)), whole == 1)
		}
		if errs[0] == nil && errs[1] == nil && !bytes.Equal(out[0], out[1]) {
			t.Fatal("the partial decode's pixels differ from the whole decode's")
		}
	})
}
