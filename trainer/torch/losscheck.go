//go:build cgo

package torch

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"unsafe"
)

// LossCheckFuncs is the address of the shim's ltt_loss and
// ltt_cross_entropy (losscheck.h: the training loss on its own, no part of
// the ABI), for internal/shimloss's tests, which call them through C.
// They live in the shim rather than in a test package so that a test build
// does not compile libtorch's headers a second time. The error is Check's,
// or a shim library without them (built from older sources).
func LossCheckFuncs() (loss, crossEntropy unsafe.Pointer, err error) {
	if err := Check(); err != nil {
		return nil, nil, err
	}
	return lossCheckFuncs()
}

// lookupLossCheck finds the two by name with sym (a shim library's dlsym).
func lookupLossCheck(sym func(*C.char) unsafe.Pointer) (unsafe.Pointer, unsafe.Pointer, error) {
	var fns [2]unsafe.Pointer
	for i, name := range []string{"ltt_loss", "ltt_cross_entropy"} {
		cname := C.CString(name)
		fns[i] = sym(cname)
		C.free(unsafe.Pointer(cname))
		if fns[i] == nil {
			return nil, nil, fmt.Errorf("torch: the shim library has no %s: build it again from these sources (make build)", name)
		}
	}
	return fns[0], fns[1], nil
}
