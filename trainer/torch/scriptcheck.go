//go:build cgo

package torch

// #include <stdlib.h>
// #include "scriptcheck.h"
import "C"

import "runtime"

type scriptHandle = *C.lt_script

// LoadScript loads the TorchScript module at path on the CPU, once, and
// checks it (lt_script_load in scriptcheck.h): unless trustOps, that none
// of its functions calls an operator that reaches the file system, the
// network or the terminal (aten::from_file, aten::save, RPC, c10d,
// prim::Print, or an operator outside libtorch's namespaces); and that
// forward gives [N, classes] logits for N zero images of c×h×w in
// evaluation mode (N = 1) and in training mode (N = 2, on a copy). NewModel
// builds models from the result (Spec.Loaded) without opening the file
// again. Loading runs the module's __setstate__: scan its code first
// (trainer/models does).
func LoadScript(path string, c, h, w, classes int, trustOps bool) (*Script, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	p, free := cstr(path)
	defer free()
	s, err := create("check TorchScript model", func(e **C.char) *C.lt_script {
		return C.lt_script_load(p, C.int32_t(c), C.int32_t(h), C.int32_t(w), C.int32_t(classes), cbool(trustOps), e)
	})
	if err != nil {
		return nil, err
	}
	out := &Script{c: s, path: path}
	out.cleanup = runtime.AddCleanup(out, freeScript, s)
	return out, nil
}

func freeScript(c *C.lt_script) { C.lt_script_free(c) }

// Close frees the module; models built from it keep their own copies. It
// is idempotent.
func (s *Script) Close() {
	if s != nil {
		release(&s.c, &s.cleanup, freeScript)
	}
}

// newScriptModel builds a model of spec from a copy of its loaded module.
func newScriptModel(s *Script, in [4]C.int32_t, reinit bool, dev *C.char) (*C.lt_model, error) {
	if s.c == nil {
		return nil, closedErr("new model", "TorchScript module")
	}
	return create("new model", func(e **C.char) *C.lt_model {
		return C.lt_model_from_script(s.c, in[0], in[1], in[2], in[3], cbool(reinit), dev, e)
	}, s)
}
