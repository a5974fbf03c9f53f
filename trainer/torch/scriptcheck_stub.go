//go:build !cgo

package torch

// CheckScript needs libtorch (see the cgo build's).
func CheckScript(path string, c, h, w, classes int, trustOps bool) error { return ErrNoLibtorch }
