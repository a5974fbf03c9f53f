//go:build cgo && cuda && !ltshim && !ltlazy

package torch

// CUDA builds of libtorch register their kernels from libtorch_cuda, which no
// symbol of the shim references: --no-as-needed keeps it linked.

// #cgo LDFLAGS: -Wl,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--as-needed
import "C"
