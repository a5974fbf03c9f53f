package data

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"

	"golang.org/x/image/draw"
)

// smallTransform writes a c×h×w image of bytes (CHW) into dst, normalised,
// with the small-image training augmentation when train is set: a random
// crop of the original size from the image zero-padded by opt.Pad on each
// side, then a random horizontal flip (the CIFAR recipe). Random draws, in
// order: crop row offset, crop column offset, flip.
//
// With dst8 (and dst nil) it writes the bytes instead (padding 0), for
// normalisation on the device.
func smallTransform(src []byte, c, h, w int, dst []float32, dst8 []uint8, opt *Options, train bool, rng *rand.Rand) error {
	if len(dst)+len(dst8) != c*h*w {
		return fmt.Errorf("data: destination holds %d values, want %d", len(dst)+len(dst8), c*h*w)
	}
	pad := opt.Pad
	dy, dx, flip := 0, 0, false // source offset of the crop
	if train {
		if pad > 0 {
			dy = rng.IntN(2*pad+1) - pad
			dx = rng.IntN(2*pad+1) - pad
		}
		if opt.Flip {
			flip = rng.IntN(2) == 1
		}
	}
	for ch := 0; ch < c; ch++ {
		scale := 1 / (255 * opt.Std[ch])
		bias := -opt.Mean[ch] / opt.Std[ch] // the value of a zero (padding) pixel
		plane := src[ch*h*w : (ch+1)*h*w]
		if dst8 != nil {
			shiftBytes(plane, dst8[ch*h*w:(ch+1)*h*w], h, w, dy, dx, flip)
			continue
		}
		out := dst[ch*h*w : (ch+1)*h*w]
		if dy == 0 && dx == 0 && !flip {
			for i, p := range plane {
				out[i] = float32(p)*scale + bias
			}
			continue
		}
		for y := 0; y < h; y++ {
			row := out[y*w : (y+1)*w]
			sy := y + dy
			if sy < 0 || sy >= h {
				for x := range row {
					row[x] = bias
				}
				continue
			}
			srow := plane[sy*w : (sy+1)*w]
			for x := range row {
				cx := x
				if flip {
					cx = w - 1 - x
				}
				sx := cx + dx
				if sx < 0 || sx >= w {
					row[x] = bias
				} else {
					row[x] = float32(srow[sx])*scale + bias
				}
			}
		}
	}
	return nil
}

// shiftBytes is smallTransform's crop and flip on one plane of bytes.
func shiftBytes(plane, out []byte, h, w, dy, dx int, flip bool) {
	for y := 0; y < h; y++ {
		row := out[y*w : (y+1)*w]
		sy := y + dy
		if sy < 0 || sy >= h {
			clear(row)
			continue
		}
		srow := plane[sy*w : (sy+1)*w]
		for x := range row {
			cx := x
			if flip {
				cx = w - 1 - x
			}
			if sx := cx + dx; sx < 0 || sx >= w {
				row[x] = 0
			} else {
				row[x] = srow[sx]
			}
		}
	}
}

// cropRect chooses the source rectangle of a w×h image for a folder example.
// Training with RandomResizedCrop follows torchvision's RandomResizedCrop
// exactly (ten tries at a random area and log-uniform aspect ratio, then a
// central crop clamped to the ratio range); random draws, in order: area,
// log-ratio, row, column per try. Evaluation takes the centre square that a
// resize of the shorter side to opt.Resize followed by a centre crop of
// opt.Size would keep, so the image is resampled once.
func cropRect(w, h int, opt *Options, train bool, rng *rand.Rand) image.Rectangle {
	if train && opt.RandomResizedCrop {
		area := float64(w * h)
		lr0, lr1 := math.Log(opt.Ratio[0]), math.Log(opt.Ratio[1])
		for range 10 {
			target := area * (opt.Scale[0] + rng.Float64()*(opt.Scale[1]-opt.Scale[0]))
			ar := math.Exp(lr0 + rng.Float64()*(lr1-lr0))
			cw := int(math.Round(math.Sqrt(target * ar)))
			ch := int(math.Round(math.Sqrt(target / ar)))
			if 0 < cw && cw <= w && 0 < ch && ch <= h {
				y := rng.IntN(h - ch + 1)
				x := rng.IntN(w - cw + 1)
				return image.Rect(x, y, x+cw, y+ch)
			}
		}
		in := float64(w) / float64(h)
		cw, ch := w, h
		if in < opt.Ratio[0] {
			ch = int(math.Round(float64(cw) / opt.Ratio[0]))
		} else if in > opt.Ratio[1] {
			cw = int(math.Round(float64(ch) * opt.Ratio[1]))
		}
		x, y := (w-cw)/2, (h-ch)/2
		return image.Rect(x, y, x+cw, y+ch)
	}
	side := int(math.Round(float64(min(w, h)) * float64(opt.Size) / float64(opt.Resize)))
	side = max(side, 1)
	x, y := (w-side)/2, (h-side)/2
	return image.Rect(x, y, x+side, y+side)
}

// imageTransform crops img (per cropRect), resamples the crop bilinearly to
// opt.Size×opt.Size, flips it at random in training (drawn after the crop)
// and writes it to dst as normalised RGB CHW. Grey images are replicated to
// three channels; transparent pixels come out over black. YCbCr images (JPEG)
// take the fast plane path of resample.go, others x/image/draw via RGBA.
//
// With dst8 (and dst nil) it writes RGB bytes instead, for normalisation on
// the device.
func imageTransform(img image.Image, dst []float32, dst8 []uint8, rs *resampler, opt *Options, train bool, rng *rand.Rand) error {
	s := opt.Size
	if len(dst)+len(dst8) != 3*s*s {
		return fmt.Errorf("data: destination holds %d values, want %d", len(dst)+len(dst8), 3*s*s)
	}
	b := img.Bounds()
	if b.Dx() < 1 || b.Dy() < 1 {
		return fmt.Errorf("empty image (%dx%d)", b.Dx(), b.Dy())
	}
	r := cropRect(b.Dx(), b.Dy(), opt, train, rng).Add(b.Min)
	flip := train && opt.Flip && rng.IntN(2) == 1
	if yc, ok := img.(*image.YCbCr); ok && rs.ycbcr(yc, r, s, flip, opt, dst, dst8) {
		return nil
	}
	if rs.rgba == nil || rs.rgba.Rect.Dx() != s {
		rs.rgba = image.NewRGBA(image.Rect(0, 0, s, s))
	}
	tmp := rs.rgba
	draw.BiLinear.Scale(tmp, tmp.Rect, img, r, draw.Src, nil)
	plane := s * s
	var scale, bias [3]float32
	for c := range 3 {
		scale[c] = 1 / (255 * opt.Std[c])
		bias[c] = -opt.Mean[c] / opt.Std[c]
	}
	for y := 0; y < s; y++ {
		px := tmp.Pix[y*tmp.Stride : y*tmp.Stride+4*s]
		for x := 0; x < s; x++ {
			sx := x
			if flip {
				sx = s - 1 - x
			}
			p := px[4*sx : 4*sx+3]
			o := y*s + x
			if dst8 != nil {
				dst8[o], dst8[plane+o], dst8[2*plane+o] = p[0], p[1], p[2]
				continue
			}
			dst[o] = float32(p[0])*scale[0] + bias[0]
			dst[plane+o] = float32(p[1])*scale[1] + bias[1]
			dst[2*plane+o] = float32(p[2])*scale[2] + bias[2]
		}
	}
	return nil
}
