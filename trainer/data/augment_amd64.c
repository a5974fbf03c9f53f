// The policies' pixel kernels (amd64 only; augment_cgo.go describes them
// and calls them, the Go versions in augment.go are the portable path and
// the reference the tests hold these to, bit for bit).
// fp-contract=off: the Go versions' roundings (no fused multiply-adds).
#pragma GCC optimize ("fp-contract=off", "no-trapping-math")
#include "augment_amd64.h"
#include <stdint.h>

// blendByte over c planes of n bytes: img = clamp(r·img + q·other) in
// float32, truncated; other is one plane for all (shared) or c planes.
__attribute__((target_clones("avx2", "default")))
void lt_aug_blend(uint8_t *img, const uint8_t *other, long n, int c, int shared, float r, float q) {
	for (int ch = 0; ch < c; ch++) {
		uint8_t *p = img + (long)ch * n;
		const uint8_t *o = shared ? other : other + (long)ch * n;
		for (long i = 0; i < n; i++) {
			float v = r * (float)p[i] + q * (float)o[i];
			v = v < 0.0f ? 0.0f : v;
			v = v > 255.0f ? 255.0f : v;
			p[i] = (uint8_t)(int32_t)v;
		}
	}
}

// grayscale: (0.2989·R + 0.587·G) + 0.114·B in float32, truncated.
__attribute__((target_clones("avx2", "default")))
void lt_aug_gray(const uint8_t *img, uint8_t *gray, long n) {
	const uint8_t *rp = img, *gp = img + n, *bp = img + 2 * n;
	for (long i = 0; i < n; i++) {
		const float v = (0.2989f * (float)rp[i] + 0.587f * (float)gp[i]) + 0.114f * (float)bp[i];
		gray[i] = (uint8_t)(int32_t)v;
	}
}

// sharpness's smoothing: blur = img on the one-pixel border, inside it
// round(([1 1 1; 1 5 1; 1 1 1] ⊛ img)/13) from the integer sum.
__attribute__((target_clones("avx2", "default")))
void lt_aug_blur(const uint8_t *img, uint8_t *blur, int c, int h, int w) {
	const long n = (long)h * w;
	for (int ch = 0; ch < c; ch++) {
		const uint8_t *p = img + ch * n;
		uint8_t *b = blur + ch * n;
		for (int x = 0; x < w; x++) {
			b[x] = p[x];
			b[(long)(h - 1) * w + x] = p[(long)(h - 1) * w + x];
		}
		for (int y = 1; y < h - 1; y++) {
			const uint8_t *up = p + (long)(y - 1) * w, *mid = up + w, *dn = mid + w;
			uint8_t *o = b + (long)y * w;
			o[0] = mid[0];
			o[w - 1] = mid[w - 1];
			for (int x = 1; x < w - 1; x++) {
				const int32_t s = (int32_t)up[x - 1] + up[x] + up[x + 1] + mid[x - 1] + 5 * (int32_t)mid[x] + mid[x + 1] +
				                  dn[x - 1] + dn[x] + dn[x + 1];
				o[x] = (uint8_t)((2 * s + 13) / 26);
			}
		}
	}
}

// One row of affine's sampling: idx[x] is the source pixel of output
// pixel x of the row at yc, or -1 outside the image. The arithmetic is
// the Go version's: fma32 as a float64 sum of an exact product, rounded
// once to float32, and rint (round half to even) of a float32.
__attribute__((target_clones("avx2", "default")))
static void lt_aug_affine_row(float yc, float x0, int h, int w, const float *m, int32_t *idx) {
	const float r00 = m[0], r10 = m[1], r20 = m[2], r01 = m[3], r11 = m[4], r21 = m[5], hw = m[6], hh = m[7];
	const float wmax = (float)(w - 1), hmax = (float)(h - 1);
	for (int x = 0; x < w; x++) {
		const float xc = x0 + (float)x;
		const float gx = (float)((double)yc * (double)r10 + (double)(xc * r00)) + r20;
		const float gy = (float)((double)yc * (double)r11 + (double)(xc * r01)) + r21;
		const float ix = (gx + 1.0f) * hw - 0.5f;
		const float iy = (gy + 1.0f) * hh - 0.5f;
		const float sx = __builtin_rintf(ix), sy = __builtin_rintf(iy);
		const int in = sx >= 0.0f && sy >= 0.0f && sx <= wmax && sy <= hmax;
		idx[x] = in ? (int32_t)sy * w + (int32_t)sx : -1;
	}
}

// affine: out = img sampled at the nearest source pixel of each output
// pixel through m (r00 r10 r20 r01 r11 r21 hw hh, as augmenter.affine
// computes them), 0 outside; idx holds w ints.
void lt_aug_affine(const uint8_t *img, uint8_t *out, int c, int h, int w, const float *m, int32_t *idx) {
	const long n = (long)h * w;
	const float x0 = (float)(-0.5 * (double)w + 0.5), y0 = (float)(-0.5 * (double)h + 0.5);
	for (int y = 0; y < h; y++) {
		lt_aug_affine_row(y0 + (float)y, x0, h, w, m, idx);
		for (int ch = 0; ch < c; ch++) {
			const uint8_t *p = img + ch * n;
			uint8_t *o = out + ch * n + (long)y * w;
			for (int x = 0; x < w; x++) o[x] = idx[x] < 0 ? 0 : p[idx[x]];
		}
	}
}
