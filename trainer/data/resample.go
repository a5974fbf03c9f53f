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

// plane resamples the region [x0,x1)×[y0,y1) (continuous coordinates) of a
// w×h byte plane with the given stride into out (s×s).
func (r *resampler) resize(src []byte, stride, w, h int, x0, y0, x1, y1 float64, s int, out []float32) {
	r.x.set(x0, x1, s, w)
	r.y.set(y0, y1, s, h)
	ylo, yhi := int(r.y.start[0]), 0
	for i := range s {
		ylo = min(ylo, int(r.y.start[i]))
		yhi = max(yhi, int(r.y.start[i]+r.y.n[i]))
	}
	rows := yhi - ylo
	if cap(r.tmp) < rows*s {
		r.tmp = make([]float32, rows*s)
	}
	resizePlane(src, stride, w, ylo, yhi, s, &r.x, &r.y, r.tmp[:rows*s], out)
}

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
	r.resize(img.Y, img.YStride, w, h, x0, y0, x1, y1, s, r.plane[0])
	fx, fy := float64(hf), float64(vf)
	r.resize(img.Cb, img.CStride, cw, ch, x0/fx, y0/fy, x1/fx, y1/fy, s, r.plane[1])
	r.resize(img.Cr, img.CStride, cw, ch, x0/fx, y0/fy, x1/fx, y1/fy, s, r.plane[2])
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

// resizePlaneGo is the separable filter of resize: the horizontal taps
// of rows ylo..yhi-1 of src into tmp (rows × s), then the vertical taps
// into out (s × s). resizePlane is the same arithmetic in C where cgo is
// on (resample_cgo.go), bit for bit (TestResampleKernelsMatchGo).
func resizePlaneGo(src []byte, stride, w, ylo, yhi, s int, ax, ay *axis, tmp, out []float32) {
	for y := ylo; y < yhi; y++ {
		row := src[y*stride : y*stride+w]
		t := tmp[(y-ylo)*s : (y-ylo+1)*s]
		for i := range t {
			st, n := int(ax.start[i]), int(ax.n[i])
			wt := ax.w[i*ax.stride : i*ax.stride+n]
			px := row[st : st+n]
			var acc float32
			for k, v := range wt {
				acc += v * float32(px[k])
			}
			t[i] = acc
		}
	}
	for o := range s {
		dst := out[o*s : (o+1)*s]
		st, n := int(ay.start[o]), int(ay.n[o])
		wt := ay.w[o*ay.stride : o*ay.stride+n]
		clear(dst)
		for k, v := range wt {
			t := tmp[(st+k-ylo)*s : (st+k-ylo+1)*s]
			for i := range dst {
				dst[i] += v * t[i]
			}
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
