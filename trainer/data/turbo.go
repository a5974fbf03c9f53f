//go:build cgo && !noturbo

package data

// libjpeg-turbo through its libjpeg API (Debian's libjpeg62-turbo-dev, the
// library PIL links): JPEGs decode straight to their Y/Cb/Cr planes (raw
// data: no colour conversion or chroma upsampling at full resolution;
// resample.go does both at the output size), with SIMD Huffman decoding
// and IDCT, at a reduced DCT scale (1/2, 1/4, 1/8) when the crop still
// covers the output size at that scale, and only down to the last row the
// crop's filter reads: the rows below are never Huffman-decoded. (The
// TurboJPEG API of libjpeg-turbo 2.1 cannot stop early; that is why this is
// the libjpeg API.) Build with -tags noturbo, or CGO_ENABLED=0, for Go's
// decoder alone.

// #cgo LDFLAGS: -ljpeg
// #include "turbo.h"
import "C"

import (
	"errors"
	"image"
	"runtime"
	"sync"
	"unsafe"
)

const turboBuilt = true

type jpegHandle struct {
	j       *C.lt_jpeg
	cleanup runtime.Cleanup
}

var jpegPool = sync.Pool{New: func() any {
	j := C.lt_jpeg_new()
	if j == nil {
		return (*jpegHandle)(nil)
	}
	t := &jpegHandle{j: j}
	t.cleanup = runtime.AddCleanup(t, func(j *C.lt_jpeg) { C.lt_jpeg_free(j) }, j)
	return t
}}

func (t *jpegHandle) err() error {
	return errors.New("libjpeg-turbo: " + C.GoString(&t.j.msg[0]))
}

// turboHeader reads a JPEG's size. ok is false for what decodeTurbo does
// not handle (grey, CMYK, RGB-coded, 12-bit, unusual subsampling): the
// caller then uses Go's decoder.
func turboHeader(b []byte) (w, h int, ok bool, err error) {
	t := jpegPool.Get().(*jpegHandle)
	if t == nil {
		return 0, 0, false, nil
	}
	defer jpegPool.Put(t)
	var cw, ch, cok C.int
	rc := C.lt_jpeg_header(t.j, (*C.uchar)(unsafe.Pointer(&b[0])), C.ulong(len(b)), &cw, &ch, &cok)
	runtime.KeepAlive(b)
	if rc != 0 {
		return 0, 0, false, t.err()
	}
	return int(cw), int(ch), cok != 0, nil
}

// ratioOf is the image.YCbCr layout of chroma hf× and vf× coarser than
// luma (chromaFactors' inverse), or -1.
func ratioOf(hf, vf int) image.YCbCrSubsampleRatio {
	for r := image.YCbCrSubsampleRatio444; r <= image.YCbCrSubsampleRatio410; r++ {
		if h, v, ok := chromaFactors(r); ok && h == hf && v == vf {
			return r
		}
	}
	return -1
}

// decodeTurbo decodes b at 1/den of its size (den 1, 2, 4 or 8) into img's
// planes (reused when large enough), as an *image.YCbCr of the scaled size.
// Only the region need(w, h, hf, vf) names (x0 ≤ x < x1, y < rows, in
// pixels of the scaled w×h image whose chroma is hf× and vf× coarser) is
// sure to be decoded; the rest of the planes holds whatever it held.
func decodeTurbo(b []byte, den int, img *image.YCbCr, need func(w, h, hf, vf int) (x0, x1, rows int)) (*image.YCbCr, error) {
	return decodeTurboScans(b, den, img, need, jpegMaxScans)
}

// jpegMaxScans is MaxJPEGScans, checked by libjpeg's progress monitor.
const jpegMaxScans = MaxJPEGScans

// decodeTurboScans is decodeTurbo refusing files of more than maxScans
// scans.
func decodeTurboScans(b []byte, den int, img *image.YCbCr, need func(w, h, hf, vf int) (x0, x1, rows int), maxScans int) (*image.YCbCr, error) {
	t := jpegPool.Get().(*jpegHandle)
	if t == nil {
		return nil, errors.New("libjpeg-turbo: cannot create a decompressor")
	}
	defer jpegPool.Put(t)
	var in C.lt_jpeg_info
	rc := C.lt_jpeg_start(t.j, (*C.uchar)(unsafe.Pointer(&b[0])), C.ulong(len(b)), C.int(den), C.int(maxScans), &in)
	if rc != 0 {
		runtime.KeepAlive(b)
		return nil, t.err()
	}
	w, h := int(in.w), int(in.h)
	ratio := ratioOf(int(in.hf), int(in.vf))
	ys, cs := int(in.stride[0]), int(in.stride[1])
	if ratio < 0 || ys < w || cs != int(in.stride[2]) || in.rows[1] != in.rows[2] {
		C.lt_jpeg_abort(t.j)
		runtime.KeepAlive(b)
		return nil, errors.New("libjpeg-turbo: unsupported plane layout")
	}
	if img == nil {
		img = &image.YCbCr{}
	}
	img.Y = growBytes(img.Y, ys*int(in.rows[0]))
	img.Cb = growBytes(img.Cb, cs*int(in.rows[1]))
	img.Cr = growBytes(img.Cr, cs*int(in.rows[2]))
	img.YStride, img.CStride, img.SubsampleRatio, img.Rect = ys, cs, ratio, image.Rect(0, 0, w, h)
	x0, x1, rows := need(w, h, int(in.hf), int(in.vf))
	rc = C.lt_jpeg_rows(t.j, (*C.uchar)(unsafe.Pointer(&img.Y[0])), (*C.uchar)(unsafe.Pointer(&img.Cb[0])),
		(*C.uchar)(unsafe.Pointer(&img.Cr[0])), &in, C.int(rows), C.int(x0), C.int(x1))
	runtime.KeepAlive(b)
	if rc < 0 {
		return nil, t.err()
	}
	return img, nil
}

func growBytes(s []byte, n int) []byte {
	if cap(s) < n {
		return make([]byte, n)
	}
	return s[:n]
}
