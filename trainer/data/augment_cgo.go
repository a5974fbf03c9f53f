//go:build cgo && amd64

package data

// The policies' pixel loops in C (augment_amd64.c; cgo on amd64, the Go
// versions elsewhere): Go does not vectorise, and the blends, the grey
// image and the smoothing are byte↔float32 loops that AVX2 does 8 wide
// (target_clones picks AVX2 at run time where the CPU has it). The
// affine ops' sampling grid is computed a row at a time into source
// indices (8 wide), then gathered. Each kernel is its Go version operation
// for operation (fp-contract=off: no fused multiply-adds; the one
// multiply-add the Go version fuses on purpose is a float64 sum of an exact
// product in both), so both give the same bytes (TestAugmentKernelsMatchGo).
// Measured on one core, one 224×224 RGB image (BenchmarkAugmentOp): see
// docs/data.md.

// #include "augment_amd64.h"
import "C"

import "unsafe"

func blendPlanes(img, other []uint8, n, c int, shared bool, r, q float32) {
	if n == 0 || c == 0 {
		return
	}
	sh := 1
	if !shared {
		sh = 0
		_ = other[c*n-1]
	}
	_, _ = img[c*n-1], other[n-1]
	C.lt_aug_blend((*C.uint8_t)(unsafe.Pointer(&img[0])), (*C.uint8_t)(unsafe.Pointer(&other[0])),
		C.long(n), C.int(c), C.int(sh), C.float(r), C.float(q))
}

func grayPlane(img, gray []uint8, n int) {
	if n == 0 {
		return
	}
	_, _ = img[3*n-1], gray[n-1]
	C.lt_aug_gray((*C.uint8_t)(unsafe.Pointer(&img[0])), (*C.uint8_t)(unsafe.Pointer(&gray[0])), C.long(n))
}

func blurPlanes(img, blur []uint8, c, h, w int) {
	n := c * h * w
	if n == 0 {
		return
	}
	_, _ = img[n-1], blur[n-1]
	C.lt_aug_blur((*C.uint8_t)(unsafe.Pointer(&img[0])), (*C.uint8_t)(unsafe.Pointer(&blur[0])), C.int(c), C.int(h), C.int(w))
}

func affineSample(img, out []uint8, c, h, w int, k *[8]float32, idx []int32) {
	n := c * h * w
	if n == 0 {
		return
	}
	_, _, _ = img[n-1], out[n-1], idx[w-1]
	C.lt_aug_affine((*C.uint8_t)(unsafe.Pointer(&img[0])), (*C.uint8_t)(unsafe.Pointer(&out[0])), C.int(c), C.int(h), C.int(w),
		(*C.float)(unsafe.Pointer(&k[0])), (*C.int32_t)(unsafe.Pointer(&idx[0])))
}
