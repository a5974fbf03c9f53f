//go:build cgo && !noturbo

package data

// libjpeg-turbo through its TurboJPEG API (Debian's libturbojpeg0-dev):
// JPEGs decode straight to their Y/Cb/Cr planes (no colour conversion or
// chroma upsampling at full resolution: resample.go does both at the output
// size), with SIMD Huffman decoding and IDCT, at a reduced DCT scale (1/2,
// 1/4, 1/8) when the crop still covers the output size at that scale. Build
// with -tags noturbo, or CGO_ENABLED=0, for Go's decoder alone.

// #cgo LDFLAGS: -lturbojpeg
// #include <stdlib.h>
// #include <turbojpeg.h>
// static int lt_planes(tjhandle h, const unsigned char *buf, unsigned long n, unsigned char *y,
//                      unsigned char *cb, unsigned char *cr, int w, int hh, int ys, int cs) {
// 	unsigned char *planes[3] = {y, cb, cr};
// 	int strides[3] = {ys, cs, cs};
// 	return tjDecompressToYUVPlanes(h, buf, n, planes, w, strides, hh, 0);
// }
import "C"

import (
	"errors"
	"image"
	"runtime"
	"sync"
	"unsafe"
)

const turboBuilt = true

type tjHandle struct {
	h       C.tjhandle
	cleanup runtime.Cleanup
}

var tjPool = sync.Pool{New: func() any {
	h := C.tjInitDecompress()
	if h == nil {
		return (*tjHandle)(nil)
	}
	t := &tjHandle{h: h}
	t.cleanup = runtime.AddCleanup(t, func(h C.tjhandle) { C.tjDestroy(h) }, h)
	return t
}}

func tjError(h C.tjhandle) error {
	return errors.New("libjpeg-turbo: " + C.GoString(C.tjGetErrorStr2(h)))
}

// turboHeader reads a JPEG's size. ok is false for what decodeTurbo does
// not handle (grey, CMYK, RGB-coded, unusual subsampling): the caller then
// uses Go's decoder.
func turboHeader(b []byte) (w, h int, ok bool, err error) {
	t := tjPool.Get().(*tjHandle)
	if t == nil {
		return 0, 0, false, nil
	}
	defer tjPool.Put(t)
	var cw, ch, ss, cs C.int
	if C.tjDecompressHeader3(t.h, (*C.uchar)(unsafe.Pointer(&b[0])), C.ulong(len(b)), &cw, &ch, &ss, &cs) != 0 {
		return 0, 0, false, tjError(t.h)
	}
	if cs != C.TJCS_YCbCr || tjRatio(int(ss)) < 0 {
		return int(cw), int(ch), false, nil
	}
	return int(cw), int(ch), true, nil
}

func tjRatio(ss int) image.YCbCrSubsampleRatio {
	switch ss {
	case C.TJSAMP_444:
		return image.YCbCrSubsampleRatio444
	case C.TJSAMP_422:
		return image.YCbCrSubsampleRatio422
	case C.TJSAMP_420:
		return image.YCbCrSubsampleRatio420
	case C.TJSAMP_440:
		return image.YCbCrSubsampleRatio440
	case C.TJSAMP_411:
		return image.YCbCrSubsampleRatio411
	}
	return -1
}

// decodeTurbo decodes b at 1/den of its size (den 1, 2, 4 or 8) into img's
// planes (reused when large enough), as an *image.YCbCr of the scaled size.
func decodeTurbo(b []byte, den int, img *image.YCbCr) (*image.YCbCr, error) {
	t := tjPool.Get().(*tjHandle)
	if t == nil {
		return nil, errors.New("libjpeg-turbo: cannot create a decompressor")
	}
	defer tjPool.Put(t)
	var cw, ch, ss, cs C.int
	if C.tjDecompressHeader3(t.h, (*C.uchar)(unsafe.Pointer(&b[0])), C.ulong(len(b)), &cw, &ch, &ss, &cs) != 0 {
		return nil, tjError(t.h)
	}
	w, h := (int(cw)+den-1)/den, (int(ch)+den-1)/den // TJSCALED with 1/den
	ratio := tjRatio(int(ss))
	ys := int(C.tjPlaneWidth(0, C.int(w), ss))
	yh := int(C.tjPlaneHeight(0, C.int(h), ss))
	cstr := int(C.tjPlaneWidth(1, C.int(w), ss))
	chh := int(C.tjPlaneHeight(1, C.int(h), ss))
	if ys <= 0 || cstr <= 0 {
		return nil, errors.New("libjpeg-turbo: bad plane size")
	}
	if img == nil {
		img = &image.YCbCr{}
	}
	img.Y = growBytes(img.Y, ys*yh)
	img.Cb = growBytes(img.Cb, cstr*chh)
	img.Cr = growBytes(img.Cr, cstr*chh)
	img.YStride, img.CStride, img.SubsampleRatio, img.Rect = ys, cstr, ratio, image.Rect(0, 0, w, h)
	rc := C.lt_planes(t.h, (*C.uchar)(unsafe.Pointer(&b[0])), C.ulong(len(b)),
		(*C.uchar)(unsafe.Pointer(&img.Y[0])), (*C.uchar)(unsafe.Pointer(&img.Cb[0])), (*C.uchar)(unsafe.Pointer(&img.Cr[0])),
		C.int(w), C.int(h), C.int(ys), C.int(cstr))
	runtime.KeepAlive(b)
	if rc != 0 {
		// Warnings (e.g. a truncated file libjpeg-turbo completes with grey)
		// are errors here, as in Go's decoder.
		return nil, tjError(t.h)
	}
	return img, nil
}

func growBytes(s []byte, n int) []byte {
	if cap(s) < n {
		return make([]byte, n)
	}
	return s[:n]
}
