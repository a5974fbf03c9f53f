//go:build !cgo || !amd64

package data

func blendPlanes(img, other []uint8, n, c int, shared bool, r, q float32) {
	blendPlanesGo(img, other, n, c, shared, r, q)
}

func grayPlane(img, gray []uint8, n int) { grayPlaneGo(img, gray, n) }

func blurPlanes(img, blur []uint8, c, h, w int) { blurPlanesGo(img, blur, c, h, w) }

func affineSample(img, out []uint8, c, h, w int, k *[8]float32, idx []int32) {
	affineSampleGo(img, out, c, h, w, k, idx)
}
