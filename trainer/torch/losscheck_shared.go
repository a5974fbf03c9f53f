//go:build cgo && ltshim

package torch

// #cgo LDFLAGS: -ldl
// #define _GNU_SOURCE
// #include <dlfcn.h>
// #include <stdlib.h>
// static void *losscheck_sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }
import "C"

import "unsafe"

// lossCheckFuncs looks the two up in the shim library the program was
// linked with.
func lossCheckFuncs() (unsafe.Pointer, unsafe.Pointer, error) {
	return lookupLossCheck(func(name *C.char) unsafe.Pointer { return C.losscheck_sym(name) })
}
