//go:build cgo && ltlazy

package torch

// #include <stdlib.h>
// #include "lazy.h"
import "C"

import "unsafe"

// lossCheckFuncs looks the two up in the shim library lazy.c opened
// (RTLD_LOCAL: only its handle finds them).
func lossCheckFuncs() (unsafe.Pointer, unsafe.Pointer, error) {
	return lookupLossCheck(func(name *C.char) unsafe.Pointer { return C.lt_lazy_sym(name) })
}
