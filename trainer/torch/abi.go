//go:build cgo

package torch

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// This file holds what every call into the shim shares: the version check,
// the error convention and the constants mirrored from shim.h.

// abiVersion is the LT_ABI_VERSION of the shim.h this binding is compiled
// against (with -tags ltshim the library linked at run time may differ).
const abiVersion = C.LT_ABI_VERSION

// The Go constants that mirror shim.h's (declared without cgo, so a build
// without libtorch still has them) are checked against the header when
// this file compiles (optimizer rules are not constants of the header:
// lt_optim_new checks a Rule's number against its name at run time): each line is an array of length 0 exactly when the
// two agree, and a difference of either sign fails the build.
var (
	_ [0]int = [OpSeq - C.LT_SEQ]int{}
	_ [0]int = [OpConv - C.LT_CONV]int{}
	_ [0]int = [OpBatchNorm - C.LT_BN]int{}
	_ [0]int = [OpLinear - C.LT_LINEAR]int{}
	_ [0]int = [OpReLU - C.LT_RELU]int{}
	_ [0]int = [OpMaxPool - C.LT_MAXPOOL]int{}
	_ [0]int = [OpAvgPool - C.LT_AVGPOOL]int{}
	_ [0]int = [OpGlobalAvgPool - C.LT_GAP]int{}
	_ [0]int = [OpFlatten - C.LT_FLATTEN]int{}
	_ [0]int = [OpDropout - C.LT_DROPOUT]int{}
	_ [0]int = [OpSigmoid - C.LT_SIGMOID]int{}
	_ [0]int = [OpSum - C.LT_SUM]int{}
	_ [0]int = [OpCat - C.LT_CAT]int{}
	_ [0]int = [OpMul - C.LT_MUL]int{}
	_ [0]int = [OpIdentity - C.LT_IDENTITY]int{}
	_ [0]int = [OpPReLU - C.LT_PRELU]int{}
	_ [0]int = [numOps - (C.LT_PRELU + 1)]int{}

	_ [0]int = [InitDefault - C.LT_INIT_DEFAULT]int{}
	_ [0]int = [InitKaimingFanOut - C.LT_INIT_KAIMING_FAN_OUT]int{}
	_ [0]int = [InitKaimingFanIn - C.LT_INIT_KAIMING_FAN_IN]int{}
	_ [0]int = [InitZeroBias - C.LT_INIT_ZERO_BIAS]int{}

	_ [0]int = [Float32 - C.LT_DTYPE_F32]int{}
	_ [0]int = [Int64 - C.LT_DTYPE_I64]int{}
	_ [0]int = [Float64 - C.LT_DTYPE_F64]int{}
	_ [0]int = [Float16 - C.LT_DTYPE_F16]int{}
	_ [0]int = [Int32 - C.LT_DTYPE_I32]int{}
	_ [0]int = [Uint8 - C.LT_DTYPE_U8]int{}
	_ [0]int = [BFloat16 - C.LT_DTYPE_BF16]int{}
	_ [0]int = [len(dtypeNames) - (C.LT_DTYPE_BF16 + 1)]int{}

	_ [0]int = [FP32 - C.LT_FP32]int{}
	_ [0]int = [BF16 - C.LT_BF16]int{}
	_ [0]int = [FP16 - C.LT_FP16]int{}
	_ [0]int = [len(precisionNames) - (C.LT_FP16 + 1)]int{}
)

// shim is the shim's ABI version, asked once (lt_abi_version is one of the
// two functions of shim.h that never change, so any shim answers it), or
// why there is no shim: a lazy build (-tags ltlazy) opens the shim library
// here, on the binding's first use, and then applies the Runtime that Init
// recorded (load_lazy.go); a linked build has both done already.
var shim = sync.OnceValues(func() (int, error) {
	if err := loadShim(); err != nil {
		return 0, err
	}
	v := int(C.lt_abi_version())
	if v == abiVersion {
		if err := applyRuntime(); err != nil {
			return v, err
		}
	}
	return v, nil
})

// checkABI is Check for a shim that reports version shim.
func checkABI(shim int) error {
	if shim != abiVersion {
		return fmt.Errorf("torch: %w: the shim library (libltshim.so) speaks ABI version %d, this lcl binary "+
			"version %d: rebuild it from this lcl's sources (make build, or trainer/torch/build-shim.sh)", ErrABIMismatch, shim, abiVersion)
	}
	return nil
}

// Check reports whether libtorch can be used: nil, or an error wrapping
// ErrABIMismatch when the shim library was built from another lcl version
// (only possible with -tags ltshim). Every operation checks it first.
func Check() error {
	v, err := shim()
	if err != nil {
		return err
	}
	return checkABI(v)
}

// Version is the libtorch version the binding runs on (also with a shim of
// another ABI version: lt_torch_version never changes); "" without a shim.
func Version() string {
	if _, err := shim(); err != nil {
		return ""
	}
	return C.GoString(C.lt_torch_version())
}

// Available reports whether libtorch is linked in and usable (Check is nil).
func Available() bool { return Check() == nil }

// errOf turns the out-parameter of a failed call into an *Error.
func errOf(op string, cerr *C.char) error {
	if cerr == nil {
		return &Error{Op: op, Msg: "failed without a message"}
	}
	msg := C.GoString(cerr)
	C.free(unsafe.Pointer(cerr))
	return &Error{Op: op, Msg: msg}
}

// call makes one call of shim.h's convention: f passes err as the
// function's error out-parameter and returns its status, and a failure
// becomes an *Error of op. keep are the Go values whose memory or C
// handles the call uses: they stay alive (their cleanups cannot free a
// handle) until it returns.
func call(op string, f func(err **C.char) C.int32_t, keep ...any) error {
	var cerr *C.char
	rc := f(&cerr)
	runtime.KeepAlive(keep)
	if rc != 0 {
		return errOf(op, cerr)
	}
	return nil
}

// create is call for a constructor, which returns its new handle H (a
// pointer to an opaque C type), or NULL on failure.
func create[H comparable](op string, f func(err **C.char) H, keep ...any) (H, error) {
	var cerr *C.char
	h := f(&cerr)
	runtime.KeepAlive(keep)
	var null H
	if h == null {
		return null, errOf(op, cerr)
	}
	return h, nil
}

// callLib is call for a function of no handle: the shim's ABI version is
// checked first.
func callLib(op string, f func(err **C.char) C.int32_t) error {
	if err := Check(); err != nil {
		return err
	}
	return call(op, f)
}

// release is the Close of a value holding the handle *c: it frees the
// handle with free, once, and stops the cleanup that backs up a forgotten
// Close.
func release[H comparable](c *H, cleanup *runtime.Cleanup, free func(H)) {
	var null H
	if *c == null {
		return
	}
	cleanup.Stop()
	free(*c)
	*c = null
}

// cstr is s as a C string and the function that frees it.
func cstr(s string) (*C.char, func()) {
	p := C.CString(s)
	return p, func() { C.free(unsafe.Pointer(p)) }
}

// cbool is b as shim.h's int32_t flag.
func cbool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// cCoefs is c as the C struct lt_coefs, whose fields are all C floats in the
// order of Coefs' fields (TestCoefsMatchHeader holds shim.h to that, and
// TestCCoefsSize the struct's size), so a new term needs no line here.
func cCoefs(c Coefs) C.lt_coefs {
	var out C.lt_coefs
	copy(unsafe.Slice((*float32)(unsafe.Pointer(&out)), cCoefsLen()), c.Float32s())
	return out
}

// cCoefsLen is the number of floats lt_coefs holds.
func cCoefsLen() int { return int(unsafe.Sizeof(C.lt_coefs{}) / unsafe.Sizeof(C.float(0))) }
