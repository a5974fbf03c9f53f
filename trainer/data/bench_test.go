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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lcl-project/lcl/internal/testdep"
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

// cpuTime is the CPU time (user + system) the process has used. The ratios
// compare CPU time, which other jobs on a shared machine disturb far less
// than wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// direct decodes every example sequentially into one buffer, with no
// loader: the reference the loader's throughput is compared with.
func direct(b *testing.B, ds Dataset, train bool) (int, time.Duration) {
	c, h, w := ds.Shape()
	dst := make([]float32, c*h*w)
	rng := rand.New(rand.NewPCG(1, 2))
	start := cpuTime(b)
	for i := range ds.Len() {
		if err := ds.Decode(i, dst, train, rng); err != nil {
			b.Fatal(err)
		}
	}
	return ds.Len(), cpuTime(b) - start
}

// benchLoader reports the loader's examples per second of wall time (ex/s)
// and of CPU time (ex/cpu-s), and its CPU-time ratio to the reference ref
// measured in the same run (x-sequential > 1: the loader needs less CPU per
// example). pil, when set, gives a second reference in examples per CPU
// second (x-pil > 1: the loader needs less CPU than PIL).
func benchLoader(b *testing.B, ds Dataset, batch int, ref func() (int, time.Duration), pil func() float64) {
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			var refN, n int
			var refCPU, wall, cpu time.Duration
			var pilSum float64
			for range b.N {
				rn, rc := ref()
				refN, refCPU = refN+rn, refCPU+rc
				if pil != nil {
					pilSum += pil()
				}
				start, startCPU := time.Now(), cpuTime(b)
				n += drain(b, ds, LoaderConfig{Pass: Pass{Batch: batch, Shuffle: true, Train: true}, Workers: workers, Prefetch: 4})
				wall, cpu = wall+time.Since(start), cpu+cpuTime(b)-startCPU
			}
			perCPU := float64(n) / cpu.Seconds()
			seq := float64(refN) / refCPU.Seconds()
			b.ReportMetric(float64(n)/wall.Seconds(), "ex/s")
			b.ReportMetric(perCPU, "ex/cpu-s")
			b.ReportMetric(seq, "seq-ex/cpu-s")
			b.ReportMetric(perCPU/seq, "x-sequential")
			if pil != nil {
				p := pilSum / float64(b.N)
				b.ReportMetric(p, "pil-ex/cpu-s")
				b.ReportMetric(perCPU/p, "x-pil")
			}
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
	benchLoader(b, train, 128, func() (int, time.Duration) { return direct(b, train, true) }, nil)
}

// BenchmarkOpenFashionMNIST: reading and decoding the Debian Fashion-MNIST
// files (60,000 + 10,000 gzip-compressed images), which every run on it
// does before its first step; the Python references take 0.15 s for
// zlib.decompress of the training images alone on the AMD EPYC here.
func BenchmarkOpenFashionMNIST(b *testing.B) {
	if _, err := os.Stat(DefaultFashionMNISTDir); err != nil {
		b.Fatalf("Fashion-MNIST is not installed (%v): run `make deps` or `sudo apt-get install dataset-fashion-mnist`", err)
	}
	for b.Loop() {
		if _, _, err := Open("fashion-mnist"); err != nil {
			b.Fatal(err)
		}
	}
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
		start := cpuTime(b)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
		return len(files), cpuTime(b) - start
	}
	py := testdep.PythonModules(b, "PIL", "numpy")
	pil := func() float64 {
		cmd := py.Command(append([]string{"-c", pilReference}, files...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("the PIL reference needs Debian's python3 with python3-pil and python3-numpy (make bench-deps, or apt-get install python3-pil python3-numpy): %v\n%s", err, out)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if err != nil {
			b.Fatalf("PIL reference printed %q", out)
		}
		return v
	}
	b.ResetTimer()
	benchLoader(b, train, 32, decodeOnly, pil)
}

// pilReference is torchvision's ImageNet training transform
// (RandomResizedCrop(224) with PIL's bilinear resize, RandomHorizontalFlip,
// ToTensor, Normalize) written with PIL and numpy, timed in one process over
// the files given as arguments after a warm-up image; it prints examples per
// CPU second (numpy may use more than one thread; process_time counts all).
const pilReference = `
import math, random, sys, time
import numpy as np
from PIL import Image
files = sys.argv[1:]
mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
std = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
rng = random.Random(1)
def rrc(w, h):
    area = w * h
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        ar = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        cw, ch = int(round(math.sqrt(target * ar))), int(round(math.sqrt(target / ar)))
        if 0 < cw <= w and 0 < ch <= h:
            return rng.randint(0, w - cw), rng.randint(0, h - ch), cw, ch
    return 0, 0, w, h
def one(f):
    img = Image.open(f).convert("RGB")
    x, y, cw, ch = rrc(*img.size)
    img = img.resize((224, 224), Image.BILINEAR, box=(x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    t = np.asarray(img, np.float32).transpose(2, 0, 1) / 255
    return (t - mean) / std
one(files[0])
start = time.process_time()
for f in files:
    one(f)
print(len(files) / (time.process_time() - start))
`
