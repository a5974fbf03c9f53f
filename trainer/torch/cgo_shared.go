//go:build cgo && ltshim

package torch

// With the ltshim tag the shim is not compiled here but linked from a shared
// library libltshim.so built on the target machine by build-shim.sh (for a
// GPU machine with PyTorch and a C++ compiler but no Go). Point the linker
// and loader at it with CGO_LDFLAGS="-L DIR -Wl,-rpath,DIR".

// #cgo LDFLAGS: -lltshim
import "C"
