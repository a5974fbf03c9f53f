//go:build cgo

package torch

// #include "shim.h"
import "C"

import "runtime"

// The optimizer section of shim.h (state.hpp, optim.hpp).

// handle is the C handle of o, or an error when o is nil or closed.
func (o *Optimizer) handle(op string) (*C.lt_optim, error) {
	if o == nil || o.c == nil {
		return nil, closedErr(op, "optimizer")
	}
	return o.c, nil
}

// newOptimizer creates an optimizer of m's parameters with newC, one of
// shim.h's optimizer constructors.
func newOptimizer(m *Model, newC func(mc *C.lt_model, err **C.char) *C.lt_optim) (*Optimizer, error) {
	const op = "new optimizer"
	mc, err := m.handle(op)
	if err != nil {
		return nil, err
	}
	c, err := create(op, func(e **C.char) *C.lt_optim { return newC(mc, e) }, m)
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
	return newOptimizer(m, func(mc *C.lt_model, e **C.char) *C.lt_optim {
		return C.lt_optim_new_sgd(mc, C.double(momentum), C.double(weightDecay), cbool(nesterov), e)
	})
}

// NewRMSProp creates TensorFlow's RMSProp over m's parameters (the
// optimizer of the Inception papers): ms ← decay·ms + (1−decay)·d² with ms
// starting at 1, mom ← momentum·mom + lr·d/√(ms+eps), p ← p − mom, where
// d = grad + weightDecay·p. Its state is every parameter's
// "<param>.square_avg", then (with momentum) every "<param>.momentum_buffer".
func NewRMSProp(m *Model, decay, eps, momentum, weightDecay float64) (*Optimizer, error) {
	return newOptimizer(m, func(mc *C.lt_model, e **C.char) *C.lt_optim {
		return C.lt_optim_new_rmsprop(mc, C.double(decay), C.double(eps), C.double(momentum), C.double(weightDecay), e)
	})
}

// NewAdam creates Adam (o.Decoupled false) or AdamW over m's parameters:
// the update of PyTorch 1.13's torch.optim.Adam/AdamW (amsgrad off), bit
// for bit on the same libtorch. Its state is every parameter's
// "<param>.exp_avg", then "<param>.exp_avg_sq", then "<param>.step" (a
// float32 scalar). Create it after ChannelsLast, like NewSGD.
func NewAdam(m *Model, o AdamOptions) (*Optimizer, error) {
	return newOptimizer(m, func(mc *C.lt_model, e **C.char) *C.lt_optim {
		return C.lt_optim_new_adam(mc, C.double(o.Beta1), C.double(o.Beta2), C.double(o.Eps), C.double(o.WeightDecay),
			cbool(o.Decoupled), e)
	})
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
