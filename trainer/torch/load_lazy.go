//go:build cgo && ltlazy

package torch

// A lazy build (-tags ltlazy) links no libtorch: lazy.c opens the shim
// library libltshim.so ($LCL_SHIM, else beside the executable; make build
// puts it in bin/) on the binding's first use, so the commands that never
// train start without loading libtorch. The shim's functions are defined
// by lazy_gen.c to call through to the library.

// #cgo CFLAGS: -fvisibility=hidden
// #cgo LDFLAGS: -ldl -rdynamic
// #include "lazy.h"
import "C"

import (
	"fmt"
	"sync"
)

// loadShim opens the shim library, once (lt_lazy_load keeps the answer).
func loadShim() error {
	if e := C.lt_lazy_load(); e != nil {
		return noShimError(C.GoString(e))
	}
	return nil
}

// noShimError is a shim library that did not open: libtorch is not
// available (errors.Is ErrNoLibtorch), for another reason than a build
// without cgo.
type noShimError string

func (e noShimError) Error() string {
	return "torch: libtorch is not available: the shim library did not open: " + string(e) +
		" (make build puts libltshim.so beside lcl; LCL_SHIM names another)"
}

func (noShimError) Is(target error) bool { return target == ErrNoLibtorch }

// pending is the Runtime Init recorded, applied when the shim opens: the
// allocator and BLAS settings are the process's, like libtorch itself.
var pending struct {
	sync.Mutex
	rt *Runtime
}

// startRuntime records rt for the shim's opening (at most once, as Init).
func startRuntime(rt Runtime) error {
	pending.Lock()
	defer pending.Unlock()
	if pending.rt != nil {
		return fmt.Errorf("torch: runtime: the runtime is set once per process (torch.Init was called before)")
	}
	pending.rt = &rt
	return nil
}

// applyRuntime applies the recorded Runtime, if any, once the shim is open
// and of this binary's ABI (called once, by the first Check).
func applyRuntime() error {
	pending.Lock()
	defer pending.Unlock()
	if pending.rt == nil {
		return nil
	}
	return runtimeInit(*pending.rt)
}
