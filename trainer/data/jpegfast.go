package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
)

// U8Decoder is implemented by the data sets whose examples are 8-bit
// pixels (IDX, CIFAR, image folders, CUB, NABirds): DecodeU8 writes example
// i as bytes in CHW order with the same crop and flip as Decode, leaving
// the normalisation (Normalization's mean and std, for pixels scaled to
// [0,1]) to the consumer: the trainer does it on the device, so batches
// cross to it as uint8, a quarter of float32's bytes.
type U8Decoder interface {
	DecodeU8(i int, dst []uint8, train bool, rng *rand.Rand) error
	Normalization() (mean, std []float32)
}

// JPEGDecoder names the JPEG decoder image data sets use: "libjpeg-turbo"
// when the package was built with it (cgo, without the noturbo tag) and
// LCL_JPEG is not "go", else "go" (the standard library's image/jpeg).
func JPEGDecoder() string {
	if turboBuilt && os.Getenv("LCL_JPEG") != "go" {
		return "libjpeg-turbo"
	}
	return "go"
}

// useTurbo is JPEGDecoder's choice, read once.
var useTurbo = JPEGDecoder() == "libjpeg-turbo"

// decodeJPEGFast decodes a baseline or progressive YCbCr JPEG with
// libjpeg-turbo and transforms it like imageTransform: the crop is chosen
// on the full image size (read from the header, so the random draws are
// those of the Go path), the image is decoded at the smallest DCT scale
// (1/2, 1/4, 1/8) at which the crop still spans opt.Size pixels both ways,
// and only down to the crop's last row (with its filter's reach), and the
// crop is resampled on the reduced Y/Cb/Cr planes. ok is false when
// it did nothing (not a JPEG, no libjpeg-turbo, a layout it leaves to Go's
// decoder).
func decodeJPEGFast(b []byte, dst []float32, dst8 []uint8, rs *resampler, opt *Options, train bool, rng *rand.Rand) (ok bool, err error) {
	return jpegFast(b, dst, dst8, rs, opt, train, rng, false)
}

// jpegFast is decodeJPEGFast; whole decodes every row and column (the
// tests' reference for the partial decode).
func jpegFast(b []byte, dst []float32, dst8 []uint8, rs *resampler, opt *Options, train bool, rng *rand.Rand, whole bool) (ok bool, err error) {
	if !useTurbo || len(b) < 3 || b[0] != 0xff || b[1] != 0xd8 {
		return false, nil
	}
	s := opt.Size
	if len(dst)+len(dst8) != 3*s*s {
		return true, fmt.Errorf("data: destination holds %d values, want %d", len(dst)+len(dst8), 3*s*s)
	}
	w, h, handled, err := turboHeader(b)
	if err != nil || !handled {
		return false, nil // Go's decoder reports what is wrong, in its words
	}
	if err := sizeError("jpeg", w, h); err != nil {
		return true, err // before anything is allocated for it
	}
	r := cropRect(w, h, opt, train, rng)
	flip := train && opt.Flip && rng.IntN(2) == 1
	den := 1
	for den < 8 && r.Dx()/(2*den) >= s && r.Dy()/(2*den) >= s {
		den *= 2
	}
	// The crop in the coordinates of the reduced image (which is
	// ceil(w/den) wide: the scale is exactly 1/den).
	f := 1 / float64(den)
	x0, y0, x1, y1 := float64(r.Min.X)*f, float64(r.Min.Y)*f, float64(r.Max.X)*f, float64(r.Max.Y)*f
	img, err := decodeTurbo(b, den, rs.turbo, func(w, h, hf, vf int) (int, int, int) {
		// The samples the resampler's taps read, in luma and in chroma:
		// decoding skips the columns outside and stops below.
		if whole {
			return 0, w, h
		}
		cw, ch := (w+hf-1)/hf, (h+vf-1)/vf
		fx, fy := float64(hf), float64(vf)
		return min(axisStart(x0, x1, s, w), axisStart(x0/fx, x1/fx, s, cw)*hf),
			max(axisEnd(x0, x1, s, w), axisEnd(x0/fx, x1/fx, s, cw)*hf),
			max(axisEnd(y0, y1, s, h), axisEnd(y0/fy, y1/fy, s, ch)*vf)
	})
	if err != nil {
		return true, fmt.Errorf("decoding image: %w", err)
	}
	rs.turbo = img
	if !rs.ycbcrRegion(img, x0, y0, x1, y1, s, flip, opt, dst, dst8) {
		return true, fmt.Errorf("decoding image: libjpeg-turbo: unsupported layout %v", img.SubsampleRatio)
	}
	return true, nil
}

// axisStart is the first source sample axis.set(a, b, out, limit) gives a
// tap (taps only move up with the output index).
func axisStart(a, b float64, out, limit int) int {
	scale := (b - a) / float64(out)
	support := max(scale, 1)
	c := a + 0.5*scale
	return min(max(int(math.Floor(c-support)), 0), limit-1)
}

// axisEnd is one past the last source sample axis.set(a, b, out, limit)
// gives a tap: its last output's centre plus the filter's support (taps
// only move up with the output index).
func axisEnd(a, b float64, out, limit int) int {
	scale := (b - a) / float64(out)
	support := max(scale, 1)
	c := a + (float64(out-1)+0.5)*scale
	return min(int(math.Ceil(c+support)), limit)
}
