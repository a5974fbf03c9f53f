//go:build cgo && amd64

package data

// The resampler's two kernels in C (resample_amd64.c; cgo on amd64, the Go
// versions elsewhere): Go does not vectorise. The separable
// filter runs its vertical pass first (eight output rows at once, 8 source
// columns wide) and its horizontal pass on the transposed intermediate (a
// vertical-style pass again), the 8×8 transposes done in AVX2 registers
// (lt_resize_plane_avx2, chosen at run time where the CPU has AVX2; plain
// C otherwise); the colour conversion is a loop the compiler turns into
// 8-wide AVX2 (target_clones). The arithmetic is resizePlaneGo's and
// ycbcrToRGBGo's operation for operation (transposes move values, they do
// not change them), and fp-contract=off keeps the compiler from fusing
// multiply-adds (no FMA is named either), so both give the same bits
// (TestResampleKernelsMatchGo); the Go versions remain for CGO_ENABLED=0.
// Measured on one core (500×375 JPEGs, random-resized crop to 224²): the
// resampling and colour conversion of an image 0.65 ms in Go, 0.2 ms in
// C with the horizontal pass scalar (docs/data.md, bench/imagepipe.sh).
// BenchmarkResizeYCbCr (4:2:0, to 224², medians of 5, old and new run
// back to back on the 2-core development machine at load average 1.4–2.1,
// so the ratios are the figures to trust): a 290² crop 283 → 89 µs (3.2×),
// 375² 340 → 101 µs (3.4×), 400×300 276 → 100 µs (2.8×), 290² to bytes,
// flipped, 316 → 110 µs (2.9×).

// #cgo CFLAGS: -O3
// #include "resample_amd64.h"
import "C"

import "unsafe"

// resizePlane is resizePlaneGo in C. The slices were sized by resize
// (tmp: (xhi-xlo) × padded(s), out: s × s, taps: s each); the bounds Go
// would check are checked once here (axis.set keeps every tap inside its
// span).
func resizePlane(src []byte, stride, s int, ax, ay *axis, tmp, out []float32) {
	resizePlaneC(src, stride, s, ax, ay, tmp, out, false)
}

// resizePlaneC is resizePlane, with scalar choosing the C kernel for CPUs
// without AVX2 (so that the tests check it too).
func resizePlaneC(src []byte, stride, s int, ax, ay *axis, tmp, out []float32, scalar bool) {
	if s <= 0 {
		return
	}
	xlo, xhi := ax.span()
	ylo, yhi := ay.span()
	sc := 0
	if scalar {
		sc = 1
	}
	_, _ = src[ylo*stride+xlo], src[(yhi-1)*stride+xhi-1]
	_, _ = tmp[(xhi-xlo)*padded(s)-1], out[s*s-1]
	_, _, _ = ax.start[s-1], ax.n[s-1], ax.w[s*ax.stride-1]
	_, _, _ = ay.start[s-1], ay.n[s-1], ay.w[s*ay.stride-1]
	C.lt_resize_plane((*C.uint8_t)(unsafe.Pointer(&src[0])), C.int(stride), C.int(xlo), C.int(xhi), C.int(s),
		(*C.int32_t)(unsafe.Pointer(&ax.start[0])), (*C.int32_t)(unsafe.Pointer(&ax.n[0])), (*C.float)(unsafe.Pointer(&ax.w[0])), C.int(ax.stride),
		(*C.int32_t)(unsafe.Pointer(&ay.start[0])), (*C.int32_t)(unsafe.Pointer(&ay.n[0])), (*C.float)(unsafe.Pointer(&ay.w[0])), C.int(ay.stride),
		(*C.float)(unsafe.Pointer(&tmp[0])), (*C.float)(unsafe.Pointer(&out[0])), C.int(sc))
}

// ycbcrToRGB is ycbcrToRGBGo in C.
func ycbcrToRGB(yp, cbp, crp []float32, s int, flip bool, scale, bias [3]float32, dst []float32, dst8 []uint8) {
	n := s * s
	if n == 0 {
		return
	}
	_, _, _ = yp[n-1], cbp[n-1], crp[n-1]
	var d *C.float
	var d8 *C.uint8_t
	if dst8 != nil {
		_ = dst8[3*n-1]
		d8 = (*C.uint8_t)(unsafe.Pointer(&dst8[0]))
	} else {
		_ = dst[3*n-1]
		d = (*C.float)(unsafe.Pointer(&dst[0]))
	}
	f := 0
	if flip {
		f = 1
	}
	C.lt_ycbcr_rgb((*C.float)(unsafe.Pointer(&yp[0])), (*C.float)(unsafe.Pointer(&cbp[0])), (*C.float)(unsafe.Pointer(&crp[0])),
		C.int(s), C.int(f), (*C.float)(unsafe.Pointer(&scale[0])), (*C.float)(unsafe.Pointer(&bias[0])), d, d8)
}
