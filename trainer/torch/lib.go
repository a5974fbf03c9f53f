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

// Version is the libtorch version the binding runs on.
func Version() string { return C.GoString(C.lt_torch_version()) }

// Available reports whether libtorch is linked in.
func Available() bool { return true }

// SetThreads sets libtorch's intra-op thread count (n ≤ 0 keeps the default).
func SetThreads(n int) { C.lt_set_threads(C.int32_t(n)) }

// Threads is libtorch's intra-op thread count.
func Threads() int { return int(C.lt_get_threads()) }

// ManualSeed seeds libtorch's default generators (initialisation, dropout).
func ManualSeed(seed uint64) { C.lt_manual_seed(C.uint64_t(seed)) }

// CUDADevices is the number of CUDA devices libtorch sees (0 on CPU builds).
func CUDADevices() int { return int(C.lt_cuda_device_count()) }

// CPUAllocStats reports the caching CPU allocator's counters; ok is false
// when LCL_CPU_ALLOCATOR=system left libtorch's own allocator in place.
func CPUAllocStats() (s AllocStats, ok bool) {
	var out [5]C.int64_t
	if C.lt_cpu_alloc_stats(&out[0]) == 0 {
		return s, false
	}
	return AllocStats{Hits: int64(out[0]), Misses: int64(out[1]), LiveBytes: int64(out[2]),
		PeakBytes: int64(out[3]), CachedBytes: int64(out[4])}, true
}

func init() {
	if v := int(C.lt_abi_version()); v != abiVersion {
		panic(fmt.Sprintf("torch: shim ABI version %d, binding expects %d", v, abiVersion))
	}
}

const abiVersion = 3

// Tensor is a float32 tensor held by libtorch (used for target matrices).
type Tensor struct {
	c       *C.lt_tensor
	shape   []int64
	cleanup runtime.Cleanup
}

// NewTensor copies data of the given shape onto device ("cpu", "cuda:0").
func NewTensor(data []float32, shape []int64, device string) (*Tensor, error) {
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

// Shape is the tensor's shape.
func (t *Tensor) Shape() []int64 { return t.shape }

// Close frees the tensor; it is idempotent.
func (t *Tensor) Close() {
	if t == nil || t.c == nil {
		return
	}
	t.cleanup.Stop()
	C.lt_tensor_free(t.c)
	t.c = nil
}

func (t *Tensor) ptr() *C.lt_tensor {
	if t == nil {
		return nil
	}
	return t.c
}

// Model is a network built on the C++ side from a Spec.
type Model struct {
	c          *C.lt_model
	spec       Spec
	featureDim int
	cleanup    runtime.Cleanup
}

// NewModel builds and initialises the architecture of spec on device.
// Initialisation draws from libtorch's generator: seed it with ManualSeed.
func NewModel(spec Spec, device string) (*Model, error) {
	var s C.lt_spec
	s.kind = C.int32_t(spec.Kind)
	s.in_c, s.in_h, s.in_w = C.int32_t(spec.InC), C.int32_t(spec.InH), C.int32_t(spec.InW)
	s.num_classes = C.int32_t(spec.NumClasses)
	if len(spec.Hidden) > len(s.hidden) || len(spec.Layers) > len(s.layers) {
		return nil, fmt.Errorf("torch: new model: at most %d hidden sizes and %d stages", len(s.hidden), len(s.layers))
	}
	for i, h := range spec.Hidden {
		s.hidden[i] = C.int32_t(h)
	}
	s.n_hidden = C.int32_t(len(spec.Hidden))
	for i, l := range spec.Layers {
		s.layers[i] = C.int32_t(l)
	}
	s.n_layers = C.int32_t(len(spec.Layers))
	if spec.Bottleneck {
		s.bottleneck = 1
	}
	if spec.CIFARStem {
		s.cifar_stem = 1
	}
	s.width = C.int32_t(spec.Width)
	s.depth, s.widen = C.int32_t(spec.Depth), C.int32_t(spec.Widen)
	s.dropout = C.float(spec.Dropout)
	if spec.NoBN {
		s.no_bn = 1
	}
	dev, free := cstr(device)
	defer free()
	var cerr *C.char
	c := C.lt_model_new(&s, dev, &cerr)
	if c == nil {
		return nil, errOf("new model", cerr)
	}
	m := &Model{c: c, spec: spec, featureDim: int(C.lt_model_feature_dim(c))}
	m.cleanup = runtime.AddCleanup(m, func(c *C.lt_model) { C.lt_model_free(c) }, c)
	return m, nil
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

// Spec is the architecture the model was built from.
func (m *Model) Spec() Spec { return m.spec }

// FeatureDim is the width of the penultimate features.
func (m *Model) FeatureDim() int { return m.featureDim }

// NumParams is the number of trainable scalars.
func (m *Model) NumParams() int64 {
	n := int64(C.lt_model_num_params(m.c))
	runtime.KeepAlive(m)
	return n
}

// State copies the model's parameters and buffers (torchvision names).
func (m *Model) State() ([]Named, error) {
	defer runtime.KeepAlive(m)
	return readState("model state", int(C.lt_model_state_count(m.c)),
		func(i C.int32_t, name **C.char, dt *C.int32_t, shape *C.int64_t, nd *C.int32_t, nb *C.int64_t, e **C.char) C.int32_t {
			return C.lt_model_state_info(m.c, i, name, dt, shape, nd, nb, e)
		},
		func(i C.int32_t, dst unsafe.Pointer, nb C.int64_t, e **C.char) C.int32_t {
			return C.lt_model_state_read(m.c, i, dst, nb, e)
		})
}

// LoadState overwrites the model's parameters and buffers; the names, types
// and shapes must match exactly.
func (m *Model) LoadState(state map[string]Named) error {
	defer runtime.KeepAlive(m)
	return writeState("model state", int(C.lt_model_state_count(m.c)), state,
		func(i C.int32_t, name **C.char, dt *C.int32_t, shape *C.int64_t, nd *C.int32_t, nb *C.int64_t, e **C.char) C.int32_t {
			return C.lt_model_state_info(m.c, i, name, dt, shape, nd, nb, e)
		},
		func(i C.int32_t, src unsafe.Pointer, nb C.int64_t, e **C.char) C.int32_t {
			return C.lt_model_state_write(m.c, i, src, nb, e)
		})
}

type infoFn func(C.int32_t, **C.char, *C.int32_t, *C.int64_t, *C.int32_t, *C.int64_t, **C.char) C.int32_t
type dataFn func(C.int32_t, unsafe.Pointer, C.int64_t, **C.char) C.int32_t

func info(op string, i int, fn infoFn) (Named, error) {
	var (
		name  *C.char
		dt    C.int32_t
		shape [8]C.int64_t
		nd    C.int32_t
		nb    C.int64_t
		cerr  *C.char
	)
	if fn(C.int32_t(i), &name, &dt, &shape[0], &nd, &nb, &cerr) != 0 {
		return Named{}, errOf(op, cerr)
	}
	n := Named{Name: C.GoString(name), DType: DType(dt), Shape: make([]int64, int(nd)), Data: make([]byte, int(nb))}
	for d := range n.Shape {
		n.Shape[d] = int64(shape[d])
	}
	return n, nil
}

func readState(op string, count int, inf infoFn, read dataFn) ([]Named, error) {
	out := make([]Named, 0, count)
	for i := range count {
		n, err := info(op, i, inf)
		if err != nil {
			return nil, err
		}
		var cerr *C.char
		var p unsafe.Pointer
		if len(n.Data) > 0 {
			p = unsafe.Pointer(&n.Data[0])
		}
		if read(C.int32_t(i), p, C.int64_t(len(n.Data)), &cerr) != 0 {
			return nil, errOf(op, cerr)
		}
		out = append(out, n)
	}
	return out, nil
}

func writeState(op string, count int, state map[string]Named, inf infoFn, write dataFn) error {
	want := make([]Named, 0, count)
	for i := range count {
		n, err := info(op, i, inf)
		if err != nil {
			return err
		}
		want = append(want, n)
	}
	if err := checkStateMatch(want, state, op); err != nil {
		return err
	}
	for i, w := range want {
		h := state[w.Name]
		if len(h.Data) != len(w.Data) {
			return fmt.Errorf("%s: tensor %q has %d bytes, want %d", op, w.Name, len(h.Data), len(w.Data))
		}
		var p unsafe.Pointer
		if len(h.Data) > 0 {
			p = unsafe.Pointer(&h.Data[0])
		}
		var cerr *C.char
		if write(C.int32_t(i), p, C.int64_t(len(h.Data)), &cerr) != 0 {
			return errOf(op, cerr)
		}
	}
	return nil
}

// Optimizer is SGD with momentum, Nesterov and weight decay over all of a
// model's parameters: the update of torch.optim.SGD with dampening 0.
type Optimizer struct {
	c       *C.lt_optim
	cleanup runtime.Cleanup
}

// NewSGD creates the optimizer of m.
func NewSGD(m *Model, momentum, weightDecay float64, nesterov bool) (*Optimizer, error) {
	var cerr *C.char
	nv := C.int32_t(0)
	if nesterov {
		nv = 1
	}
	c := C.lt_optim_new(m.c, C.double(momentum), C.double(weightDecay), nv, &cerr)
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
	defer runtime.KeepAlive(o)
	return readState("optimizer state", int(C.lt_optim_state_count(o.c)),
		func(i C.int32_t, name **C.char, dt *C.int32_t, shape *C.int64_t, nd *C.int32_t, nb *C.int64_t, e **C.char) C.int32_t {
			return C.lt_optim_state_info(o.c, i, name, dt, shape, nd, nb, e)
		},
		func(i C.int32_t, dst unsafe.Pointer, nb C.int64_t, e **C.char) C.int32_t {
			return C.lt_optim_state_read(o.c, i, dst, nb, e)
		})
}

// LoadState overwrites the momentum buffers.
func (o *Optimizer) LoadState(state map[string]Named) error {
	defer runtime.KeepAlive(o)
	return writeState("optimizer state", int(C.lt_optim_state_count(o.c)), state,
		func(i C.int32_t, name **C.char, dt *C.int32_t, shape *C.int64_t, nd *C.int32_t, nb *C.int64_t, e **C.char) C.int32_t {
			return C.lt_optim_state_info(o.c, i, name, dt, shape, nd, nb, e)
		},
		func(i C.int32_t, src unsafe.Pointer, nb C.int64_t, e **C.char) C.int32_t {
			return C.lt_optim_state_write(o.c, i, src, nb, e)
		})
}

// Step is the input of one training step.
type Step struct {
	Models  []*Model     // K ≥ 1 peers trained together
	Optims  []*Optimizer // one per peer
	Teacher *Model       // frozen teacher, needed when Coefs.KD != 0
	X       []float32    // N×C×H×W
	N       int
	C, H, W int
	Y       []int64   // N labels
	Targets *Tensor   // C×C target matrix, nil for one-hot
	Weights []float32 // N per-example weights, nil for uniform
	Coefs   Coefs
	LR      float64
	// Group, when set, makes the step data-parallel: X holds this rank's
	// slice of a global batch (N may be 0), the gradients are summed over
	// the ranks between the backward pass and the update, and the
	// StepResult is the global batch's (see lt_train_step_pg in shim.h).
	Group *Group
}

// TrainStep runs forward, loss, backward and an SGD step of every peer in
// one crossing into libtorch.
func TrainStep(s *Step) (StepResult, error) {
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
	for i := range k {
		ms[i], os[i] = s.Models[i].c, s.Optims[i].c
	}
	var teacher *C.lt_model
	if s.Teacher != nil {
		teacher = s.Teacher.c
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
		var n C.int64_t
		rc = C.lt_train_step_pg(s.Group.c, &ms[0], &os[0], C.int32_t(k), teacher,
			x, C.int64_t(s.N), C.int64_t(s.C), C.int64_t(s.H), C.int64_t(s.W),
			y, s.Targets.ptr(), w, coefs(s.Coefs), C.double(s.LR),
			(*C.float)(&res.Loss[0]), (*C.int64_t)(&res.Correct[0]), &n, &cerr)
		res.N = int64(n)
		runtime.KeepAlive(s.Group)
	} else {
		rc = C.lt_train_step(&ms[0], &os[0], C.int32_t(k), teacher,
			x, C.int64_t(s.N), C.int64_t(s.C), C.int64_t(s.H), C.int64_t(s.W),
			y, s.Targets.ptr(), w, coefs(s.Coefs), C.double(s.LR),
			(*C.float)(&res.Loss[0]), (*C.int64_t)(&res.Correct[0]), &cerr)
	}
	runtime.KeepAlive(s)
	for i := range k {
		runtime.KeepAlive(s.Models[i])
		runtime.KeepAlive(s.Optims[i])
	}
	if rc != 0 {
		return StepResult{}, errOf("train step", cerr)
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
		r.Features = make([]float32, n*m.featureDim)
		fp = (*C.float)(&r.Features[0])
	}
	var cerr *C.char
	rc := C.lt_eval(m.c, (*C.float)(&x[0]), C.int64_t(n), C.int64_t(c), C.int64_t(h), C.int64_t(w), yp,
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

// Loss computes the training loss of TrainStep (one model, no peers) for the
// given n×c logits, and its gradient with respect to the logits.
func Loss(logits []float32, n, c int, y []int64, targets *Tensor, weights []float32, co Coefs, teacherLogits []float32) (float32, []float32, error) {
	if len(logits) != n*c || len(y) != n || (weights != nil && len(weights) != n) || (teacherLogits != nil && len(teacherLogits) != n*c) {
		return 0, nil, fmt.Errorf("torch: loss: inconsistent sizes for %d×%d logits", n, c)
	}
	grad := make([]float32, n*c)
	var w, tl *C.float
	if weights != nil {
		w = (*C.float)(&weights[0])
	}
	if teacherLogits != nil {
		tl = (*C.float)(&teacherLogits[0])
	}
	var loss C.float
	var cerr *C.char
	rc := C.lt_loss((*C.float)(&logits[0]), C.int64_t(n), C.int64_t(c), (*C.int64_t)(&y[0]), targets.ptr(), w,
		coefs(co), tl, &loss, (*C.float)(&grad[0]), &cerr)
	runtime.KeepAlive(logits)
	runtime.KeepAlive(y)
	runtime.KeepAlive(weights)
	runtime.KeepAlive(teacherLogits)
	runtime.KeepAlive(targets)
	if rc != 0 {
		return 0, nil, errOf("loss", cerr)
	}
	return float32(loss), grad, nil
}

// CrossEntropy is torch.nn.functional.cross_entropy (mean over the batch):
// the reference the one-hot loss is checked against.
func CrossEntropy(logits []float32, n, c int, y []int64) (float32, error) {
	if len(logits) != n*c || len(y) != n {
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
