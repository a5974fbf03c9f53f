//go:build !cgo

package torch

type scriptHandle = *struct{}

// LoadScript needs libtorch (see the cgo build's).
func LoadScript(path string, c, h, w, classes int, trustOps bool) (*Script, error) {
	return nil, ErrNoLibtorch
}

// Close does nothing: no module was loaded.
func (s *Script) Close() {}
