//go:build cgo

package torch

// #cgo LDFLAGS: -ldl
// #define _GNU_SOURCE
// #include <dlfcn.h>
// #include <stdlib.h>
// #include <string.h>
//
// // lt_blas_file: the file defining sgemm_ in the loaded library of the
// // given soname, copied (malloc), or NULL when none is loaded.
// static char* lt_blas_file(const char* soname) {
// 	void* h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
// 	if (!h) return NULL;
// 	char* r = NULL;
// 	void* s = dlsym(h, "sgemm_");
// 	Dl_info info;
// 	if (s && dladdr(s, &info) && info.dli_fname) r = strdup(info.dli_fname);
// 	dlclose(h);
// 	return r;
// }
import "C"

import (
	"path/filepath"
	"unsafe"
)

// LoadedBLAS asks the dynamic loader which file defines sgemm_ in the BLAS
// libtorch links (the loaded libblas.so.3, else libopenblas.so.0). Call it
// once libtorch is loaded (after Check): a lazy build maps libtorch, and with
// it the BLAS, only then. A process can map two BLAS libraries at once (on
// Debian liblapack.so.3 may pull in OpenBLAS beside Netlib's libblas.so.3),
// so the answer is the library libtorch binds to, not the first one mapped.
func LoadedBLAS() (BLAS, error) {
	for _, soname := range []string{"libblas.so.3", "libopenblas.so.0"} {
		cs := C.CString(soname)
		p := C.lt_blas_file(cs)
		C.free(unsafe.Pointer(cs))
		if p == nil {
			continue
		}
		path := C.GoString(p)
		C.free(unsafe.Pointer(p))
		if abs, err := filepath.EvalSymlinks(path); err == nil {
			path = abs
		}
		return BLAS{Kind: blasKind(path), Path: path}, nil
	}
	return BLAS{}, nil
}
