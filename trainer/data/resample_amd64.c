// The resampler's C kernels (amd64 only; resample_cgo.go describes them and
// calls them, resample_nocgo.go is the portable Go path).
// fp-contract=off: the same bits as the Go versions (no fused multiply-adds).
#pragma GCC optimize ("fp-contract=off", "no-trapping-math")
#include "resample_amd64.h"
#include <stdint.h>
#include <string.h>
#include <immintrin.h>

// resizePlaneGo (for CPUs without AVX2): the vertical taps of columns
// [xlo, xhi) into tmp (s rows of w = xhi-xlo), then the horizontal taps.
static void lt_resize_plane_c(const uint8_t *src, int stride, int xlo, int xhi, int s,
                              const int32_t *xs, const int32_t *xn, const float *xw, int xstride,
                              const int32_t *ys, const int32_t *yn, const float *yw, int ystride,
                              float *tmp, float *out) {
	const int w = xhi - xlo;
	for (int o = 0; o < s; o++) {
		float *t = tmp + (long)o * w;
		for (int x = 0; x < w; x++) t[x] = 0.0f;
		for (int k = 0; k < yn[o]; k++) {
			const float v = yw[(long)o * ystride + k];
			const uint8_t *row = src + (long)(ys[o] + k) * stride + xlo;
			for (int x = 0; x < w; x++) t[x] += v * (float)row[x];
		}
	}
	for (int o = 0; o < s; o++) {
		const float *t = tmp + (long)o * w - xlo;
		float *d = out + (long)o * s;
		for (int i = 0; i < s; i++) {
			const float *wt = xw + (long)i * xstride, *px = t + xs[i];
			float acc = 0.0f;
			for (int k = 0; k < xn[i]; k++) acc += wt[k] * px[k];
			d[i] = acc;
		}
	}
}

// Transposes the 8×8 block r[0..7] in place.
__attribute__((target("avx2"))) static inline void lt_tr8(__m256 *r) {
	const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
	const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
	const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
	const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
	const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
	const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
	const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
	const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
	r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
	r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
	r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
	r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
	r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
	r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
	r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
	r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// The same values with AVX2, both passes 8 lanes wide over contiguous
// memory. Vertical: eight output rows o0..o0+7 at once over eight source
// columns, transposed in registers into tmp, which holds the intermediate
// transposed (w rows of p = s rounded up to 8; the lanes past s repeat
// row s-1). Horizontal: eight output columns i0..i0+7 at once, each a
// vertical-style pass over tmp's rows, transposed back in registers into
// out. Every value is still a sum from zero in tap order.
__attribute__((target("avx2")))
static void lt_resize_plane_avx2(const uint8_t *src, int stride, int xlo, int xhi, int s,
                                 const int32_t *xs, const int32_t *xn, const float *xw, int xstride,
                                 const int32_t *ys, const int32_t *yn, const float *yw, int ystride,
                                 float *tmp, float *out) {
	const int w = xhi - xlo, p = (s + 7) & ~7;
	__m256 a[8];
	for (int o0 = 0; o0 < s; o0 += 8) {
		const uint8_t *rp[8];
		const float *wp[8];
		int n[8];
		for (int j = 0; j < 8; j++) {
			const int o = o0 + j < s ? o0 + j : s - 1;
			rp[j] = src + (long)ys[o] * stride + xlo;
			wp[j] = yw + (long)o * ystride;
			n[j] = yn[o];
		}
		int x = 0;
		for (; x + 16 <= w; x += 16) { // two blocks a tap: half the loop overhead
			__m256 b[8];
			for (int j = 0; j < 8; j++) {
				__m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
				const uint8_t *q = rp[j] + x;
				for (int k = 0; k < n[j]; k++, q += stride) {
					const __m128i u = _mm_loadu_si128((const __m128i *)q);
					const __m256 wk = _mm256_set1_ps(wp[j][k]);
					acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(wk, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(u))));
					acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(wk, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(u, 8)))));
				}
				a[j] = acc0;
				b[j] = acc1;
			}
			lt_tr8(a);
			lt_tr8(b);
			for (int j = 0; j < 8; j++) {
				_mm256_storeu_ps(tmp + (long)(x + j) * p + o0, a[j]);
				_mm256_storeu_ps(tmp + (long)(x + 8 + j) * p + o0, b[j]);
			}
		}
		for (; x + 8 <= w; x += 8) {
			for (int j = 0; j < 8; j++) {
				__m256 acc = _mm256_setzero_ps();
				const uint8_t *q = rp[j] + x;
				for (int k = 0; k < n[j]; k++, q += stride) {
					const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q)));
					acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(wp[j][k]), v));
				}
				a[j] = acc;
			}
			lt_tr8(a);
			for (int j = 0; j < 8; j++) _mm256_storeu_ps(tmp + (long)(x + j) * p + o0, a[j]);
		}
		for (; x < w; x++) {
			for (int j = 0; j < 8; j++) {
				float acc = 0.0f;
				for (int k = 0; k < n[j]; k++) acc += wp[j][k] * (float)rp[j][(long)k * stride + x];
				tmp[(long)x * p + o0 + j] = acc;
			}
		}
	}
	for (int i0 = 0; i0 < s; i0 += 8) {
		const float *tp[8], *wp[8];
		int n[8];
		for (int j = 0; j < 8; j++) {
			const int i = i0 + j < s ? i0 + j : s - 1;
			tp[j] = tmp + (long)(xs[i] - xlo) * p;
			wp[j] = xw + (long)i * xstride;
			n[j] = xn[i];
		}
		const int ni = s - i0 < 8 ? s - i0 : 8;
		for (int o0 = 0; o0 < s; o0 += 16) {
			const int two = o0 + 16 <= p; // two blocks a tap where tmp has them
			__m256 b[8];
			for (int j = 0; j < 8; j++) {
				__m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
				const float *q = tp[j] + o0;
				if (two) {
					for (int k = 0; k < n[j]; k++, q += p) {
						const __m256 wk = _mm256_set1_ps(wp[j][k]);
						acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(wk, _mm256_loadu_ps(q)));
						acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(wk, _mm256_loadu_ps(q + 8)));
					}
				} else {
					for (int k = 0; k < n[j]; k++, q += p)
						acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(_mm256_set1_ps(wp[j][k]), _mm256_loadu_ps(q)));
				}
				a[j] = acc0;
				b[j] = acc1;
			}
			lt_tr8(a);
			lt_tr8(b);
			for (int h = 0; h < 2; h++) {
				const __m256 *c = h ? b : a;
				const int ob = o0 + 8 * h, no = s - ob < 8 ? s - ob : 8;
				for (int j = 0; j < no; j++) {
					float *d = out + (long)(ob + j) * s + i0;
					if (ni == 8) {
						_mm256_storeu_ps(d, c[j]);
					} else {
						float e[8];
						_mm256_storeu_ps(e, c[j]);
						memcpy(d, e, ni * sizeof(float));
					}
				}
			}
		}
	}
}

// The AVX2 kernel where the CPU has it and scalar is 0.
void lt_resize_plane(const uint8_t *src, int stride, int xlo, int xhi, int s,
                            const int32_t *xs, const int32_t *xn, const float *xw, int xstride,
                            const int32_t *ys, const int32_t *yn, const float *yw, int ystride,
                            float *tmp, float *out, int scalar) {
	if (!scalar && __builtin_cpu_supports("avx2"))
		lt_resize_plane_avx2(src, stride, xlo, xhi, s, xs, xn, xw, xstride, ys, yn, yw, ystride, tmp, out);
	else
		lt_resize_plane_c(src, stride, xlo, xhi, s, xs, xn, xw, xstride, ys, yn, yw, ystride, tmp, out);
}

static inline float lt_clamp255(float v) { v = v > 0.0f ? v : 0.0f; return v < 255.0f ? v : 255.0f; }

// One output row, unflipped. restrict and no-trapping-math (above) let
// the compiler vectorise the clamps and the float-to-byte conversion;
// neither changes a value.
__attribute__((target_clones("avx2", "default")))
static void lt_rgb_row8(const float *restrict Y, const float *restrict Cb, const float *restrict Cr, int s,
                        uint8_t *restrict R, uint8_t *restrict G, uint8_t *restrict B) {
	for (int x = 0; x < s; x++) {
		const float yy = Y[x], cb = Cb[x] - 128.0f, cr = Cr[x] - 128.0f;
		const int r = (int)(lt_clamp255(yy + 1.402f * cr) + 0.5f);
		const int g = (int)(lt_clamp255(yy - 0.344136f * cb - 0.714136f * cr) + 0.5f);
		const int b = (int)(lt_clamp255(yy + 1.772f * cb) + 0.5f);
		R[x] = (uint8_t)r;
		G[x] = (uint8_t)g;
		B[x] = (uint8_t)b;
	}
}

// lt_rgb_row8 in AVX2 intrinsics: GCC's vectorisation of the float to
// byte narrowing there is slow. The same operations in the same order;
// max/min against 0 and 255 give what lt_clamp255 gives (NaN → 0, -0 →
// +0), and the truncating conversion is C's cast.
__attribute__((target("avx2")))
static void lt_rgb_row8_avx2(const float *restrict Y, const float *restrict Cb, const float *restrict Cr, int s,
                             uint8_t *restrict R, uint8_t *restrict G, uint8_t *restrict B) {
	const __m256 c128 = _mm256_set1_ps(128.0f), kr = _mm256_set1_ps(1.402f), kgb = _mm256_set1_ps(0.344136f),
	             kgr = _mm256_set1_ps(0.714136f), kb = _mm256_set1_ps(1.772f), zero = _mm256_setzero_ps(),
	             top = _mm256_set1_ps(255.0f), half = _mm256_set1_ps(0.5f);
	int x = 0;
	for (; x + 8 <= s; x += 8) {
		const __m256 yy = _mm256_loadu_ps(Y + x), cb = _mm256_sub_ps(_mm256_loadu_ps(Cb + x), c128),
		             cr = _mm256_sub_ps(_mm256_loadu_ps(Cr + x), c128);
		__m256 v[3] = {_mm256_add_ps(yy, _mm256_mul_ps(kr, cr)),
		               _mm256_sub_ps(_mm256_sub_ps(yy, _mm256_mul_ps(kgb, cb)), _mm256_mul_ps(kgr, cr)),
		               _mm256_add_ps(yy, _mm256_mul_ps(kb, cb))};
		uint8_t *d[3] = {R + x, G + x, B + x};
		for (int c = 0; c < 3; c++) {
			const __m256 f = _mm256_add_ps(_mm256_min_ps(_mm256_max_ps(v[c], zero), top), half);
			const __m256i i = _mm256_cvttps_epi32(f);
			const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
			_mm_storel_epi64((__m128i *)d[c], _mm_packus_epi16(w, w));
		}
	}
	if (x < s) lt_rgb_row8(Y + x, Cb + x, Cr + x, s - x, R + x, G + x, B + x);
}

__attribute__((target_clones("avx2", "default")))
static void lt_rgb_rowf(const float *restrict Y, const float *restrict Cb, const float *restrict Cr, int s,
                        float *restrict R, float *restrict G, float *restrict B, const float *scale,
                        const float *bias) {
	const float s0 = scale[0], s1 = scale[1], s2 = scale[2], b0 = bias[0], b1 = bias[1], b2 = bias[2];
	for (int x = 0; x < s; x++) {
		const float yy = Y[x], cb = Cb[x] - 128.0f, cr = Cr[x] - 128.0f;
		R[x] = lt_clamp255(yy + 1.402f * cr) * s0 + b0;
		G[x] = lt_clamp255(yy - 0.344136f * cb - 0.714136f * cr) * s1 + b1;
		B[x] = lt_clamp255(yy + 1.772f * cb) * s2 + b2;
	}
}

// d[0..m) = the m values ending at e, last first (GCC vectorises this
// loop; it does not vectorise the conversions reading backwards).
__attribute__((target_clones("avx2", "default")))
static void lt_rev(const float *restrict e, int m, float *restrict d) {
	for (int x = 0; x < m; x++) d[x] = e[-x];
}

// The rows of the RGB image. A flipped row is converted from its planes'
// rows reversed, a chunk at a time, into a stack buffer.
void lt_ycbcr_rgb(const float *yp, const float *cbp, const float *crp, int s, int flip,
                         const float *scale, const float *bias, float *dst, uint8_t *dst8) {
	enum { chunk = 256 };
	float buf[3][chunk];
	const int avx2 = __builtin_cpu_supports("avx2");
	const long n = (long)s * s;
	for (int y = 0; y < s; y++) {
		const long o = (long)y * s;
		for (int x = 0; x < s; x += flip ? chunk : s) {
			const float *Y = yp + o + x, *Cb = cbp + o + x, *Cr = crp + o + x;
			int m = s - x;
			if (flip) {
				m = m < chunk ? m : chunk;
				lt_rev(yp + o + s - 1 - x, m, buf[0]);
				lt_rev(cbp + o + s - 1 - x, m, buf[1]);
				lt_rev(crp + o + s - 1 - x, m, buf[2]);
				Y = buf[0], Cb = buf[1], Cr = buf[2];
			}
			if (dst8)
				(avx2 ? lt_rgb_row8_avx2 : lt_rgb_row8)(Y, Cb, Cr, m, dst8 + o + x, dst8 + n + o + x, dst8 + 2 * n + o + x);
			else
				lt_rgb_rowf(Y, Cb, Cr, m, dst + o + x, dst + n + o + x, dst + 2 * n + o + x, scale, bias);
		}
	}
}
