//go:build cgo && !ltlazy && !ltshim

package torch

// #include "losscheck.h"
import "C"

import "unsafe"

// lossCheckFuncs: shim.cpp is compiled into this package.
func lossCheckFuncs() (unsafe.Pointer, unsafe.Pointer, error) {
	return unsafe.Pointer(C.ltt_loss), unsafe.Pointer(C.ltt_cross_entropy), nil
}
