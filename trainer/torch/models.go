//go:build cgo

package torch

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// The tensor and model sections of shim.h (models.hpp).

type (
	tensorHandle = *C.lt_tensor
	modelHandle  = *C.lt_model
	optimHandle  = *C.lt_optim
	groupHandle  = *C.lt_pg
	stateHandle  = *C.lt_state
)

// NewTensor copies data of the given shape onto device ("cpu", "cuda:0").
func NewTensor(data []float32, shape []int64, device string) (*Tensor, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	if n != int64(len(data)) || len(shape) == 0 {
		return nil, fmt.Errorf("torch: new tensor: %d values for shape %v", len(data), shape)
	}
	dev, free := cstr(device)
	defer free()
	c, err := create("new tensor", func(e **C.char) *C.lt_tensor {
		return C.lt_tensor_new((*C.float)(&data[0]), (*C.int64_t)(&shape[0]), C.int32_t(len(shape)), dev, e)
	})
	if err != nil {
		return nil, err
	}
	t := &Tensor{c: c, shape: append([]int64(nil), shape...)}
	t.cleanup = runtime.AddCleanup(t, freeTensor, c)
	return t, nil
}

func freeTensor(c *C.lt_tensor) { C.lt_tensor_free(c) }
func freeModel(c *C.lt_model)   { C.lt_model_free(c) }

// Close frees the tensor; it is idempotent.
func (t *Tensor) Close() {
	if t != nil {
		release(&t.c, &t.cleanup, freeTensor)
	}
}

// ptr is the C handle of an optional tensor: nil for a nil *Tensor, an error
// for a closed one (which must not silently mean "no tensor").
func (t *Tensor) ptr(op string) (*C.lt_tensor, error) {
	if t == nil {
		return nil, nil
	}
	if t.c == nil {
		return nil, closedErr(op, "tensor")
	}
	return t.c, nil
}

// handle is the C handle of m, or an error when m is nil or closed.
func (m *Model) handle(op string) (*C.lt_model, error) {
	if m == nil || m.c == nil {
		return nil, closedErr(op, "model")
	}
	return m.c, nil
}

// NewModel builds and initialises the network of spec on device: the node
// trees of a built-in architecture (checked with Spec.Check first), or the
// TorchScript module in spec.Script, loaded with its weights (or
// re-initialised with spec.Reinit) — copied from spec.Loaded when the
// caller loaded and checked it (LoadScript), else read from the file — and run once on a zero input to check
// that it gives NumClasses logits. A TorchScript model's penultimate
// features are its method `penultimate` when it defines one, else the
// input of the last linear layer of its forward (docs/trainer.md).
// Initialisation draws from libtorch's generator: seed it with ManualSeed.
func NewModel(spec Spec, device string) (*Model, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	dev, free := cstr(device)
	defer free()
	in := [4]C.int32_t{C.int32_t(spec.InC), C.int32_t(spec.InH), C.int32_t(spec.InW), C.int32_t(spec.NumClasses)}
	var c *C.lt_model
	var err error
	if spec.Loaded != nil {
		c, err = newScriptModel(spec.Loaded, in, spec.Reinit, dev)
	} else if spec.Script != "" {
		path, freePath := cstr(spec.Script)
		defer freePath()
		c, err = create("new model", func(e **C.char) *C.lt_model {
			return C.lt_model_load(path, in[0], in[1], in[2], in[3], cbool(spec.Reinit), dev, e)
		})
	} else {
		if _, err := spec.Check(); err != nil {
			return nil, err
		}
		nodes, freeNodes := flatten(spec)
		defer freeNodes()
		c, err = create("new model", func(e **C.char) *C.lt_model {
			return C.lt_model_new(&nodes[0], C.int32_t(len(nodes)), in[0], in[1], in[2], in[3], dev, e)
		}, nodes)
	}
	m, err := wrapModel(spec, c, err)
	if err == nil && len(spec.Levels) > 0 {
		if err = m.addLevels(spec.Levels); err != nil {
			m.Close()
			m = nil
		}
	}
	return m, err
}

// addLevels registers a level head per level on the new model
// (lt_model_add_levels), before anything reads its state.
func (m *Model) addLevels(levels []Level) error {
	const op = "level heads"
	c, err := m.handle(op)
	if err != nil {
		return err
	}
	n := m.spec.NumClasses
	group := make([]int32, 0, len(levels)*n)
	groups := make([]int32, len(levels))
	for l, lv := range levels {
		if len(lv.Group) != n {
			return fmt.Errorf("torch: %s: level %d gives a group for %d classes, want %d", op, l, len(lv.Group), n)
		}
		groups[l] = int32(lv.Groups)
		for _, g := range lv.Group {
			group = append(group, int32(g))
		}
	}
	return call(op, func(e **C.char) C.int32_t {
		return C.lt_model_add_levels(c, (*C.int32_t)(&group[0]), (*C.int32_t)(&groups[0]), C.int32_t(len(levels)), e)
	}, m, group, groups)
}

// wrapModel turns the result of a model constructor into a *Model of spec;
// it owns c: when the model cannot be wrapped it frees it.
func wrapModel(spec Spec, c *C.lt_model, err error) (*Model, error) {
	if err != nil {
		return nil, err
	}
	var fd C.int64_t
	if err := call("new model", func(e **C.char) C.int32_t { return C.lt_model_feature_dim(c, &fd, e) }); err != nil {
		freeModel(c)
		return nil, err
	}
	m := &Model{c: c, spec: spec, featureDim: int(fd)}
	m.cleanup = runtime.AddCleanup(m, freeModel, c)
	return m, nil
}

// newModelFromNodes builds an already flattened tree without Go's checks:
// for tests of the C++ side's own validation.
func newModelFromNodes(nodes []C.lt_node, c, h, w, classes int) (*Model, error) {
	dev, free := cstr("cpu")
	defer free()
	m, err := create("new model", func(e **C.char) *C.lt_model {
		return C.lt_model_new(&nodes[0], C.int32_t(len(nodes)), C.int32_t(c), C.int32_t(h), C.int32_t(w), C.int32_t(classes), dev, e)
	}, nodes)
	return wrapModel(Spec{InC: c, InH: h, InW: w, NumClasses: classes}, m, err)
}

// flatten writes the spec's trees in pre-order under an unnamed root
// sequence, as lt_model_new reads them; free releases the C strings of the
// names.
func flatten(spec Spec) ([]C.lt_node, func()) {
	var nodes []C.lt_node
	var names []*C.char
	var add func(n *Node)
	add = func(n *Node) {
		var d C.lt_node
		d.op = C.int32_t(n.Op)
		if n.Name != "" {
			p := C.CString(n.Name)
			names = append(names, p)
			d.name = p
		}
		d.n_children = C.int32_t(len(n.Children))
		d.in, d.out = C.int32_t(n.In), C.int32_t(n.Out)
		d.kh, d.kw = C.int32_t(n.Kernel[0]), C.int32_t(n.Kernel[1])
		d.sh, d.sw = C.int32_t(n.Stride[0]), C.int32_t(n.Stride[1])
		d.ph, d.pw = C.int32_t(n.Pad[0]), C.int32_t(n.Pad[1])
		d.groups = C.int32_t(n.Groups)
		d.bias = cbool(n.Bias)
		if n.Ceil {
			d.flags |= C.LT_POOL_CEIL
		}
		if n.NoPadAvg {
			d.flags |= C.LT_POOL_EXCLUDE_PAD
		}
		d.init = C.int32_t(n.Init)
		d.eps, d.momentum, d.p, d.scale = C.double(n.Eps), C.double(n.Momentum), C.double(n.P), C.double(n.Scale)
		nodes = append(nodes, d)
		for i := range n.Children {
			add(&n.Children[i])
		}
	}
	root := Seq("", spec.Features, spec.Head)
	add(&root)
	return nodes, func() {
		for _, p := range names {
			C.free(unsafe.Pointer(p))
		}
	}
}

// Close frees the model; it is idempotent.
func (m *Model) Close() {
	if m != nil {
		release(&m.c, &m.cleanup, freeModel)
	}
}

// NumParams is the number of trainable scalars.
func (m *Model) NumParams() (int64, error) {
	const op = "parameter count"
	c, err := m.handle(op)
	if err != nil {
		return 0, err
	}
	var n C.int64_t
	err = call(op, func(e **C.char) C.int32_t { return C.lt_model_num_params(c, &n, e) }, m)
	return int64(n), err
}

// ChannelsLast converts the model's 4-d parameters and buffers to the
// channels-last memory format. Call it before creating the optimizer (its
// state follows the parameters' format); the model's State still reads and
// writes in NCHW order.
func (m *Model) ChannelsLast() error {
	const op = "channels last"
	c, err := m.handle(op)
	if err != nil {
		return err
	}
	return call(op, func(e **C.char) C.int32_t { return C.lt_model_channels_last(c, e) }, m)
}

// FixHead sets the model's head, which must be one linear layer, to the
// classes×FeatureDim matrix v (row c: class c's vector) with a zero bias and
// stops training it: a fixed classifier (HAFrame's). The cosine term of
// Coefs takes its class vectors from here. Setting the same v again (every
// epoch's plan does, also after a resume) changes nothing.
func (m *Model) FixHead(v []float32, classes, dim int) error {
	const op = "fix head"
	c, err := m.handle(op)
	if err != nil {
		return err
	}
	if classes <= 0 || dim <= 0 || len(v) != classes*dim {
		return fmt.Errorf("torch: %s: %d values for a %d×%d matrix", op, len(v), classes, dim)
	}
	return call(op, func(e **C.char) C.int32_t {
		return C.lt_model_fix_head(c, (*C.float)(&v[0]), C.int64_t(classes), C.int64_t(dim), e)
	}, m)
}

// UpdateEMA moves m, an exponential moving average of the weights of src,
// one step towards them: m ← decay·m + (1−decay)·src over every parameter
// and buffer (timm's ModelEmaV2.update; integer buffers are truncated as
// there). m and src must have the same architecture.
func (m *Model) UpdateEMA(src *Model, decay float64) error {
	const op = "ema update"
	mc, err := m.handle(op)
	if err != nil {
		return err
	}
	sc, err := src.handle(op)
	if err != nil {
		return err
	}
	if !(decay >= 0 && decay <= 1) {
		return fmt.Errorf("torch: ema update: decay %v outside [0, 1]", decay)
	}
	return call(op, func(e **C.char) C.int32_t { return C.lt_model_ema_update(mc, sc, C.double(decay), e) }, m, src)
}
