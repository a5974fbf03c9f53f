//go:build !cgo || !amd64

package data

func resizePlane(src []byte, stride, s int, ax, ay *axis, tmp, out []float32) {
	resizePlaneGo(src, stride, s, ax, ay, tmp, out)
}

func ycbcrToRGB(yp, cbp, crp []float32, s int, flip bool, scale, bias [3]float32, dst []float32, dst8 []uint8) {
	ycbcrToRGBGo(yp, cbp, crp, s, flip, scale, bias, dst, dst8)
}
