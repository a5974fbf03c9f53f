package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// The training policies on top of a data set's crop and flip: RandAugment
// (Cubuk et al. 2020) and TrivialAugmentWide (Müller & Hutter 2021) with
// torchvision's op set, magnitude bins and signed magnitudes, and random
// erasing (Zhong et al. 2020) with torchvision's RandomErasing semantics.
// They run in the Loader's workers on the uint8 CHW image a U8Decoder wrote
// (after its crop and flip, before normalisation), as torchvision runs them
// on the uint8 tensor; every op equals torchvision.transforms.functional's
// tensor path within one intensity level (augment_test.go compares them).

// Augment is the training augmentation a Loader applies to every example of
// a training pass after the data set's own crop and flip. The zero value
// applies none.
type Augment struct {
	// RandAugmentN > 0 applies RandAugment: N ops, each drawn uniformly
	// from the 14 of torchvision.transforms.RandAugment, at magnitude bin
	// RandAugmentM of 31 (0..30), its sign drawn for the signed ops.
	RandAugmentN, RandAugmentM int
	// TrivialAugment applies TrivialAugmentWide: one op drawn uniformly,
	// its bin drawn uniformly from 31, its sign drawn for the signed ops.
	TrivialAugment bool
	// Erasing is random erasing's probability (0: off): a box of 2–33 % of
	// the area, aspect ratio log-uniform in [0.3, 3.3], set to 0 after
	// normalisation (the channel mean).
	Erasing float64
}

// Enabled reports whether a is any augmentation at all.
func (a Augment) Enabled() bool { return a.RandAugmentN > 0 || a.TrivialAugment || a.Erasing > 0 }

// String names a for a run's identity and result.json, as lcl train's
// flags spell it ("randaugment=2,9 erasing=0.25"); "" when none.
func (a Augment) String() string {
	var parts []string
	if a.RandAugmentN > 0 {
		parts = append(parts, fmt.Sprintf("randaugment=%d,%d", a.RandAugmentN, a.RandAugmentM))
	}
	if a.TrivialAugment {
		parts = append(parts, "trivialaugment")
	}
	if a.Erasing > 0 {
		parts = append(parts, "erasing="+strconv.FormatFloat(a.Erasing, 'g', -1, 64))
	}
	return strings.Join(parts, " ")
}

// Check validates a, naming lcl train's flags.
func (a Augment) Check() error {
	switch {
	case a.RandAugmentN < 0 || a.RandAugmentN > maxRandAugmentOps:
		return fmt.Errorf("--randaugment %d,%d: want 1 ≤ N ≤ %d ops", a.RandAugmentN, a.RandAugmentM, maxRandAugmentOps)
	case a.RandAugmentN > 0 && (a.RandAugmentM < 0 || a.RandAugmentM >= magnitudeBins):
		return fmt.Errorf("--randaugment %d,%d: want a magnitude bin 0 ≤ M ≤ %d", a.RandAugmentN, a.RandAugmentM, magnitudeBins-1)
	case a.RandAugmentN > 0 && a.TrivialAugment:
		return fmt.Errorf("--randaugment and --trivialaugment: choose one policy")
	case !(a.Erasing >= 0 && a.Erasing <= 1):
		return fmt.Errorf("--random-erasing %v: want a probability 0 ≤ P ≤ 1", a.Erasing)
	}
	return nil
}

// ParseRandAugment parses RandAugment's N,M (ops per image, magnitude bin).
func ParseRandAugment(s string) (n, m int, err error) {
	ns, ms, ok := strings.Cut(s, ",")
	if ok {
		n, err = strconv.Atoi(strings.TrimSpace(ns))
		if err == nil {
			m, err = strconv.Atoi(strings.TrimSpace(ms))
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("want N,M: ops per image and a magnitude bin 0..%d (e.g. 2,9)", magnitudeBins-1)
	}
	a := Augment{RandAugmentN: n, RandAugmentM: m}
	if n < 1 {
		a.RandAugmentN = -1 // Check's message for any N below 1
	}
	if err := a.Check(); err != nil {
		return 0, 0, fmt.Errorf("want 1 ≤ N ≤ %d and 0 ≤ M ≤ %d", maxRandAugmentOps, magnitudeBins-1)
	}
	return n, m, nil
}

const (
	// magnitudeBins is torchvision's num_magnitude_bins default (31) for
	// RandAugment and TrivialAugmentWide.
	magnitudeBins = 31
	// maxRandAugmentOps bounds N (the papers use 1–3).
	maxRandAugmentOps = 16
)

// augOp is one op of torchvision's RandAugment and TrivialAugmentWide, in
// the order of their _augmentation_space (the order the op index draws).
type augOp uint8

const (
	opIdentity augOp = iota
	opShearX
	opShearY
	opTranslateX
	opTranslateY
	opRotate
	opBrightness
	opColor
	opContrast
	opSharpness
	opPosterize
	opSolarize
	opAutoContrast
	opEqualize
	numAugOps
)

var augOpNames = [numAugOps]string{"Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate",
	"Brightness", "Color", "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize"}

func (op augOp) String() string { return augOpNames[op] }

// signed reports whether the op's magnitude takes a random sign.
func (op augOp) signed() bool { return op >= opShearX && op <= opSharpness }

// binned reports whether the op has magnitudes (the others draw no bin).
func (op augOp) binned() bool { return op >= opShearX && op <= opSolarize }

// magnitude is bin b of op's magnitudes in RandAugment (wide false, for an
// h×w image) or TrivialAugmentWide (wide true), as torchvision's float32
// linspace and Posterize's rounded integers give them.
func magnitude(op augOp, b int, wide bool, h, w int) float64 {
	top := func(ra, ta float64) float64 {
		if wide {
			return ta
		}
		return ra
	}
	switch op {
	case opShearX, opShearY:
		return linspace32(0, top(0.3, 0.99), b)
	case opTranslateX:
		return linspace32(0, top(150.0/331.0*float64(w), 32), b)
	case opTranslateY:
		return linspace32(0, top(150.0/331.0*float64(h), 32), b)
	case opRotate:
		return linspace32(0, top(30, 135), b)
	case opBrightness, opColor, opContrast, opSharpness:
		return linspace32(0, top(0.9, 0.99), b)
	case opPosterize:
		// 8 - (arange(31) / ((31-1)/4)).round(), /6 for the wide space.
		d := float32(top(7.5, 5))
		return float64(8 - int(math.RoundToEven(float64(float32(b)/d))))
	case opSolarize:
		return linspace32(255, 0, b)
	}
	return 0
}

// linspace32 is element i of torch.linspace(start, end, 31) in float32 as
// libtorch 1.13's CPU kernel computes it on AVX2: ATen counts from the
// start in the first half and back from the end in the second, and its
// vectorised loop writes elements 0–15 as two vectors of eight, each
// base + k·step, and the rest one by one, compiled into fused
// multiply-adds (checked bit for bit against torch.linspace; other
// builds may differ in the last bit).
func linspace32(start, end float64, i int) float64 {
	s, e := float32(start), float32(end)
	step := (e - s) / float32(magnitudeBins-1)
	if i < 16 {
		b := i &^ 7 // the vector's first element
		base := s + float32(step*float32(b))
		return float64(base + float32(float32(i-b)*step))
	}
	return float64(fma32(-step, float32(magnitudeBins-1-i), e))
}

// augStep is one drawn op: its bin (of magnitudeBins) and sign.
type augStep struct {
	op  augOp
	bin int
	neg bool
}

// drawPolicy draws a's RandAugment or TrivialAugmentWide ops from rng,
// appending them to steps: per op, in order, its index (uniform over the 14),
// for TrivialAugmentWide its bin (uniform over 31, only for ops with
// magnitudes), then its sign (only for signed ops) — torchvision's draws.
func drawPolicy(a *Augment, rng *rand.Rand, steps []augStep) []augStep {
	switch {
	case a.RandAugmentN > 0:
		for range a.RandAugmentN {
			s := augStep{op: augOp(rng.IntN(int(numAugOps))), bin: a.RandAugmentM}
			s.neg = s.op.signed() && rng.IntN(2) == 1
			steps = append(steps, s)
		}
	case a.TrivialAugment:
		s := augStep{op: augOp(rng.IntN(int(numAugOps)))}
		if s.op.binned() {
			s.bin = rng.IntN(magnitudeBins)
		}
		s.neg = s.op.signed() && rng.IntN(2) == 1
		steps = append(steps, s)
	}
	return steps
}

// eraseBox draws random erasing's box on an h×w image as torchvision's
// RandomErasing(p, scale=(0.02, 0.33), ratio=(0.3, 3.3)): first whether to
// erase (probability p), then up to ten tries of an area and a log-uniform
// aspect ratio (height/width) until the box fits strictly inside, then its
// top row and left column. ok is false when nothing is erased.
func eraseBox(h, w int, p float64, rng *rand.Rand) (y, x, bh, bw int, ok bool) {
	if !(rng.Float64() < p) {
		return 0, 0, 0, 0, false
	}
	area := float64(h * w)
	lr0, lr1 := math.Log(0.3), math.Log(3.3)
	for range 10 {
		target := area * (0.02 + rng.Float64()*(0.33-0.02))
		ar := math.Exp(lr0 + rng.Float64()*(lr1-lr0))
		// Python's round: half to even.
		bh = int(math.RoundToEven(math.Sqrt(target * ar)))
		bw = int(math.RoundToEven(math.Sqrt(target / ar)))
		if bh < h && bw < w {
			return rng.IntN(h - bh + 1), rng.IntN(w - bw + 1), bh, bw, true
		}
	}
	return 0, 0, 0, 0, false
}

// augmenter is one worker's scratch space for the policies: buffers reused
// from image to image, so augmenting allocates nothing once warm.
type augmenter struct {
	steps []augStep
	tmp   []uint8 // the geometric ops' output
	gray  []uint8 // Color's and Contrast's grey image
	idx   []int32 // a row of affine's source pixels
	img   []uint8 // the Loader's decoded bytes when batches are float32
}

// policy applies a's RandAugment or TrivialAugmentWide to the c×h×w image
// img (uint8 CHW, c 1 or 3) in place, drawing from rng.
func (g *augmenter) policy(img []uint8, c, h, w int, a *Augment, rng *rand.Rand) {
	g.steps = drawPolicy(a, rng, g.steps[:0])
	for _, s := range g.steps {
		m := magnitude(s.op, s.bin, a.TrivialAugment, h, w)
		if s.neg {
			m = -m
		}
		g.apply(img, c, h, w, s.op, m)
	}
}

// apply applies op at magnitude m to img in place, as torchvision's
// autoaugment._apply_op with nearest interpolation and fill 0.
func (g *augmenter) apply(img []uint8, c, h, w int, op augOp, m float64) {
	switch op {
	case opIdentity:
	case opShearX, opShearY, opRotate:
		g.affine(img, c, h, w, affineOf(op, m, h, w))
	case opTranslateX:
		translate(img, c, h, w, int(m), 0) // int(): Python's truncation
	case opTranslateY:
		translate(img, c, h, w, 0, int(m))
	case opBrightness:
		var lut [256]uint8
		r, q := blendFactors(1 + m)
		for p := range lut {
			lut[p] = blendByte(r, q, float32(p), 0)
		}
		applyLUT(img, &lut)
	case opColor:
		if c == 3 { // a grey image is left alone, as PIL
			g.grayscale(img, h*w)
			g.blendImage(img, c, h*w, 1+m, g.gray)
		}
	case opContrast:
		g.contrast(img, c, h*w, 1+m)
	case opSharpness:
		g.sharpness(img, c, h, w, 1+m)
	case opPosterize:
		var lut [256]uint8
		mask := uint8(0xff << (8 - int(m)))
		for p := range lut {
			lut[p] = uint8(p) & mask
		}
		applyLUT(img, &lut)
	case opSolarize:
		var lut [256]uint8
		t := float32(m)
		for p := range lut {
			lut[p] = uint8(p)
			if float32(p) >= t {
				lut[p] = 255 - uint8(p)
			}
		}
		applyLUT(img, &lut)
	case opAutoContrast:
		autocontrast(img, c, h*w)
	case opEqualize:
		equalize(img, c, h*w)
	}
}

// affineOf is the inverse affine matrix of ShearX, ShearY or Rotate at
// magnitude m on an h×w image, as _apply_op builds it.
func affineOf(op augOp, m float64, h, w int) [6]float64 {
	switch op {
	case opShearX:
		return invAffine(-0.5*float64(w), -0.5*float64(h), 0, 0, 0, degrees(math.Atan(m)), 0)
	case opShearY:
		return invAffine(-0.5*float64(w), -0.5*float64(h), 0, 0, 0, 0, degrees(math.Atan(m)))
	}
	// F.rotate's angle is counter-clockwise: the affine matrix of -angle.
	return invAffine(0, 0, -m, 0, 0, 0, 0)
}

func degrees(rad float64) float64 { return rad * (180 / math.Pi) }

// invAffine is torchvision's _get_inverse_affine_matrix (functional.py)
// for a centre (cx, cy) relative to the image centre, an angle, a
// translation and shears in degrees, at scale 1: the map from output to
// input coordinates, relative to the image centre. The explicit float64
// conversions keep the compiler from fusing products into FMAs, so the
// arithmetic is Python's.
func invAffine(cx, cy, angle, tx, ty, shearX, shearY float64) [6]float64 {
	rot := angle * (math.Pi / 180)
	sx := shearX * (math.Pi / 180)
	sy := shearY * (math.Pi / 180)
	a := math.Cos(rot-sy) / math.Cos(sy)
	b := float64(-math.Cos(rot-sy)*math.Tan(sx))/math.Cos(sy) - math.Sin(rot)
	c := math.Sin(rot-sy) / math.Cos(sy)
	d := float64(-math.Sin(rot-sy)*math.Tan(sx))/math.Cos(sy) + math.Cos(rot)
	m := [6]float64{d, -b, 0, -c, a, 0}
	m[2] += float64(m[0]*(-cx-tx)) + float64(m[1]*(-cy-ty))
	m[5] += float64(m[3]*(-cx-tx)) + float64(m[4]*(-cy-ty))
	m[2] += cx
	m[5] += cy
	return m
}

// affine resamples img in place through the inverse affine matrix m with
// nearest interpolation and 0 outside, as torchvision's tensor affine: the
// float32 grid of _gen_affine_grid (output pixel centres relative to the
// image centre, mapped by m, divided by the half sizes) unnormalised as
// grid_sample (align_corners false) and rounded half to even.
func (g *augmenter) affine(img []uint8, c, h, w int, m [6]float64) {
	n := h * w
	if cap(g.tmp) < c*n {
		g.tmp = make([]uint8, c*n)
	}
	if cap(g.idx) < w {
		g.idx = make([]int32, w)
	}
	out := g.tmp[:c*n]
	k := samplingGrid(m, h, w)
	affineSample(img, out, c, h, w, &k, g.idx[:w])
	copy(img, out)
}

// samplingGrid is the sampling kernels' view of the inverse affine matrix m
// on an h×w image: r00 r10 r20 r01 r11 r21 (m over the half sizes), then
// the half sizes hw hh.
func samplingGrid(m [6]float64, h, w int) [8]float32 {
	hw, hh := float32(0.5*float64(w)), float32(0.5*float64(h))
	return [8]float32{float32(m[0]) / hw, float32(m[1]) / hw, float32(m[2]) / hw,
		float32(m[3]) / hh, float32(m[4]) / hh, float32(m[5]) / hh, hw, hh}
}

// affineSampleGo writes into out the c×h×w image img sampled through k
// (r00 r10 r20 r01 r11 r21: the inverse matrix over the half sizes; hw hh:
// the half sizes), one row at a time: idx[x] is the source pixel of the
// row's output pixel x, or -1 outside the image.
func affineSampleGo(img, out []uint8, c, h, w int, k *[8]float32, idx []int32) {
	n := h * w
	r00, r10, r20, r01, r11, r21, hw, hh := k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]
	x0, y0 := float32(-0.5*float64(w)+0.5), float32(-0.5*float64(h)+0.5)
	for y := range h {
		yc := y0 + float32(y)
		for x := range idx {
			xc := x0 + float32(x)
			// The grid's product with theta as libtorch's CPU bmm sums it
			// on FMA (AVX2) CPUs: fused multiply-adds in order, checked bit
			// for bit against torchvision, so a tie between two pixels
			// falls as there (a libtorch without FMA may round a tie the
			// other way: one pixel's neighbour).
			gx := fma32(yc, r10, float32(xc*r00)) + r20
			gy := fma32(yc, r11, float32(xc*r01)) + r21
			ix := float32(float32(gx+1)*hw) - 0.5
			iy := float32(float32(gy+1)*hh) - 0.5
			sx := math.RoundToEven(float64(ix))
			sy := math.RoundToEven(float64(iy))
			idx[x] = -1
			if sx >= 0 && sy >= 0 && sx <= float64(w-1) && sy <= float64(h-1) {
				idx[x] = int32(int(sy)*w + int(sx))
			}
		}
		for ch := range c {
			p, o := img[ch*n:(ch+1)*n], out[ch*n+y*w:ch*n+(y+1)*w]
			for x, i := range idx {
				o[x] = 0
				if i >= 0 {
					o[x] = p[i]
				}
			}
		}
	}
}

// fma32 is a·b + c rounded once to float32 (the product of two float32s
// is exact in float64; the float64 sum's rounding before float32's does
// not matter at the sampling grid's magnitudes).
func fma32(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }

// translate shifts img in place by (dx, dy) pixels, 0 where nothing moves
// in: torchvision's affine of an integer translation, whose sampling
// points land within float32 rounding of whole pixels.
func translate(img []uint8, c, h, w, dx, dy int) {
	for ch := range c {
		p := img[ch*h*w : (ch+1)*h*w]
		// Walk in the direction that reads each source before it is
		// overwritten.
		for k := range h {
			y := k
			if dy > 0 {
				y = h - 1 - k
			}
			row := p[y*w : (y+1)*w]
			sy := y - dy
			if sy < 0 || sy >= h {
				clear(row)
				continue
			}
			src := p[sy*w : (sy+1)*w]
			switch {
			case dx >= w || -dx >= w:
				clear(row)
			case dx >= 0:
				copy(row[dx:], src[:w-dx]) // copy handles the overlap of sy == y
				clear(row[:dx])
			default:
				copy(row[:w+dx], src[-dx:])
				clear(row[w+dx:])
			}
		}
	}
}

// blendFactors are _blend's ratio and 1−ratio as float32, as torch
// multiplies a float32 tensor by them.
func blendFactors(ratio float64) (r, q float32) { return float32(ratio), float32(1 - ratio) }

// blendByte is torchvision's _blend of one value: ratio·a + (1−ratio)·b in
// float32, clamped to [0, 255], truncated to a byte.
func blendByte(r, q, a, b float32) uint8 {
	v := float32(r*a) + float32(q*b)
	return uint8(min(max(v, 0), 255))
}

func applyLUT(img []uint8, lut *[256]uint8) {
	for i, p := range img {
		img[i] = lut[p]
	}
}

// blendImage blends each channel of img with the single-plane image other.
func (g *augmenter) blendImage(img []uint8, c, n int, ratio float64, other []uint8) {
	r, q := blendFactors(ratio)
	blendPlanes(img, other, n, c, true, r, q)
}

// blendPlanesGo is blendByte over the c planes of n bytes of img, with the
// one plane other (shared) or other's c planes.
func blendPlanesGo(img, other []uint8, n, c int, shared bool, r, q float32) {
	for ch := range c {
		p, o := img[ch*n:(ch+1)*n], other[:n]
		if !shared {
			o = other[ch*n : (ch+1)*n]
		}
		for i, v := range p {
			p[i] = blendByte(r, q, float32(v), float32(o[i]))
		}
	}
}

// grayscale writes rgb_to_grayscale of the 3-channel img into g.gray.
func (g *augmenter) grayscale(img []uint8, n int) {
	if cap(g.gray) < n {
		g.gray = make([]uint8, n)
	}
	g.gray = g.gray[:n]
	grayPlane(img, g.gray, n)
}

// grayPlaneGo is rgb_to_grayscale: 0.2989·R + 0.587·G + 0.114·B in float32,
// truncated.
func grayPlaneGo(img, gray []uint8, n int) {
	const wr, wg, wb = float32(0.2989), float32(0.587), float32(0.114)
	rp, gp, bp := img[:n], img[n:2*n], img[2*n:3*n]
	for i := range gray[:n] {
		v := float32(float32(wr*float32(rp[i]))+float32(wg*float32(gp[i]))) + float32(wb*float32(bp[i]))
		gray[i] = uint8(v)
	}
}

// contrast is adjust_contrast: a blend with the mean of the grey image (of
// the image itself when it has one channel).
func (g *augmenter) contrast(img []uint8, c, n int, ratio float64) {
	grey := img[:n]
	if c == 3 {
		g.grayscale(img, n)
		grey = g.gray
	}
	var sum int
	for _, v := range grey {
		sum += int(v)
	}
	mean := float32(sum) / float32(n)
	var lut [256]uint8
	r, q := blendFactors(ratio)
	for p := range lut {
		lut[p] = blendByte(r, q, float32(p), mean)
	}
	applyLUT(img, &lut)
}

// sharpness is adjust_sharpness: a blend with the image smoothed inside
// its one-pixel border (the border blended with itself).
func (g *augmenter) sharpness(img []uint8, c, h, w int, ratio float64) {
	if h <= 2 || w <= 2 {
		return
	}
	n := h * w
	if cap(g.tmp) < c*n {
		g.tmp = make([]uint8, c*n)
	}
	blur := g.tmp[:c*n]
	blurPlanes(img, blur, c, h, w)
	r, q := blendFactors(ratio)
	blendPlanes(img, blur, n, c, false, r, q)
}

// blurPlanesGo writes into blur the c×h×w image img (h, w > 2) smoothed by
// the kernel [1 1 1; 1 5 1; 1 1 1]/13 inside its one-pixel border, the
// border copied. The smoothed value is rounded from the exact sum (never
// a tie: s/13 is never a half).
func blurPlanesGo(img, blur []uint8, c, h, w int) {
	n := h * w
	copy(blur[:c*n], img)
	for ch := range c {
		p, b := img[ch*n:(ch+1)*n], blur[ch*n:(ch+1)*n]
		for y := 1; y < h-1; y++ {
			up, mid, dn := p[(y-1)*w:y*w], p[y*w:(y+1)*w], p[(y+1)*w:(y+2)*w]
			for x := 1; x < w-1; x++ {
				s := int(up[x-1]) + int(up[x]) + int(up[x+1]) + int(mid[x-1]) + 5*int(mid[x]) + int(mid[x+1]) +
					int(dn[x-1]) + int(dn[x]) + int(dn[x+1])
				b[y*w+x] = uint8((2*s + 13) / 26)
			}
		}
	}
}

// autocontrast stretches each channel of img to [0, 255]: (v − min) ·
// (1/(max − min) · 255) in float32, truncated; a flat channel is left
// alone.
func autocontrast(img []uint8, c, n int) {
	for ch := range c {
		p := img[ch*n : (ch+1)*n]
		lo, hi := uint8(255), uint8(0)
		for _, v := range p {
			lo, hi = min(lo, v), max(hi, v)
		}
		if lo == hi {
			continue
		}
		// bound / tensor is Tensor.__rtruediv__: the reciprocal times 255.
		scale := float32(1/float32(hi-lo)) * 255
		var lut [256]uint8
		for v := range lut {
			x := float32(float32(v)-float32(lo)) * scale
			lut[v] = uint8(min(max(x, 0), 255))
		}
		applyLUT(p, &lut)
	}
}

// equalize is torchvision's equalize (PIL's ImageOps.equalize) per
// channel: a look-up table from the cumulative histogram in steps of the
// pixels outside the last occupied bin over 255.
func equalize(img []uint8, c, n int) {
	for ch := range c {
		p := img[ch*n : (ch+1)*n]
		var hist [256]int
		for _, v := range p {
			hist[v]++
		}
		last := 255
		for hist[last] == 0 {
			last--
		}
		step := (n - hist[last]) / 255
		if step == 0 {
			continue
		}
		var lut [256]uint8
		cum := 0
		for v := 1; v < 256; v++ {
			cum += hist[v-1]
			lut[v] = uint8(min((cum+step/2)/step, 255))
		}
		applyLUT(p, &lut)
	}
}

// erase sets the box (y, x, bh, bw) of every channel of the c×h×w image
// img to fill[channel].
func erase[T uint8 | float32](img []T, c, h, w, y, x, bh, bw int, fill []T) {
	for ch := range c {
		p := img[ch*h*w : (ch+1)*h*w]
		for r := y; r < y+bh; r++ {
			row := p[r*w+x : r*w+x+bw]
			for i := range row {
				row[i] = fill[ch]
			}
		}
	}
}
