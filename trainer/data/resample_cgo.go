//go:build cgo

package data

// The resampler's two loops in C: Go does not vectorise, and these loops
// (the vertical taps over a row, the colour conversion) are what a C
// compiler turns into 8-wide AVX2 (target_clones picks it at load time
// where the CPU has it). The arithmetic is resizePlaneGo's and
// ycbcrToRGBGo's operation for operation, and fp-contract=off keeps
// the compiler from fusing multiply-adds (the clones name no FMA either), so both give the same bits
// (TestResampleKernelsMatchGo); the Go versions remain for CGO_ENABLED=0.
// Measured on one core (500×375 JPEGs, random-resized crop to 224²): the
// resampling and colour conversion of an image 0.65 ms in Go, 0.2 ms here
// (docs/data.md, bench/imagepipe.sh).

// #cgo CFLAGS: -O3
// #pragma GCC optimize ("fp-contract=off", "no-trapping-math")
// #include <stdint.h>
// #include <string.h>
//
// __attribute__((target_clones("avx2", "default")))
// static void lt_resize_plane(const uint8_t *src, int stride, int w, int ylo, int yhi, int s,
//                             const int32_t *xs, const int32_t *xn, const float *xw, int xstride,
//                             const int32_t *ys, const int32_t *yn, const float *yw, int ystride,
//                             float *tmp, float *out) {
// 	(void)w;
// 	for (int y = ylo; y < yhi; y++) {
// 		const uint8_t *row = src + (long)y * stride;
// 		float *t = tmp + (long)(y - ylo) * s;
// 		for (int i = 0; i < s; i++) {
// 			const uint8_t *px = row + xs[i];
// 			const float *wt = xw + (long)i * xstride;
// 			float acc = 0.0f;
// 			for (int k = 0; k < xn[i]; k++) acc += wt[k] * (float)px[k];
// 			t[i] = acc;
// 		}
// 	}
// 	for (int o = 0; o < s; o++) {
// 		float *d = out + (long)o * s;
// 		const float *wt = yw + (long)o * ystride;
// 		for (int i = 0; i < s; i++) d[i] = 0.0f;
// 		for (int k = 0; k < yn[o]; k++) {
// 			const float v = wt[k];
// 			const float *t = tmp + (long)(ys[o] + k - ylo) * s;
// 			for (int i = 0; i < s; i++) d[i] += v * t[i];
// 		}
// 	}
// }
//
// static inline float lt_clamp255(float v) { v = v > 0.0f ? v : 0.0f; return v < 255.0f ? v : 255.0f; }
//
// // One output row, unflipped. restrict and no-trapping-math (above) let
// // the compiler vectorise the clamps and the float-to-byte conversion;
// // neither changes a value.
// __attribute__((target_clones("avx2", "default")))
// static void lt_rgb_row8(const float *restrict Y, const float *restrict Cb, const float *restrict Cr, int s,
//                         uint8_t *restrict R, uint8_t *restrict G, uint8_t *restrict B) {
// 	for (int x = 0; x < s; x++) {
// 		const float yy = Y[x], cb = Cb[x] - 128.0f, cr = Cr[x] - 128.0f;
// 		const int r = (int)(lt_clamp255(yy + 1.402f * cr) + 0.5f);
// 		const int g = (int)(lt_clamp255(yy - 0.344136f * cb - 0.714136f * cr) + 0.5f);
// 		const int b = (int)(lt_clamp255(yy + 1.772f * cb) + 0.5f);
// 		R[x] = (uint8_t)r;
// 		G[x] = (uint8_t)g;
// 		B[x] = (uint8_t)b;
// 	}
// }
//
// __attribute__((target_clones("avx2", "default")))
// static void lt_rgb_rowf(const float *restrict Y, const float *restrict Cb, const float *restrict Cr, int s,
//                         float *restrict R, float *restrict G, float *restrict B, const float *scale,
//                         const float *bias) {
// 	const float s0 = scale[0], s1 = scale[1], s2 = scale[2], b0 = bias[0], b1 = bias[1], b2 = bias[2];
// 	for (int x = 0; x < s; x++) {
// 		const float yy = Y[x], cb = Cb[x] - 128.0f, cr = Cr[x] - 128.0f;
// 		R[x] = lt_clamp255(yy + 1.402f * cr) * s0 + b0;
// 		G[x] = lt_clamp255(yy - 0.344136f * cb - 0.714136f * cr) * s1 + b1;
// 		B[x] = lt_clamp255(yy + 1.772f * cb) * s2 + b2;
// 	}
// }
//
// #define LT_REVERSE(T, P, S)                                              \
// 	for (int l = 0, r = (S) - 1; l < r; l++, r--) {                      \
// 		T t = (P)[l];                                                    \
// 		(P)[l] = (P)[r];                                                 \
// 		(P)[r] = t;                                                      \
// 	}
//
// // The rows of the RGB image; a flipped row is converted, then reversed.
// static void lt_ycbcr_rgb(const float *yp, const float *cbp, const float *crp, int s, int flip,
//                          const float *scale, const float *bias, float *dst, uint8_t *dst8) {
// 	const long n = (long)s * s;
// 	for (int y = 0; y < s; y++) {
// 		const long o = (long)y * s;
// 		if (dst8) {
// 			lt_rgb_row8(yp + o, cbp + o, crp + o, s, dst8 + o, dst8 + n + o, dst8 + 2 * n + o);
// 			if (flip) for (int c = 0; c < 3; c++) { LT_REVERSE(uint8_t, dst8 + c * n + o, s) }
// 		} else {
// 			lt_rgb_rowf(yp + o, cbp + o, crp + o, s, dst + o, dst + n + o, dst + 2 * n + o, scale, bias);
// 			if (flip) for (int c = 0; c < 3; c++) { LT_REVERSE(float, dst + c * n + o, s) }
// 		}
// 	}
// }
import "C"

import "unsafe"

// resizePlane is resizePlaneGo in C. The slices were sized by resize
// (tmp: rows × s, out: s × s, taps: s each); the bounds Go would check are
// checked once here.
func resizePlane(src []byte, stride, w, ylo, yhi, s int, ax, ay *axis, tmp, out []float32) {
	if s <= 0 || yhi <= ylo {
		clear(out[:s*s])
		return
	}
	_ = src[(yhi-1)*stride+w-1]
	_, _ = tmp[(yhi-ylo)*s-1], out[s*s-1]
	_, _, _ = ax.start[s-1], ax.n[s-1], ax.w[s*ax.stride-1]
	_, _, _ = ay.start[s-1], ay.n[s-1], ay.w[s*ay.stride-1]
	C.lt_resize_plane((*C.uint8_t)(unsafe.Pointer(&src[0])), C.int(stride), C.int(w), C.int(ylo), C.int(yhi), C.int(s),
		(*C.int32_t)(unsafe.Pointer(&ax.start[0])), (*C.int32_t)(unsafe.Pointer(&ax.n[0])), (*C.float)(unsafe.Pointer(&ax.w[0])), C.int(ax.stride),
		(*C.int32_t)(unsafe.Pointer(&ay.start[0])), (*C.int32_t)(unsafe.Pointer(&ay.n[0])), (*C.float)(unsafe.Pointer(&ay.w[0])), C.int(ay.stride),
		(*C.float)(unsafe.Pointer(&tmp[0])), (*C.float)(unsafe.Pointer(&out[0])))
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
