package data

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
)

// augImage is a c×h×w test image: a smooth field in a narrow range plus
// noise, so that AutoContrast and Equalize have something to stretch, and
// a saturated corner, so that blends clamp.
func augImage(c, h, w int, seed uint64) []uint8 {
	rng := rand.New(rand.NewPCG(seed, 1))
	img := make([]uint8, c*h*w)
	for ch := range c {
		for y := range h {
			for x := range w {
				v := 100 + 60*math.Sin(float64(x)/(4+float64(ch)))*math.Cos(float64(y)/5) + rng.NormFloat64()*12
				if x < w/5 && y < h/5 {
					v = 250 + 5*rng.Float64()
				}
				img[(ch*h+y)*w+x] = uint8(min(max(v, 0), 255))
			}
		}
	}
	return img
}

// augCase is one op at one magnitude: a bin of RandAugment's space (ra) or
// TrivialAugmentWide's (ta), with its sign, or a magnitude given as is
// (fixed).
type augCase struct {
	space string // ra, ta or fixed
	op    augOp
	bin   int
	neg   bool
	mag   float64 // fixed
}

// Every op at every bin of both spaces, both signs, and at magnitudes off
// the bins, equals torchvision's _apply_op (torchvision.transforms.functional
// with nearest interpolation and fill 0, as RandAugment and
// TrivialAugmentWide call it) on the same uint8 image within one intensity
// level, for RGB and grey images, square and not. Python computes the
// magnitudes from torchvision's own _augmentation_space, so the bins are
// checked too.
func TestAugmentOpsMatchTorchvision(t *testing.T) {
	py := testdep.PythonModules(t, "torch", "torchvision")
	var cases []augCase
	for op := range numAugOps {
		for _, space := range []string{"ra", "ta"} {
			bins := 1
			if op.binned() {
				bins = magnitudeBins
			}
			for b := range bins {
				cases = append(cases, augCase{space: space, op: op, bin: b})
				if op.signed() {
					cases = append(cases, augCase{space: space, op: op, bin: b, neg: true})
				}
			}
		}
	}
	for _, f := range []struct {
		op   augOp
		mags []float64
	}{
		{opShearX, []float64{0.5, -1.7, 3}},
		{opShearY, []float64{0.05, -0.77}},
		{opTranslateX, []float64{5.9, -40, 1000}},
		{opTranslateY, []float64{-2.2, 17}},
		{opRotate, []float64{90, -90, 180, 45, 7.3, -200}},
		{opBrightness, []float64{-1, 2.5, 0.123}},
		{opColor, []float64{-1, 3, 0.37}},
		{opContrast, []float64{-1, 4, -0.61}},
		{opSharpness, []float64{-1, 5, 0.77}},
		{opPosterize, []float64{1, 3, 7}},
		{opSolarize, []float64{0, 1, 128, 127.5, 254.9}},
	} {
		for _, m := range f.mags {
			cases = append(cases, augCase{space: "fixed", op: f.op, mag: m})
		}
	}
	shapes := [][3]int{{3, 32, 32}, {1, 28, 28}, {3, 23, 37}, {3, 3, 3}}
	dir := t.TempDir()
	var list strings.Builder
	for _, cs := range cases {
		fmt.Fprintf(&list, "%s %s %d %t %s\n", cs.space, cs.op, cs.bin, cs.neg, strconv.FormatFloat(cs.mag, 'g', -1, 64))
	}
	writeFile(t, filepath.Join(dir, "cases.txt"), []byte(list.String()))
	for si, sh := range shapes {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("img%d.raw", si)), augImage(sh[0], sh[1], sh[2], uint64(si)))
	}
	py.Run(`
import sys, torch
from torchvision.transforms import InterpolationMode, RandAugment, TrivialAugmentWide
from torchvision.transforms.autoaugment import _apply_op
d, shapes = sys.argv[1], [tuple(map(int, s.split("x"))) for s in sys.argv[2:]]
cases = [l.split() for l in open(d + "/cases.txt")]
for si, (c, h, w) in enumerate(shapes):
    img = torch.frombuffer(bytearray(open(f"{d}/img{si}.raw", "rb").read()), dtype=torch.uint8).reshape(c, h, w)
    spaces = {"ra": RandAugment()._augmentation_space(31, (h, w)), "ta": TrivialAugmentWide()._augmentation_space(31)}
    with open(f"{d}/out{si}.raw", "wb") as f, open(f"{d}/mag{si}.txt", "w") as mf:
        for space, op, b, neg, mag in cases:
            if space == "fixed":
                m = float(mag)
            else:
                mags, signed = spaces[space][op]
                m = float(mags[int(b)].item()) if mags.ndim > 0 else 0.0
                if signed and neg == "true":
                    m *= -1.0
            out = _apply_op(img.clone(), op, m, interpolation=InterpolationMode.NEAREST, fill=None)
            f.write(out.contiguous().numpy().tobytes())
            mf.write(repr(m) + "\n")
`, append([]string{dir}, shapeArgs(shapes)...)...)
	var g augmenter
	var offByOne [numAugOps]int // pixels one level off, per op
	inexact := 0                // magnitudes an ulp off torchvision's
	defer func() {
		if inexact > 0 {
			t.Logf("%d magnitudes within an ulp of torchvision's but not equal", inexact)
		}
		for op, k := range offByOne {
			if k > 0 {
				t.Logf("%s: %d pixels one level off torchvision's", augOp(op), k)
			}
		}
	}()
	for si, sh := range shapes {
		c, h, w := sh[0], sh[1], sh[2]
		n := c * h * w
		want, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out%d.raw", si)))
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != len(cases)*n {
			t.Fatalf("%v: torchvision wrote %d bytes, want %d", sh, len(want), len(cases)*n)
		}
		mags, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("mag%d.txt", si)))
		if err != nil {
			t.Fatal(err)
		}
		theirs := strings.Fields(string(mags))
		if len(theirs) != len(cases) {
			t.Fatalf("%v: torchvision wrote %d magnitudes, want %d", sh, len(theirs), len(cases))
		}
		src := augImage(c, h, w, uint64(si))
		img := make([]uint8, n)
		bad := 0
		for k, cs := range cases {
			copy(img, src)
			// The op at torchvision's magnitude, so that its arithmetic is
			// what is compared; lcl's magnitude table is checked against
			// torchvision's separately, within an ulp: libtorch's linspace
			// depends on the build's vector width and fused multiply-adds
			// (lcl follows 1.13's AVX2 kernel; the inexact ones are logged).
			m, err := strconv.ParseFloat(theirs[k], 64)
			if err != nil {
				t.Fatal(err)
			}
			if cs.space != "fixed" {
				mine := magnitude(cs.op, cs.bin, cs.space == "ta", h, w)
				if cs.neg {
					mine = -mine
				}
				if mine != m {
					inexact++
				}
				if d := math.Abs(mine - m); d > 1e-6*max(1, math.Abs(m)) || (cs.op == opPosterize && d != 0) {
					t.Errorf("%dx%dx%d %s %s bin %d neg %t: magnitude %v, torchvision's %v", c, h, w, cs.space, cs.op, cs.bin, cs.neg, mine, m)
				}
			}
			g.apply(img, c, h, w, cs.op, m)
			ref := want[k*n : (k+1)*n]
			worst, at := 0, 0
			for i := range img {
				d := absDiff(img[i], ref[i])
				if d > worst {
					worst, at = d, i
				}
				if d == 1 {
					offByOne[cs.op]++
				}
			}
			if worst > 1 && bad < 10 {
				bad++
				t.Errorf("%dx%dx%d %s %s bin %d neg %t (magnitude %v): pixel %d is %d, torchvision %d (differs by %d)",
					c, h, w, cs.space, cs.op, cs.bin, cs.neg, m, at, img[at], ref[at], worst)
			}
			if cs.op == opIdentity && !bytes.Equal(img, src) {
				t.Errorf("Identity changed the image")
			}
		}
	}
}

func shapeArgs(shapes [][3]int) []string {
	out := make([]string, len(shapes))
	for i, s := range shapes {
		out[i] = fmt.Sprintf("%dx%dx%d", s[0], s[1], s[2])
	}
	return out
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// chiSquareCritical is the upper α = 0.001 point of the chi-square
// distribution with k degrees of freedom, by the Wilson–Hilferty cube-root
// normal approximation (within a fraction of a percent for k ≥ 10):
// k·(1 − 2/(9k) + z·√(2/(9k)))³ with z = 3.0902, the normal's 0.999 point.
func chiSquareCritical(k int) float64 {
	const z = 3.090232
	v := 2 / (9 * float64(k))
	return float64(k) * math.Pow(1-v+z*math.Sqrt(v), 3)
}

// chiSquare is Pearson's statistic of counts against probabilities p.
func chiSquare(counts map[string]int, p map[string]float64, n int) float64 {
	var x float64
	for k, pk := range p {
		e := pk * float64(n)
		d := float64(counts[k]) - e
		x += d * d / e
	}
	return x
}

// RandAugment draws each of its N ops uniformly from the 14 and a sign
// with probability ½ for the signed ones, at bin M always;
// TrivialAugmentWide draws one op uniformly, a bin uniformly from 31 for
// the ops with magnitudes (none for Identity, AutoContrast, Equalize) and
// a sign for the signed ones. Chi-square tests over the joint outcomes,
// against the distribution written out by hand here.
func TestAugmentPolicyDrawDistribution(t *testing.T) {
	const n = 200000
	rng := rand.New(rand.NewPCG(11, 12))
	key := func(s augStep) string { return fmt.Sprintf("%s/%d/%t", s.op, s.bin, s.neg) }

	// RandAugment N=2, M=9: each op independently.
	ra := &Augment{RandAugmentN: 2, RandAugmentM: 9}
	p := map[string]float64{}
	for op := range numAugOps {
		if op.signed() {
			p[key(augStep{op, 9, false})] = 1.0 / 28
			p[key(augStep{op, 9, true})] = 1.0 / 28
		} else {
			p[key(augStep{op, 9, false})] = 1.0 / 14
		}
	}
	counts := map[string]int{}
	pairs := map[[2]augOp]int{}
	var steps []augStep
	for range n {
		steps = drawPolicy(ra, rng, steps[:0])
		if len(steps) != 2 {
			t.Fatalf("RandAugment N=2 drew %d ops", len(steps))
		}
		for _, s := range steps {
			if _, ok := p[key(s)]; !ok {
				t.Fatalf("RandAugment drew an impossible step %+v", s)
			}
			counts[key(s)]++
		}
		pairs[[2]augOp{steps[0].op, steps[1].op}]++
	}
	if x, crit := chiSquare(counts, p, 2*n), chiSquareCritical(len(p)-1); x > crit {
		t.Errorf("RandAugment steps: chi-square %.1f > %.1f (%d degrees of freedom)", x, crit, len(p)-1)
	}
	// The two ops are independent: the pairs are uniform over 14².
	pp := map[string]float64{}
	pc := map[string]int{}
	for a := range numAugOps {
		for b := range numAugOps {
			k := fmt.Sprint(a, b)
			pp[k] = 1.0 / (14 * 14)
			pc[k] = pairs[[2]augOp{a, b}]
		}
	}
	if x, crit := chiSquare(pc, pp, n), chiSquareCritical(len(pp)-1); x > crit {
		t.Errorf("RandAugment op pairs: chi-square %.1f > %.1f", x, crit)
	}

	// TrivialAugmentWide.
	ta := &Augment{TrivialAugment: true}
	p = map[string]float64{}
	for op := range numAugOps {
		switch {
		case !op.binned():
			p[key(augStep{op, 0, false})] = 1.0 / 14
		case op.signed():
			for b := range magnitudeBins {
				p[key(augStep{op, b, false})] = 1.0 / 14 / 31 / 2
				p[key(augStep{op, b, true})] = 1.0 / 14 / 31 / 2
			}
		default:
			for b := range magnitudeBins {
				p[key(augStep{op, b, false})] = 1.0 / 14 / 31
			}
		}
	}
	counts = map[string]int{}
	for range n {
		steps = drawPolicy(ta, rng, steps[:0])
		if len(steps) != 1 {
			t.Fatalf("TrivialAugment drew %d ops", len(steps))
		}
		if _, ok := p[key(steps[0])]; !ok {
			t.Fatalf("TrivialAugment drew an impossible step %+v", steps[0])
		}
		counts[key(steps[0])]++
	}
	if x, crit := chiSquare(counts, p, n), chiSquareCritical(len(p)-1); x > crit {
		t.Errorf("TrivialAugment steps: chi-square %.1f > %.1f (%d degrees of freedom)", x, crit, len(p)-1)
	}
}

// The chi-square check itself rejects a skewed draw (a test that cannot
// fail would prove nothing): one op drawn 5 % too often.
func TestChiSquareRejectsSkew(t *testing.T) {
	const n = 200000
	rng := rand.New(rand.NewPCG(3, 4))
	p := map[string]float64{}
	for op := range numAugOps {
		p[op.String()] = 1.0 / 14
	}
	counts := map[string]int{}
	for range n {
		op := augOp(rng.IntN(14))
		if op == opIdentity && rng.Float64() < 0.05 {
			op = opEqualize
		}
		counts[op.String()]++
	}
	if x, crit := chiSquare(counts, p, n), chiSquareCritical(13); x <= crit {
		t.Errorf("a skewed draw passes: chi-square %.1f ≤ %.1f", x, crit)
	}
}

// ksStatistic is the two-sample Kolmogorov–Smirnov statistic.
func ksStatistic(a, b []float64) float64 {
	sort.Float64s(a)
	sort.Float64s(b)
	var d float64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x := min(a[i], b[j])
		for i < len(a) && a[i] == x {
			i++
		}
		for j < len(b) && b[j] == x {
			j++
		}
		d = max(d, math.Abs(float64(i)/float64(len(a))-float64(j)/float64(len(b))))
	}
	return d
}

// Random erasing's boxes follow torchvision's RandomErasing(p,
// scale=(0.02, 0.33), ratio=(0.3, 3.3)): the share of images erased, and
// the distributions of the box's height, width, top row and left column,
// against boxes drawn by torchvision itself (two-sample Kolmogorov–Smirnov
// tests at α = 0.001), on a square and a flat image.
func TestEraseBoxMatchesTorchvision(t *testing.T) {
	py := testdep.PythonModules(t, "torch", "torchvision")
	const n, p = 10000, 0.6
	for _, sh := range [][2]int{{32, 32}, {24, 80}} {
		h, w := sh[0], sh[1]
		out := py.Run(`
import sys, torch
from torchvision.transforms import RandomErasing
torch.manual_seed(5)
n, p, h, w = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = RandomErasing(p=p, value=0)
img = torch.zeros(3, h, w)
for _ in range(n):
    if torch.rand(1) < t.p:
        i, j, bh, bw, v = t.get_params(img, scale=t.scale, ratio=t.ratio, value=[0])
        if v is img:  # ten misses: nothing erased
            print("-")
        else:
            print(i, j, bh, bw)
    else:
        print("-")
`, strconv.Itoa(n), strconv.FormatFloat(p, 'g', -1, 64), strconv.Itoa(h), strconv.Itoa(w))
		var ref [4][]float64
		refErased := 0
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "-" {
				continue
			}
			var v [4]int
			if _, err := fmt.Sscan(line, &v[0], &v[1], &v[2], &v[3]); err != nil {
				t.Fatalf("torchvision printed %q: %v", line, err)
			}
			refErased++
			for k := range v {
				ref[k] = append(ref[k], float64(v[k]))
			}
		}
		rng := rand.New(rand.NewPCG(8, 9))
		var got [4][]float64
		erased := 0
		for range n {
			y, x, bh, bw, ok := eraseBox(h, w, p, rng)
			if !ok {
				continue
			}
			if bh >= h || bw >= w || y < 0 || x < 0 || y+bh > h || x+bw > w {
				t.Fatalf("%dx%d: box %d,%d %dx%d out of the image", h, w, y, x, bh, bw)
			}
			erased++
			for k, v := range []int{y, x, bh, bw} {
				got[k] = append(got[k], float64(v))
			}
		}
		// Two proportions: |p1 − p2| within 3.3 standard errors.
		p1, p2 := float64(erased)/n, float64(refErased)/n
		pm := (p1 + p2) / 2
		if se := math.Sqrt(2 * pm * (1 - pm) / n); math.Abs(p1-p2) > 3.3*se {
			t.Errorf("%dx%d: erased %.4f of the images, torchvision %.4f", h, w, p1, p2)
		}
		crit := 1.949 * math.Sqrt(float64(erased+refErased)/float64(erased*refErased)) // α = 0.001
		for k, name := range []string{"top row", "left column", "height", "width"} {
			if d := ksStatistic(got[k], ref[k]); d > crit {
				t.Errorf("%dx%d: box %s: KS statistic %.4f > %.4f against torchvision", h, w, name, d, crit)
			}
		}
	}
}

// collectBoth runs a loader to the end and returns its batches' values,
// float32 or (U8) bytes, example after example.
func collectBoth(t *testing.T, ds Dataset, cfg LoaderConfig) (x []float32, x8 []uint8, idx []int) {
	t.Helper()
	l, err := NewLoader(context.Background(), ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for {
		b, err := l.Next()
		if err == io.EOF {
			return x, x8, idx
		}
		if err != nil {
			t.Fatal(err)
		}
		x, x8, idx = append(x, b.X...), append(x8, b.X8...), append(idx, b.Index...)
		b.Release()
	}
}

// The policies in the Loader: the same batches for any number of workers
// (each example's draws come from its own generator), other batches in
// another epoch, the crop and flip of the pass without them (drawn first),
// no effect on evaluation; float32 batches are the normalised bytes of U8
// batches except inside the erased box, which is 0 in float32 and the byte
// nearest the mean in bytes. Small images and the JPEG path alike.
func TestLoaderAugment(t *testing.T) {
	cifar := t.TempDir()
	writeCIFAR10(t, cifar, 9, 4)
	folder := t.TempDir()
	writeFolder(t, folder, []string{"a", "b", "c"}, 5)
	for _, spec := range []string{"cifar10:" + cifar, "folder:" + folder + "?size=12&resize=14"} {
		for _, aug := range []Augment{{RandAugmentN: 2, RandAugmentM: 9, Erasing: 0.5}, {TrivialAugment: true, Erasing: 1}} {
			train, _, err := Open(spec)
			if err != nil {
				t.Fatal(err)
			}
			u8 := train.(U8Decoder)
			mean, std := u8.Normalization()
			c, h, w := train.Shape()
			size := c * h * w
			base := LoaderConfig{Pass: Pass{Batch: 4, Shuffle: true, Seed: 5, Train: true}, Epoch: 1, Augment: aug}
			var refX []float32
			var ref8 []uint8
			for _, workers := range []int{1, 3} {
				cfg := base
				cfg.Workers = workers
				x, _, _ := collectBoth(t, train, cfg)
				cfg.U8 = true
				_, x8, _ := collectBoth(t, train, cfg)
				if refX == nil {
					refX, ref8 = x, x8
				} else if !slices.Equal(x, refX) || !slices.Equal(x8, ref8) {
					t.Fatalf("%s %s: %d workers gave other batches than 1", spec, aug, workers)
				}
			}
			plain := base
			plain.Augment = Augment{}
			plain.U8 = true
			_, p8, _ := collectBoth(t, train, plain)
			if slices.Equal(p8, ref8) {
				t.Fatalf("%s %s: the policy changed nothing", spec, aug)
			}
			other := base
			other.Epoch, other.U8 = 2, true
			if _, o8, _ := collectBoth(t, train, other); slices.Equal(o8, ref8) {
				t.Fatalf("%s %s: epochs 1 and 2 augmented alike", spec, aug)
			}
			eval := LoaderConfig{Pass: Pass{Batch: 4, U8: true}, Augment: aug}
			e8, _, _ := collectBoth(t, train, eval)
			eval.Augment = Augment{}
			if e0, _, _ := collectBoth(t, train, eval); !slices.Equal(e8, e0) {
				t.Fatalf("%s %s: evaluation was augmented", spec, aug)
			}
			// The float32 batch is the normalised byte batch but for the
			// erased box.
			norm := make([]float32, len(ref8))
			for k := 0; k < len(ref8); k += size {
				normalize(ref8[k:k+size], norm[k:k+size], mean, std)
			}
			erased := 0
			for i, v := range refX {
				ch := i % size / (h * w)
				if v == norm[i] {
					continue
				}
				if v != 0 || ref8[i] != uint8(math.Round(float64(mean[ch])*255)) {
					t.Fatalf("%s %s: value %d is %v in float32, %d (%v normalised) in bytes", spec, aug, i, v, ref8[i], norm[i])
				}
				erased++
			}
			if erased == 0 {
				t.Fatalf("%s %s: nothing erased", spec, aug)
			}
		}
	}
}

// A data set without bytes (synthetic) cannot be augmented; a bad policy is
// refused with the flag's name.
func TestLoaderAugmentRefusals(t *testing.T) {
	train, _, err := Open("synthetic?n=8&test=4&shape=3,8,8")
	if err != nil {
		t.Fatal(err)
	}
	cfg := LoaderConfig{Pass: Pass{Batch: 4, Train: true}, Augment: Augment{TrivialAugment: true}}
	if _, err := NewLoader(context.Background(), train, cfg); err == nil || !strings.Contains(err.Error(), "no 8-bit pixels to augment") {
		t.Errorf("synthetic data augmented: %v", err)
	}
	cfg.Augment = Augment{RandAugmentN: 2, RandAugmentM: 31}
	if _, err := NewLoader(context.Background(), train, cfg); err == nil || !strings.Contains(err.Error(), "--randaugment") {
		t.Errorf("magnitude bin 31 accepted: %v", err)
	}
}

func TestAugmentParseAndCheck(t *testing.T) {
	for _, c := range []struct {
		in   string
		n, m int
		err  bool
	}{
		{"2,9", 2, 9, false}, {" 1 , 30 ", 1, 30, false}, {"3,0", 3, 0, false},
		{"0,9", 0, 0, true}, {"2,31", 0, 0, true}, {"2,-1", 0, 0, true}, {"2", 0, 0, true}, {"a,b", 0, 0, true}, {"17,5", 0, 0, true},
	} {
		n, m, err := ParseRandAugment(c.in)
		if (err != nil) != c.err || n != c.n || m != c.m {
			t.Errorf("ParseRandAugment(%q) = %d, %d, %v", c.in, n, m, err)
		}
	}
	for _, c := range []struct {
		a    Augment
		want string // "" valid; else part of the error
		name string
	}{
		{Augment{}, "", ""},
		{Augment{RandAugmentN: 2, RandAugmentM: 9, Erasing: 0.25}, "", "randaugment=2,9 erasing=0.25"},
		{Augment{TrivialAugment: true}, "", "trivialaugment"},
		{Augment{RandAugmentN: 2, RandAugmentM: 9, TrivialAugment: true}, "choose one", ""},
		{Augment{Erasing: 1.5}, "--random-erasing", ""},
		{Augment{Erasing: math.NaN()}, "--random-erasing", ""},
	} {
		err := c.a.Check()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: Check() = %v, want %q", c.a, err, c.want)
		}
		if c.want == "" && c.a.String() != c.name {
			t.Errorf("%+v: String() = %q, want %q", c.a, c.a.String(), c.name)
		}
	}
}

// BenchmarkAugmentPolicy times the policies alone on one worker's buffers
// (the image is restored from a copy each time, which is timed too).
func BenchmarkAugmentPolicy(b *testing.B) {
	for _, pol := range []struct {
		name string
		a    Augment
	}{
		{"randaugment=2,9", Augment{RandAugmentN: 2, RandAugmentM: 9}},
		{"trivialaugment", Augment{TrivialAugment: true}},
	} {
		for _, s := range []int{32, 224} {
			b.Run(fmt.Sprintf("%s/%dx%d", pol.name, s, s), func(b *testing.B) {
				src := augImage(3, s, s, 1)
				img := make([]uint8, len(src))
				rng := rand.New(rand.NewPCG(1, 2))
				var g augmenter
				b.SetBytes(int64(len(src)))
				b.ReportAllocs()
				for b.Loop() {
					copy(img, src)
					g.policy(img, 3, s, s, &pol.a, rng)
				}
			})
		}
	}
}

// BenchmarkAugmentOp times each op of the policies alone on one 224×224
// RGB image (restored from a copy each time, which is timed too), at a
// mid magnitude: where a policy's time goes.
func BenchmarkAugmentOp(b *testing.B) {
	const s = 224
	for op := opIdentity; op <= opEqualize; op++ {
		b.Run(op.String(), func(b *testing.B) {
			src := augImage(3, s, s, 1)
			img := make([]uint8, len(src))
			var g augmenter
			m := magnitude(op, 9, false, s, s)
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				copy(img, src)
				g.apply(img, 3, s, s, op, m)
			}
		})
	}
}
