package data

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// drain runs one pass and returns the number of examples.
func drain(b *testing.B, ds Dataset, cfg LoaderConfig) int {
	l, err := NewLoader(context.Background(), ds, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	n := 0
	for {
		bt, err := l.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n += bt.N
		bt.Release()
	}
}

// direct decodes every example sequentially into one buffer, with no
// loader: the reference the loader's throughput is compared with.
func direct(b *testing.B, ds Dataset, train bool) time.Duration {
	c, h, w := ds.Shape()
	dst := make([]float32, c*h*w)
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	for i := range ds.Len() {
		if err := ds.Decode(i, dst, train, rng); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// benchLoader reports the loader's examples/s and its ratio to sequential
// decoding measured in the same run (x-sequential > 1: the loader is faster).
func benchLoader(b *testing.B, ds Dataset, batch int, ref func() (int, time.Duration)) {
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			var refN int
			var refT time.Duration
			var n int
			var t time.Duration
			for range b.N {
				rn, rt := ref()
				refN, refT = refN+rn, refT+rt
				start := time.Now()
				n += drain(b, ds, LoaderConfig{Batch: batch, Shuffle: true, Workers: workers, Prefetch: 4, Train: true})
				t += time.Since(start)
			}
			loader := float64(n) / t.Seconds()
			seq := float64(refN) / refT.Seconds()
			b.ReportMetric(loader, "ex/s")
			b.ReportMetric(seq, "seq-ex/s")
			b.ReportMetric(loader/seq, "x-sequential")
		})
	}
}

// BenchmarkLoaderFashionMNIST: a training pass over the 60,000 Debian
// Fashion-MNIST images (batch 128, with flips and 2-pixel crops).
func BenchmarkLoaderFashionMNIST(b *testing.B) {
	if _, err := os.Stat(DefaultFashionMNISTDir); err != nil {
		b.Fatalf("Fashion-MNIST is not installed (%v): run `make deps` or `sudo apt-get install dataset-fashion-mnist`", err)
	}
	train, _, err := Open("fashion-mnist?flip=1&pad=2")
	if err != nil {
		b.Fatal(err)
	}
	benchLoader(b, train, 128, func() (int, time.Duration) { return train.Len(), direct(b, train, true) })
}

// BenchmarkLoaderJPEGFolder: a training pass (random-resized crop to 224,
// flip) over 96 synthetic 500×375 JPEGs, the typical ImageNet size, next to
// plain sequential jpeg.Decode of the same files (read from disk each time).
func BenchmarkLoaderJPEGFolder(b *testing.B) {
	root := b.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	var files []string
	for k := range 4 {
		for j := range 24 {
			img := image.NewYCbCr(image.Rect(0, 0, 500, 375), image.YCbCrSubsampleRatio420)
			for y := range 375 {
				for x := range 500 {
					yc, cb, cr := color.RGBToYCbCr(uint8(x/2+rng.IntN(40)), uint8(y/2+40*k), uint8(rng.IntN(255)))
					img.Y[img.YOffset(x, y)] = yc
					img.Cb[img.COffset(x, y)], img.Cr[img.COffset(x, y)] = cb, cr
				}
			}
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
				b.Fatal(err)
			}
			p := filepath.Join(root, "train", fmt.Sprint("c", k), fmt.Sprint(j, ".jpg"))
			writeFile(b, p, buf.Bytes())
			writeFile(b, filepath.Join(root, "val", fmt.Sprint("c", k), fmt.Sprint(j, ".jpg")), buf.Bytes())
			files = append(files, p)
		}
	}
	train, _, err := Open("folder:" + root)
	if err != nil {
		b.Fatal(err)
	}
	decodeOnly := func() (int, time.Duration) {
		start := time.Now()
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
		return len(files), time.Since(start)
	}
	b.ResetTimer()
	benchLoader(b, train, 32, decodeOnly)
}
