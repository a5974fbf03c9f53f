package data

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

// WriteJPEGFolder writes n synthetic w×h JPEGs (quality q) as a folder data
// set under dir: train/cK/i.jpg for classes K = 0..classes-1, and a copy of
// the first image of each class under val/, so Open("folder:"+dir) reads
// it. The images are smooth colour fields with texture and noise, seeded by
// (seed, i), so they compress like photographs (about 100 KB at 500×375,
// quality 90) rather than like flat colour. For benchmarks (lcl bench
// jpegs, scripts/gpu-check.sh, bench/imagepipe.sh).
func WriteJPEGFolder(ctx context.Context, dir string, n, w, h, q, classes int, seed uint64) error {
	if n < 1 || w < 8 || h < 8 || q < 1 || q > 100 || classes < 1 {
		return fmt.Errorf("data: synthetic JPEGs: n=%d %dx%d quality %d classes %d", n, w, h, q, classes)
	}
	jobs := make(chan int)
	errs := make(chan error, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := writeSyntheticJPEG(dir, i, w, h, q, classes, seed); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range n {
		select {
		case jobs <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

func writeSyntheticJPEG(dir string, i, w, h, q, classes int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	fx, fy := 2+r.Float64()*8, 2+r.Float64()*8
	ph := r.Float64() * 6.3
	base := [3]float64{40 + r.Float64()*170, 40 + r.Float64()*170, 40 + r.Float64()*170}
	for y := range h {
		for x := range w {
			u, v := float64(x)/float64(w), float64(y)/float64(h)
			t := math.Sin(fx*u*6.3+ph) * math.Cos(fy*v*6.3)
			var c [3]uint8
			for k := range 3 {
				val := base[k] + 60*t*float64(k+1)/3 + 30*math.Sin(float64(x*y)/(500+float64(k)*37)) + r.NormFloat64()*12
				c[k] = uint8(min(255, max(0, val)))
			}
			yc, cb, cr := color.RGBToYCbCr(c[0], c[1], c[2])
			img.Y[img.YOffset(x, y)] = yc
			img.Cb[img.COffset(x, y)], img.Cr[img.COffset(x, y)] = cb, cr
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: q}); err != nil {
		return err
	}
	class := fmt.Sprint("c", i%classes)
	for _, split := range []string{"train", "val"} {
		if split == "val" && i >= classes {
			break
		}
		p := filepath.Join(dir, split, class, fmt.Sprintf("%06d.jpg", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// LoaderMeasurement is what MeasureLoader measured.
type LoaderMeasurement struct {
	Images    int     `json:"images"`
	Seconds   float64 `json:"seconds"`
	ImgPerSec float64 `json:"img_per_s"`
	Workers   int     `json:"workers"`
	Decoder   string  `json:"decoder"`
}

// MeasureLoader times passes of a training Loader over ds (shuffled, with
// the training augmentation), from the start of the first to the last batch.
func MeasureLoader(ctx context.Context, ds Dataset, cfg LoaderConfig, passes int) (LoaderMeasurement, error) {
	cfg.Train, cfg.Shuffle = true, true
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	m := LoaderMeasurement{Workers: cfg.Workers, Decoder: JPEGDecoder()}
	start := time.Now()
	for p := range max(passes, 1) {
		cfg.Epoch = p
		l, err := NewLoader(ctx, ds, cfg)
		if err != nil {
			return m, err
		}
		for {
			b, err := l.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				l.Close()
				return m, err
			}
			m.Images += b.N
			b.Release()
		}
		l.Close()
	}
	m.Seconds = time.Since(start).Seconds()
	if m.Seconds > 0 {
		m.ImgPerSec = float64(m.Images) / m.Seconds
	}
	return m, nil
}
