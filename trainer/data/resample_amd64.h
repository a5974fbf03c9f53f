// The resampler's C kernels, called from resample_cgo.go (cgo on amd64).
#ifndef LCL_RESAMPLE_AMD64_H
#define LCL_RESAMPLE_AMD64_H
#include <stdint.h>

void lt_resize_plane(const uint8_t *src, int stride, int xlo, int xhi, int s,
	const int32_t *xs, const int32_t *xn, const float *xw, int xstride,
	const int32_t *ys, const int32_t *yn, const float *yw, int ystride,
	float *tmp, float *out, int scalar);

void lt_ycbcr_rgb(const float *yp, const float *cbp, const float *crp, int s, int flip,
	const float *scale, const float *bias, float *dst, uint8_t *dst8);

#endif
