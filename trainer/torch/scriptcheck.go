//go:build cgo

package torch

// #include "scriptcheck.h"
import "C"

// CheckScript loads the TorchScript module at path on the CPU and checks
// it (lt_script_check in scriptcheck.h): unless trustOps, that none of its
// functions calls an operator that reaches the file system, the network or
// the terminal (aten::from_file, aten::save, RPC, c10d, prim::Print, or an
// operator outside libtorch's namespaces); and that forward gives
// [N, classes] logits for N zero images of c×h×w in evaluation mode (N = 1)
// and in training mode (N = 2). Loading runs the module's __setstate__:
// scan its code first (trainer/models does).
func CheckScript(path string, c, h, w, classes int, trustOps bool) error {
	p, free := cstr(path)
	defer free()
	return callLib("check TorchScript model", func(e **C.char) C.int32_t {
		return C.lt_script_check(p, C.int32_t(c), C.int32_t(h), C.int32_t(w), C.int32_t(classes), cbool(trustOps), e)
	})
}
