// The policies' C kernels, called from augment_cgo.go (cgo on amd64).
#ifndef LCL_AUGMENT_AMD64_H
#define LCL_AUGMENT_AMD64_H
#include <stdint.h>

void lt_aug_blend(uint8_t *img, const uint8_t *other, long n, int c, int shared, float r, float q);
void lt_aug_gray(const uint8_t *img, uint8_t *gray, long n);
void lt_aug_blur(const uint8_t *img, uint8_t *blur, int c, int h, int w);
void lt_aug_affine(const uint8_t *img, uint8_t *out, int c, int h, int w, const float *m, int32_t *idx);

#endif
