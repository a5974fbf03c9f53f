//go:build cgo

package torch

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"runtime"
	"unsafe"
)

// The optimizer section of shim.h (state.hpp, optim.hpp).

// handle is the C handle of o, or an error when o is nil or closed.
func (o *Optimizer) handle(op string) (*C.lt_optim, error) {
	if o == nil || o.c == nil {
		return nil, closedErr(op, "optimizer")
	}
	return o.c, nil
}

// NewOptimizer creates an optimizer of m's parameters with rule r and its
// parameters v, in the rule's order (optim.hpp documents each rule's
// parameters and state; trainer.Optimizers lists them by name). Create it
// after ChannelsLast: the state follows the parameters' memory format.
func NewOptimizer(m *Model, r Rule, v []float64) (*Optimizer, error) {
	const op = "new optimizer"
	mc, err := m.handle(op)
	if err != nil {
		return nil, err
	}
	name := C.CString(r.Name)
	defer C.free(unsafe.Pointer(name))
	var vp *C.double
	if len(v) > 0 {
		vp = (*C.double)(unsafe.Pointer(&v[0]))
	}
	c, err := create(op, func(e **C.char) *C.lt_optim {
		return C.lt_optim_new(mc, C.int32_t(r.Kind), name, vp, C.int32_t(len(v)), e)
	}, m, v)
	if err != nil {
		return nil, err
	}
	o := &Optimizer{c: c}
	o.cleanup = runtime.AddCleanup(o, freeOptim, c)
	return o, nil
}

func freeOptim(c *C.lt_optim) { C.lt_optim_free(c) }

// NewSGD creates SGD with momentum, Nesterov and weight decay over m's
// parameters: the update of torch.optim.SGD with dampening 0. Its state is
// every parameter's "<param>.momentum_buffer" (none without momentum).
func NewSGD(m *Model, momentum, weightDecay float64, nesterov bool) (*Optimizer, error) {
	n := 0.0
	if nesterov {
		n = 1
	}
	return NewOptimizer(m, Rule{0, "sgd"}, []float64{momentum, weightDecay, n}) // optim.hpp's rule 0
}

// Close frees the optimizer; it is idempotent.
func (o *Optimizer) Close() {
	if o != nil {
		release(&o.c, &o.cleanup, freeOptim)
	}
}

// SetClipNorm makes every later update of o first scale its gradients,
// taken together as one vector, to an L2 norm of at most maxNorm
// (torch.nn.utils.clip_grad_norm_); maxNorm ≤ 0 turns clipping off. The
// gradients clipped are the ones the update uses: with fp16 after the loss
// scale is undone, data-parallel after the ranks' gradients are summed.
func (o *Optimizer) SetClipNorm(maxNorm float64) error {
	const op = "clip norm"
	c, err := o.handle(op)
	if err != nil {
		return err
	}
	return call(op, func(e **C.char) C.int32_t { return C.lt_optim_set_clip_norm(c, C.double(maxNorm), e) }, o)
}
