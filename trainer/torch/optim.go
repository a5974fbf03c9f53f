//go:build cgo

package torch

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
)

// AdamOptions are Adam's settings (torch.optim.Adam/AdamW's): the moments'
// decay rates Beta1 and Beta2, Eps added to the denominator, and the weight
// decay, added to the gradient (Adam) or decoupled from it (AdamW: the
// weights shrink by lr·WeightDecay before each update).
type AdamOptions struct {
	Beta1, Beta2, Eps, WeightDecay float64
	Decoupled                      bool // AdamW
}

// NewAdam creates Adam (o.Decoupled false) or AdamW over m's parameters:
// the update of PyTorch 1.13's torch.optim.Adam/AdamW (amsgrad off), bit
// for bit on the same libtorch. Its state is every parameter's
// "<param>.exp_avg", then "<param>.exp_avg_sq", then "<param>.step" (a
// float32 scalar). Create it after ChannelsLast, like NewSGD.
func NewAdam(m *Model, o AdamOptions) (*Optimizer, error) {
	mc, err := m.handle("new optimizer")
	if err != nil {
		return nil, err
	}
	dec := C.int32_t(0)
	if o.Decoupled {
		dec = 1
	}
	var cerr *C.char
	c := C.lt_optim_new_adam(mc, C.double(o.Beta1), C.double(o.Beta2), C.double(o.Eps), C.double(o.WeightDecay), dec, &cerr)
	runtime.KeepAlive(m)
	if c == nil {
		return nil, errOf("new optimizer", cerr)
	}
	opt := &Optimizer{c: c}
	opt.cleanup = runtime.AddCleanup(opt, func(c *C.lt_optim) { C.lt_optim_free(c) }, c)
	return opt, nil
}

// SetClipNorm makes every later update of o first scale its gradients,
// taken together as one vector, to an L2 norm of at most maxNorm
// (torch.nn.utils.clip_grad_norm_); maxNorm ≤ 0 turns clipping off. The
// gradients clipped are the ones the update uses: with fp16 after the loss
// scale is undone, data-parallel after the ranks' gradients are summed.
func (o *Optimizer) SetClipNorm(maxNorm float64) error {
	c, err := o.handle("clip norm")
	if err != nil {
		return err
	}
	var cerr *C.char
	rc := C.lt_optim_set_clip_norm(c, C.double(maxNorm), &cerr)
	runtime.KeepAlive(o)
	if rc != 0 {
		return errOf("clip norm", cerr)
	}
	return nil
}

// UpdateEMA moves m, an exponential moving average of the weights of src,
// one step towards them: m ← decay·m + (1−decay)·src over every parameter
// and buffer (timm's ModelEmaV2.update; integer buffers are truncated as
// there). m and src must have the same architecture.
func (m *Model) UpdateEMA(src *Model, decay float64) error {
	mc, err := m.handle("ema update")
	if err != nil {
		return err
	}
	sc, err := src.handle("ema update")
	if err != nil {
		return err
	}
	if !(decay >= 0 && decay <= 1) {
		return fmt.Errorf("torch: ema update: decay %v outside [0, 1]", decay)
	}
	var cerr *C.char
	rc := C.lt_model_ema_update(mc, sc, C.double(decay), &cerr)
	runtime.KeepAlive(m)
	runtime.KeepAlive(src)
	if rc != 0 {
		return errOf("ema update", cerr)
	}
	return nil
}
