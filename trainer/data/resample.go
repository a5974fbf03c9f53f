package data

import (
	"image"
	"math"
)

// The standard library decodes JPEGs to *image.YCbCr. Resampling the crop
// directly on the luma and chroma planes and converting to RGB only at the
// output resolution is about three times faster than x/image/draw's generic
// path to RGBA (which converts every source pixel); the filter is the same
// kind: a triangle (bilinear) kernel widened by the shrink factor, so
// downscaling is antialiased as with PIL's and torchvision's bilinear resize.

// axis holds the filter taps of one axis: output i reads n[i] source samples
// from start[i] with weights w[i*stride:].
type axis struct {
	start, n []int32
	w        []float32
	stride   int
}

// set computes the taps that resample the continuous source interval [a, b)
// of a plane of size limit to out samples.
func (ax *axis) set(a, b float64, out, limit int) {
	scale := (b - a) / float64(out)
	support := max(scale, 1)
	ax.stride = int(math.Ceil(support))*2 + 2
	ax.start = grow32(ax.start, out)
	ax.n = grow32(ax.n, out)
	if cap(ax.w) < out*ax.stride {
		ax.w = make([]float32, out*ax.stride)
	}
	ax.w = ax.w[:out*ax.stride]
	for i := range out {
		c := a + (float64(i)+0.5)*scale
		lo := max(int(math.Floor(c-support)), 0)
		hi := min(int(math.Ceil(c+support)), limit)
		w := ax.w[i*ax.stride : (i+1)*ax.stride]
		var sum float64
		k := 0
		for j := lo; j < hi && k < len(w); j++ {
			v := 1 - math.Abs(float64(j)+0.5-c)/support
			if v <= 0 {
				if k == 0 {
					lo = j + 1
				}
				continue
			}
			w[k] = float32(v)
			sum += v
			k++
		}
		if k == 0 { // the centre lies outside the plane: nearest sample
			lo, k, sum = min(max(int(c), 0), limit-1), 1, 1
			w[0] = 1
		}
		for t := range k {
			w[t] = float32(float64(w[t]) / sum)
		}
		ax.start[i], ax.n[i] = int32(lo), int32(k)
	}
}

func grow32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// resampler is per-goroutine scratch space for resizing: planes for the
// YCbCr path, an RGBA image for the generic one.
type resampler struct {
	rgba  *image.RGBA
	turbo *image.YCbCr // planes of the last libjpeg-turbo decode, reused
	x, y  axis
	tmp   []float32
	plane [3][]float32
}

// span returns the source samples [lo, hi) the taps of ax read.
func (ax *axis) span() (lo, hi int) {
	lo = int(ax.start[0])
	for i, st := range ax.start {
		lo, hi = min(lo, int(st)), max(hi, int(st+ax.n[i]))
	}
	return lo, hi
}

// resize resamples a byte plane with the given stride to out (s×s) with
// the taps in r.x and r.y (set for this plane's size and crop). It reads
// only the rows and columns the taps name (the decoder may leave the other
// rows stale).
func (r *resampler) resize(src []byte, stride, s int, out []float32) {
	xlo, xhi := r.x.span()
	if n := (xhi - xlo) * padded(s); cap(r.tmp) < n {
		r.tmp = make([]float32, n)
	}
	resizePlane(src, stride, s, &r.x, &r.y, r.tmp, out)
}

// padded is s rounded up to the 8 lanes of the C kernel's transposes.
func padded(s int) int { return (s + 7) &^ 7 }

// chromaFactors returns the horizontal and vertical chroma subsampling.
func chromaFactors(r image.YCbCrSubsampleRatio) (hf, vf int, ok bool) {
	switch r {
	case image.YCbCrSubsampleRatio444:
		return 1, 1, true
	case image.YCbCrSubsampleRatio422:
		return 2, 1, true
	case image.YCbCrSubsampleRatio420:
		return 2, 2, true
	case image.YCbCrSubsampleRatio440:
		return 1, 2, true
	case image.YCbCrSubsampleRatio411:
		return 4, 1, true
	case image.YCbCrSubsampleRatio410:
		return 4, 2, true
	}
	return 0, 0, false
}

// ycbcr resamples the crop c of img to s×s and writes normalised RGB CHW to
// dst (or, with dst8, RGB bytes CHW), flipped horizontally if asked. It
// reports false, writing nothing, for layouts it does not handle (origin
// not at 0,0; unknown subsampling).
func (r *resampler) ycbcr(img *image.YCbCr, c image.Rectangle, s int, flip bool, opt *Options, dst []float32, dst8 []uint8) bool {
	return r.ycbcrRegion(img, float64(c.Min.X), float64(c.Min.Y), float64(c.Max.X), float64(c.Max.Y), s, flip, opt, dst, dst8)
}

// ycbcrRegion is ycbcr for the continuous region [x0,x1)×[y0,y1) of img
// (a crop chosen on the full image, scaled to a reduced-size decode).
func (r *resampler) ycbcrRegion(img *image.YCbCr, x0, y0, x1, y1 float64, s int, flip bool, opt *Options, dst []float32, dst8 []uint8) bool {
	hf, vf, ok := chromaFactors(img.SubsampleRatio)
	if !ok || img.Rect.Min != (image.Point{}) {
		return false
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	cw, ch := (w+hf-1)/hf, (h+vf-1)/vf
	for i := range r.plane {
		if cap(r.plane[i]) < s*s {
			r.plane[i] = make([]float32, s*s)
		}
		r.plane[i] = r.plane[i][:s*s]
	}
	r.x.set(x0, x1, s, w)
	r.y.set(y0, y1, s, h)
	r.resize(img.Y, img.YStride, s, r.plane[0])
	if hf > 1 { // Cb and Cr share their taps (and with 4:4:4 share Y's)
		fx := float64(hf)
		r.x.set(x0/fx, x1/fx, s, cw)
	}
	if vf > 1 {
		fy := float64(vf)
		r.y.set(y0/fy, y1/fy, s, ch)
	}
	r.resize(img.Cb, img.CStride, s, r.plane[1])
	r.resize(img.Cr, img.CStride, s, r.plane[2])
	var scale, bias [3]float32
	for k := range 3 {
		scale[k] = 1 / (255 * opt.Std[k])
		bias[k] = -opt.Mean[k] / opt.Std[k]
	}
	ycbcrToRGB(r.plane[0], r.plane[1], r.plane[2], s, flip, scale, bias, dst, dst8)
	return true
}

func clamp255(v float32) float32 {
	return min(max(v, 0), 255)
}

// resizePlaneGo is the separable filter of resize: first the vertical
// taps over the source columns [xlo, xhi) the horizontal taps read, into
// tmp (s rows of xhi-xlo), then the horizontal taps of those rows into out
// (s × s). Each value is a sum from zero in tap order, each product
// rounded to float32 before it is added (the conversions keep the compiler
// from fusing them on FMA targets). resizePlane is the same arithmetic in C
// where cgo is on (resample_cgo.go), bit for bit (TestResampleKernelsMatchGo).
func resizePlaneGo(src []byte, stride, s int, ax, ay *axis, tmp, out []float32) {
	xlo, xhi := ax.span()
	w := xhi - xlo
	for o := range s {
		t := tmp[o*w : (o+1)*w]
		st, n := int(ay.start[o]), int(ay.n[o])
		clear(t)
		for k, v := range ay.w[o*ay.stride : o*ay.stride+n] {
			row := src[(st+k)*stride+xlo : (st+k)*stride+xhi]
			for x, p := range row {
				t[x] += float32(v * float32(p))
			}
		}
	}
	for o := range s {
		t := tmp[o*w : (o+1)*w]
		dst := out[o*s : (o+1)*s]
		for i := range dst {
			st, n := int(ax.start[i])-xlo, int(ax.n[i])
			px := t[st : st+n]
			var acc float32
			for k, v := range ax.w[i*ax.stride : i*ax.stride+n] {
				acc += float32(v * px[k])
			}
			dst[i] = acc
		}
	}
}

// ycbcrToRGBGo converts the resampled s×s planes to RGB CHW: bytes into
// dst8 when it is non-nil, else normalised floats (x·scale + bias) into
// dst; flip mirrors each row. JFIF YCbCr → RGB as image/color, clamped to
// [0,255].
func ycbcrToRGBGo(yp, cbp, crp []float32, s int, flip bool, scale, bias [3]float32, dst []float32, dst8 []uint8) {
	n := s * s
	for y := range s {
		for x := range s {
			sx := x
			if flip {
				sx = s - 1 - x
			}
			i := y*s + sx
			yy, cb, cr := yp[i], cbp[i]-128, crp[i]-128
			rr := clamp255(yy + 1.402*cr)
			gg := clamp255(yy - 0.344136*cb - 0.714136*cr)
			bb := clamp255(yy + 1.772*cb)
			o := y*s + x
			if dst8 != nil {
				dst8[o], dst8[n+o], dst8[2*n+o] = uint8(rr+0.5), uint8(gg+0.5), uint8(bb+0.5)
				continue
			}
			dst[o] = rr*scale[0] + bias[0]
			dst[n+o] = gg*scale[1] + bias[1]
			dst[2*n+o] = bb*scale[2] + bias[2]
		}
	}
}
