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

type (
	tensorHandle = *C.lt_tensor
	modelHandle  = *C.lt_model
	optimHandle  = *C.lt_optim
	groupHandle  = *C.lt_pg
)

// errOf turns the out-parameter of a failed call into an *Error.
func errOf(op string, cerr *C.char) error {
	if cerr == nil {
		return &Error{Op: op, Msg: "failed without a message"}
	}
	msg := C.GoString(cerr)
	C.free(unsafe.Pointer(cerr))
	return &Error{Op: op, Msg: msg}
}

func cstr(s string) (*C.char, func()) {
	p := C.CString(s)
	return p, func() { C.free(unsafe.Pointer(p)) }
}

// abiVersion is the LT_ABI_VERSION of the shim.h this binding was written
// against.
const abiVersion = 8

// shimABI asks the shim for its ABI version: lt_abi_version is one of the
// two functions of shim.h that never change, so any shim answers it.
var shimABI = sync.OnceValue(func() int { return int(C.lt_abi_version()) })

// checkABI is Check for a shim that reports version shim.
func checkABI(shim int) error {
	if shim != abiVersion {
		return fmt.Errorf("torch: %w: the shim library (libltshim.so) speaks ABI version %d, this lcl binary "+
			"version %d: rebuild it from this lcl's sources with trainer/torch/build-shim.sh", ErrABIMismatch, shim, abiVersion)
	}
	return nil
}

// Check reports whether libtorch can be used: nil, or an error wrapping
// ErrABIMismatch when the shim library was built from another lcl version
// (only possible with -tags ltshim). Every operation checks it first.
func Check() error { return checkABI(shimABI()) }

// Version is the libtorch version the binding runs on (also with a shim of
// another ABI version: lt_torch_version never changes).
func Version() string { return C.GoString(C.lt_torch_version()) }

// Available reports whether libtorch is linked in and usable (Check is nil).
func Available() bool { return Check() == nil }

// SetThreads sets libtorch's intra-op thread count (n ≤ 0 keeps the default).
func SetThreads(n int) error {
	if err := Check(); err != nil {
		return err
	}
	var cerr *C.char
	if C.lt_set_threads(C.int32_t(n), &cerr) != 0 {
		return errOf("set threads", cerr)
	}
	return nil
}

// Threads is libtorch's intra-op thread count.
func Threads() (int, error) {
	if err := Check(); err != nil {
		return 0, err
	}
	var n C.int32_t
	var cerr *C.char
	if C.lt_get_threads(&n, &cerr) != 0 {
		return 0, errOf("threads", cerr)
	}
	return int(n), nil
}

// ManualSeed seeds libtorch's default generators (initialisation, dropout).
func ManualSeed(seed uint64) error {
	if err := Check(); err != nil {
		return err
	}
	var cerr *C.char
	if C.lt_manual_seed(C.uint64_t(seed), &cerr) != 0 {
		return errOf("manual seed", cerr)
	}
	return nil
}

// CUDADevices is the number of CUDA devices libtorch sees (0 on CPU builds).
func CUDADevices() (int, error) {
	if err := Check(); err != nil {
		return 0, err
	}
	var n C.int32_t
	var cerr *C.char
	if C.lt_cuda_device_count(&n, &cerr) != 0 {
		return 0, errOf("cuda device count", cerr)
	}
	return int(n), nil
}

// CPUAllocStats reports the caching CPU allocator's counters; ok is false
// when the Runtime (Init) left libtorch's own allocator in place.
func CPUAllocStats() (s AllocStats, ok bool, err error) {
	if err := Check(); err != nil {
		return s, false, err
	}
	var out [5]C.int64_t
	var installed C.int32_t
	var cerr *C.char
	if C.lt_cpu_alloc_stats(&out[0], &installed, &cerr) != 0 {
		return s, false, errOf("cpu allocator stats", cerr)
	}
	if installed == 0 {
		return s, false, nil
	}
	return AllocStats{Hits: int64(out[0]), Misses: int64(out[1]), LiveBytes: int64(out[2]),
		PeakBytes: int64(out[3]), CachedBytes: int64(out[4])}, true, nil
}

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
	var cerr *C.char
	c := C.lt_tensor_new((*C.float)(&data[0]), (*C.int64_t)(&shape[0]), C.int32_t(len(shape)), dev, &cerr)
	runtime.KeepAlive(data)
	runtime.KeepAlive(shape)
	if c == nil {
		return nil, errOf("new tensor", cerr)
	}
	t := &Tensor{c: c, shape: append([]int64(nil), shape...)}
	t.cleanup = runtime.AddCleanup(t, func(c *C.lt_tensor) { C.lt_tensor_free(c) }, c)
	return t, nil
}

// Close frees the tensor; it is idempotent.
func (t *Tensor) Close() {
	if t == nil || t.c == nil {
		return
	}
	t.cleanup.Stop()
	C.lt_tensor_free(t.c)
	t.c = nil
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

// handle is the C handle of o, or an error when o is nil or closed.
func (o *Optimizer) handle(op string) (*C.lt_optim, error) {
	if o == nil || o.c == nil {
		return nil, closedErr(op, "optimizer")
	}
	return o.c, nil
}

// NewModel builds and initialises the network of spec on device: the node
// trees of a built-in architecture (checked with Spec.Check first), or the
// TorchScript module in spec.Script, loaded with its weights (or
// re-initialised with spec.Reinit) and run once on a zero input to check
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
	var cerr *C.char
	var c *C.lt_model
	if spec.Script != "" {
		path, freePath := cstr(spec.Script)
		defer freePath()
		reinit := C.int32_t(0)
		if spec.Reinit {
			reinit = 1
		}
		c = C.lt_model_load(path, C.int32_t(spec.InC), C.int32_t(spec.InH), C.int32_t(spec.InW),
			C.int32_t(spec.NumClasses), reinit, dev, &cerr)
	} else {
		if _, err := spec.Check(); err != nil {
			return nil, err
		}
		nodes, freeNodes := flatten(spec)
		defer freeNodes()
		c = C.lt_model_new(&nodes[0], C.int32_t(len(nodes)), C.int32_t(spec.InC), C.int32_t(spec.InH), C.int32_t(spec.InW),
			C.int32_t(spec.NumClasses), dev, &cerr)
		runtime.KeepAlive(nodes)
	}
	if c == nil {
		return nil, errOf("new model", cerr)
	}
	return wrapModel(c, spec)
}

// wrapModel owns c: on failure it frees it.
func wrapModel(c *C.lt_model, spec Spec) (*Model, error) {
	var fd C.int64_t
	var cerr *C.char
	if C.lt_model_feature_dim(c, &fd, &cerr) != 0 {
		C.lt_model_free(c)
		return nil, errOf("new model", cerr)
	}
	m := &Model{c: c, spec: spec, featureDim: int(fd)}
	m.cleanup = runtime.AddCleanup(m, func(c *C.lt_model) { C.lt_model_free(c) }, c)
	return m, nil
}

// newModelFromNodes builds an already flattened tree without Go's checks:
// for tests of the C++ side's own validation.
func newModelFromNodes(nodes []C.lt_node, c, h, w, classes int) (*Model, error) {
	dev, free := cstr("cpu")
	defer free()
	var cerr *C.char
	m := C.lt_model_new(&nodes[0], C.int32_t(len(nodes)), C.int32_t(c), C.int32_t(h), C.int32_t(w), C.int32_t(classes), dev, &cerr)
	if m == nil {
		return nil, errOf("new model", cerr)
	}
	return wrapModel(m, Spec{InC: c, InH: h, InW: w, NumClasses: classes})
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
		if n.Bias {
			d.bias = 1
		}
		if n.Ceil {
			d.flags |= 1
		}
		if n.NoPadAvg {
			d.flags |= 2
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
	if m == nil || m.c == nil {
		return
	}
	m.cleanup.Stop()
	C.lt_model_free(m.c)
	m.c = nil
}

// NumParams is the number of trainable scalars.
func (m *Model) NumParams() (int64, error) {
	c, err := m.handle("parameter count")
	if err != nil {
		return 0, err
	}
	var n C.int64_t
	var cerr *C.char
	rc := C.lt_model_num_params(c, &n, &cerr)
	runtime.KeepAlive(m)
	if rc != 0 {
		return 0, errOf("parameter count", cerr)
	}
	return int64(n), nil
}

// State copies the model's parameters and buffers (torchvision names).
func (m *Model) State() ([]Named, error) {
	s, err := m.stateTable("model state")
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(m)
	return s.all()
}

// StateInfo lists the model's parameters and buffers as State does, with
// their types and shapes but without their data (Data is nil): with
// ReadState a caller can stream the state one tensor at a time.
func (m *Model) StateInfo() ([]Named, error) {
	s, err := m.stateTable("model state")
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(m)
	return s.infos()
}

// ReadState copies tensor i of StateInfo into dst, which must hold exactly
// its bytes.
func (m *Model) ReadState(i int, dst []byte) error {
	s, err := m.stateTable("model state")
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(m)
	return s.read(i, dst)
}

// LoadState overwrites the model's parameters and buffers; the names, types
// and shapes must match exactly.
func (m *Model) LoadState(state map[string]Named) error {
	s, err := m.stateTable("model state")
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(m)
	return s.load(state)
}

func (m *Model) stateTable(op string) (stateTable, error) {
	c, err := m.handle(op)
	if err != nil {
		return stateTable{}, err
	}
	return stateTable{op: op,
		count: func(n *C.int32_t, e **C.char) C.int32_t { return C.lt_model_state_count(c, n, e) },
		info: func(i C.int32_t, name **C.char, dt *C.int32_t, shape *C.int64_t, nd *C.int32_t, nb *C.int64_t, e **C.char) C.int32_t {
			return C.lt_model_state_info(c, i, name, dt, shape, nd, nb, e)
		},
		readFn: func(i C.int32_t, dst unsafe.Pointer, nb C.int64_t, e **C.char) C.int32_t {
			return C.lt_model_state_read(c, i, dst, nb, e)
		},
		writeFn: func(i C.int32_t, src unsafe.Pointer, nb C.int64_t, e **C.char) C.int32_t {
			return C.lt_model_state_write(c, i, src, nb, e)
		}}, nil
}

// stateTable is the named state of a model or an optimizer as the C ABI
// exposes it: a count, then per index the name, type and shape, and the data
// read or written in place. The caller keeps the owner alive.
type stateTable struct {
	op      string
	count   func(*C.int32_t, **C.char) C.int32_t
	info    func(C.int32_t, **C.char, *C.int32_t, *C.int64_t, *C.int32_t, *C.int64_t, **C.char) C.int32_t
	readFn  func(C.int32_t, unsafe.Pointer, C.int64_t, **C.char) C.int32_t
	writeFn func(C.int32_t, unsafe.Pointer, C.int64_t, **C.char) C.int32_t
}

// infos lists the tensors without their data.
func (s stateTable) infos() ([]Named, error) {
	var count C.int32_t
	var cerr *C.char
	if s.count(&count, &cerr) != 0 {
		return nil, errOf(s.op, cerr)
	}
	out := make([]Named, 0, int(count))
	for i := range int(count) {
		var (
			name  *C.char
			dt    C.int32_t
			shape [8]C.int64_t
			nd    C.int32_t
			nb    C.int64_t
		)
		if s.info(C.int32_t(i), &name, &dt, &shape[0], &nd, &nb, &cerr) != 0 {
			return nil, errOf(s.op, cerr)
		}
		n := Named{Name: C.GoString(name), DType: DType(dt), Shape: make([]int64, int(nd))}
		for d := range n.Shape {
			n.Shape[d] = int64(shape[d])
		}
		if n.NumBytes() != int64(nb) {
			return nil, fmt.Errorf("torch: %s: tensor %q: %d bytes for %v%v", s.op, n.Name, int64(nb), n.DType, n.Shape)
		}
		out = append(out, n)
	}
	return out, nil
}

// read copies tensor i into dst.
func (s stateTable) read(i int, dst []byte) error {
	var p unsafe.Pointer
	if len(dst) > 0 {
		p = unsafe.Pointer(&dst[0])
	}
	var cerr *C.char
	if s.readFn(C.int32_t(i), p, C.int64_t(len(dst)), &cerr) != 0 {
		return errOf(s.op, cerr)
	}
	return nil
}

// all copies every tensor.
func (s stateTable) all() ([]Named, error) {
	ns, err := s.infos()
	if err != nil {
		return nil, err
	}
	for i := range ns {
		ns[i].Data = make([]byte, ns[i].NumBytes())
		if err := s.read(i, ns[i].Data); err != nil {
			return nil, err
		}
	}
	return ns, nil
}

// load overwrites every tensor with the one of the same name in state.
func (s stateTable) load(state map[string]Named) error {
	want, err := s.infos()
	if err != nil {
		return err
	}
	if err := checkStateMatch(want, state, s.op); err != nil {
		return err
	}
	for i, w := range want {
		h := state[w.Name]
		if int64(len(h.Data)) != w.NumBytes() {
			return fmt.Errorf("%s: tensor %q has %d bytes, want %d", s.op, w.Name, len(h.Data), w.NumBytes())
		}
		var p unsafe.Pointer
		if len(h.Data) > 0 {
			p = unsafe.Pointer(&h.Data[0])
		}
		var cerr *C.char
		if s.writeFn(C.int32_t(i), p, C.int64_t(len(h.Data)), &cerr) != 0 {
			return errOf(s.op, cerr)
		}
	}
	return nil
}

// NewSGD creates the optimizer of m.
func NewSGD(m *Model, momentum, weightDecay float64, nesterov bool) (*Optimizer, error) {
	mc, err := m.handle("new optimizer")
	if err != nil {
		return nil, err
	}
	var cerr *C.char
	nv := C.int32_t(0)
	if nesterov {
		nv = 1
	}
	c := C.lt_optim_new(mc, C.double(momentum), C.double(weightDecay), nv, &cerr)
	runtime.KeepAlive(m)
	if c == nil {
		return nil, errOf("new optimizer", cerr)
	}
	o := &Optimizer{c: c}
	o.cleanup = runtime.AddCleanup(o, func(c *C.lt_optim) { C.lt_optim_free(c) }, c)
	return o, nil
}

// NewRMSProp creates TensorFlow's RMSProp over m's parameters (the
// optimizer of the Inception papers): ms ← decay·ms + (1−decay)·d² with ms
// starting at 1, mom ← momentum·mom + lr·d/√(ms+eps), p ← p − mom, where
// d = grad + weightDecay·p.
func NewRMSProp(m *Model, decay, eps, momentum, weightDecay float64) (*Optimizer, error) {
	mc, err := m.handle("new optimizer")
	if err != nil {
		return nil, err
	}
	var cerr *C.char
	c := C.lt_optim_new_rmsprop(mc, C.double(decay), C.double(eps), C.double(momentum), C.double(weightDecay), &cerr)
	runtime.KeepAlive(m)
	if c == nil {
		return nil, errOf("new optimizer", cerr)
	}
	o := &Optimizer{c: c}
	o.cleanup = runtime.AddCleanup(o, func(c *C.lt_optim) { C.lt_optim_free(c) }, c)
	return o, nil
}

// Close frees the optimizer; it is idempotent.
func (o *Optimizer) Close() {
	if o == nil || o.c == nil {
		return
	}
	o.cleanup.Stop()
	C.lt_optim_free(o.c)
	o.c = nil
}

// State copies the momentum buffers, named "<parameter>.momentum_buffer".
func (o *Optimizer) State() ([]Named, error) {
	s, err := o.stateTable("optimizer state")
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(o)
	return s.all()
}

// StateInfo lists the momentum buffers as State does, without their data.
func (o *Optimizer) StateInfo() ([]Named, error) {
	s, err := o.stateTable("optimizer state")
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(o)
	return s.infos()
}

// ReadState copies buffer i of StateInfo into dst, which must hold exactly
// its bytes.
func (o *Optimizer) ReadState(i int, dst []byte) error {
	s, err := o.stateTable("optimizer state")
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(o)
	return s.read(i, dst)
}

// LoadState overwrites the momentum buffers.
func (o *Optimizer) LoadState(state map[string]Named) error {
	s, err := o.stateTable("optimizer state")
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(o)
	return s.load(state)
}

func (o *Optimizer) stateTable(op string) (stateTable, error) {
	c, err := o.handle(op)
	if err != nil {
		return stateTable{}, err
	}
	return stateTable{op: op,
		count: func(n *C.int32_t, e **C.char) C.int32_t { return C.lt_optim_state_count(c, n, e) },
		info: func(i C.int32_t, name **C.char, dt *C.int32_t, shape *C.int64_t, nd *C.int32_t, nb *C.int64_t, e **C.char) C.int32_t {
			return C.lt_optim_state_info(c, i, name, dt, shape, nd, nb, e)
		},
		readFn: func(i C.int32_t, dst unsafe.Pointer, nb C.int64_t, e **C.char) C.int32_t {
			return C.lt_optim_state_read(c, i, dst, nb, e)
		},
		writeFn: func(i C.int32_t, src unsafe.Pointer, nb C.int64_t, e **C.char) C.int32_t {
			return C.lt_optim_state_write(c, i, src, nb, e)
		}}, nil
}

// TrainStep runs forward, loss, backward and an SGD step of every peer in
// one crossing into libtorch.
func TrainStep(s *Step) (StepResult, error) {
	const op = "train step"
	if err := Check(); err != nil {
		return StepResult{}, err
	}
	k := len(s.Models)
	if k == 0 || len(s.Optims) != k {
		return StepResult{}, fmt.Errorf("torch: train step: %d models and %d optimizers", k, len(s.Optims))
	}
	if (s.N <= 0 && s.Group == nil) || s.N < 0 || len(s.X) != s.N*s.C*s.H*s.W || len(s.Y) != s.N {
		return StepResult{}, fmt.Errorf("torch: train step: %d inputs and %d labels for a batch of %d×%d×%d×%d",
			len(s.X), len(s.Y), s.N, s.C, s.H, s.W)
	}
	if s.Weights != nil && len(s.Weights) != s.N {
		return StepResult{}, fmt.Errorf("torch: train step: %d weights for a batch of %d", len(s.Weights), s.N)
	}
	ms := make([]*C.lt_model, k)
	os := make([]*C.lt_optim, k)
	var err error
	for i := range k {
		if ms[i], err = s.Models[i].handle(op); err != nil {
			return StepResult{}, err
		}
		if os[i], err = s.Optims[i].handle(op); err != nil {
			return StepResult{}, err
		}
	}
	var teacher *C.lt_model
	if s.Teacher != nil {
		if teacher, err = s.Teacher.handle(op); err != nil {
			return StepResult{}, err
		}
	}
	targets, err := s.Targets.ptr(op)
	if err != nil {
		return StepResult{}, err
	}
	var w *C.float
	if s.Weights != nil && s.N > 0 {
		w = (*C.float)(&s.Weights[0])
	}
	var x *C.float
	var y *C.int64_t
	if s.N > 0 {
		x, y = (*C.float)(&s.X[0]), (*C.int64_t)(&s.Y[0])
	}
	res := StepResult{Loss: make([]float32, k), Correct: make([]int64, k), N: int64(s.N)}
	var cerr *C.char
	var rc C.int32_t
	if s.Group != nil {
		g, err := s.Group.acquire(op)
		if err != nil {
			return StepResult{}, err
		}
		defer s.Group.release()
		var n C.int64_t
		rc = C.lt_train_step_pg(g, &ms[0], &os[0], C.int32_t(k), teacher,
			x, C.int64_t(s.N), C.int64_t(s.C), C.int64_t(s.H), C.int64_t(s.W),
			y, targets, w, coefs(s.Coefs), C.double(s.LR),
			(*C.float)(&res.Loss[0]), (*C.int64_t)(&res.Correct[0]), &n, &cerr)
		res.N = int64(n)
		runtime.KeepAlive(s.Group)
	} else {
		rc = C.lt_train_step(&ms[0], &os[0], C.int32_t(k), teacher,
			x, C.int64_t(s.N), C.int64_t(s.C), C.int64_t(s.H), C.int64_t(s.W),
			y, targets, w, coefs(s.Coefs), C.double(s.LR),
			(*C.float)(&res.Loss[0]), (*C.int64_t)(&res.Correct[0]), &cerr)
	}
	runtime.KeepAlive(s)
	for i := range k {
		runtime.KeepAlive(s.Models[i])
		runtime.KeepAlive(s.Optims[i])
	}
	if rc != 0 {
		return StepResult{}, errOf(op, cerr)
	}
	return res, nil
}

func coefs(c Coefs) C.lt_coefs {
	return C.lt_coefs{soft: C.float(c.Soft), hard: C.float(c.Hard), kd: C.float(c.KD),
		kd_temp: C.float(c.KDTemp), mutual: C.float(c.Mutual)}
}

// Eval runs the model in evaluation mode without gradients on a batch x of n
// images shaped c×h×w. With labels y it counts top-1/top-5 hits and sums the
// cross-entropy; logits and features are returned when asked for.
func (m *Model) Eval(x []float32, n, c, h, w int, y []int64, logits, features bool) (EvalResult, error) {
	mc, err := m.handle("eval")
	if err != nil {
		return EvalResult{}, err
	}
	if n <= 0 || len(x) != n*c*h*w || (y != nil && len(y) != n) {
		return EvalResult{}, fmt.Errorf("torch: eval: %d inputs and %d labels for a batch of %d×%d×%d×%d", len(x), len(y), n, c, h, w)
	}
	var r EvalResult
	var top1, top5 C.int64_t
	var loss C.double
	var yp *C.int64_t
	if y != nil {
		yp = (*C.int64_t)(&y[0])
	}
	var lp, fp *C.float
	if logits {
		r.Logits = make([]float32, n*m.spec.NumClasses)
		lp = (*C.float)(&r.Logits[0])
	}
	if features {
		// A TorchScript model without penultimate features has width 0:
		// the C++ side then fails with the reason before writing.
		r.Features = make([]float32, max(n*m.featureDim, 1))
		fp = (*C.float)(&r.Features[0])
	}
	var cerr *C.char
	rc := C.lt_eval(mc, (*C.float)(&x[0]), C.int64_t(n), C.int64_t(c), C.int64_t(h), C.int64_t(w), yp,
		&top1, &top5, &loss, lp, fp, &cerr)
	runtime.KeepAlive(m)
	runtime.KeepAlive(x)
	runtime.KeepAlive(y)
	if rc != 0 {
		return EvalResult{}, errOf("eval", cerr)
	}
	r.Top1, r.Top5, r.LossSum = int64(top1), int64(top5), float64(loss)
	return r, nil
}

// Loss computes the training loss of TrainStep for one model's logits, and
// its gradient with respect to the logits.
func Loss(in LossInput) (float32, []float32, error) {
	const op = "loss"
	if err := Check(); err != nil {
		return 0, nil, err
	}
	n, c := in.N, in.C
	if n <= 0 || c <= 0 || len(in.Logits) != n*c || len(in.Y) != n || (in.Weights != nil && len(in.Weights) != n) ||
		(in.Teacher != nil && len(in.Teacher) != n*c) {
		return 0, nil, fmt.Errorf("torch: loss: inconsistent sizes for %d×%d logits", n, c)
	}
	targets, err := in.Targets.ptr(op)
	if err != nil {
		return 0, nil, err
	}
	var peers []float32
	for _, p := range in.Peers {
		if len(p) != n*c {
			return 0, nil, fmt.Errorf("torch: loss: %d peer logits for %d×%d", len(p), n, c)
		}
		peers = append(peers, p...)
	}
	grad := make([]float32, n*c)
	var w, tl, pl *C.float
	if in.Weights != nil {
		w = (*C.float)(&in.Weights[0])
	}
	if in.Teacher != nil {
		tl = (*C.float)(&in.Teacher[0])
	}
	if len(peers) > 0 {
		pl = (*C.float)(&peers[0])
	}
	var loss C.float
	var cerr *C.char
	rc := C.lt_loss((*C.float)(&in.Logits[0]), C.int64_t(n), C.int64_t(c), (*C.int64_t)(&in.Y[0]), targets, w,
		coefs(in.Coefs), tl, pl, C.int32_t(len(in.Peers)), &loss, (*C.float)(&grad[0]), &cerr)
	runtime.KeepAlive(in.Logits)
	runtime.KeepAlive(in.Y)
	runtime.KeepAlive(in.Weights)
	runtime.KeepAlive(in.Teacher)
	runtime.KeepAlive(peers)
	runtime.KeepAlive(in.Targets)
	if rc != 0 {
		return 0, nil, errOf(op, cerr)
	}
	return float32(loss), grad, nil
}

// CrossEntropy is torch.nn.functional.cross_entropy (mean over the batch):
// the reference the one-hot loss is checked against.
func CrossEntropy(logits []float32, n, c int, y []int64) (float32, error) {
	if err := Check(); err != nil {
		return 0, err
	}
	if n <= 0 || len(logits) != n*c || len(y) != n {
		return 0, fmt.Errorf("torch: cross entropy: inconsistent sizes for %d×%d logits", n, c)
	}
	var loss C.float
	var cerr *C.char
	rc := C.lt_cross_entropy((*C.float)(&logits[0]), C.int64_t(n), C.int64_t(c), (*C.int64_t)(&y[0]), &loss, &cerr)
	runtime.KeepAlive(logits)
	runtime.KeepAlive(y)
	if rc != 0 {
		return 0, errOf("cross entropy", cerr)
	}
	return float32(loss), nil
}

// initRuntime is Init's libtorch part (lt_runtime_init).
func initRuntime(rt Runtime) error {
	if err := Check(); err != nil {
		return err
	}
	if rt.BLASThreads < 0 {
		return fmt.Errorf("torch: runtime: BLASThreads %d: want 0 or more", rt.BLASThreads)
	}
	alloc, free := cstr(rt.CPUAllocator)
	defer free()
	var installed, blas C.int32_t
	var cerr *C.char
	if C.lt_runtime_init(alloc, C.int32_t(rt.BLASThreads), &installed, &blas, &cerr) != 0 {
		return errOf("runtime", cerr)
	}
	return nil
}
