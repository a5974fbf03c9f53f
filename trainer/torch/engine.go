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

// Engine feeds batches to training steps and evaluations on one device (see
// EngineOptions). Put stages a batch: it is copied into pinned host memory
// and, on CUDA, sent to the device on a side stream without waiting, so the
// next batch travels while the current step runs. Train and Eval consume
// the oldest staged batch (at most two are staged). Train does not wait for
// the device (except for the fp16 skip decision, as PyTorch's GradScaler);
// the loss and top-1 hits accumulate on the device until Metrics reads them.
// An Engine is not safe for concurrent use.
type Engine struct {
	c       *C.lt_engine
	device  string
	staged  []int // batch sizes, oldest first
	cleanup runtime.Cleanup
}

// NewEngine creates an engine on device ("cpu", "cuda", "cuda:1").
func NewEngine(device string, o EngineOptions) (*Engine, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	var co C.lt_engine_opts
	co.precision = C.int32_t(o.Precision)
	if o.ChannelsLast {
		co.channels_last = 1
	}
	co.norm_channels = C.int32_t(len(o.Mean))
	for i := range o.Mean {
		co.mean[i], co.std[i] = C.float(o.Mean[i]), C.float(o.Std[i])
	}
	dev, free := cstr(device)
	defer free()
	var cerr *C.char
	c := C.lt_engine_new(dev, &co, &cerr)
	if c == nil {
		return nil, errOf("new engine", cerr)
	}
	e := &Engine{c: c, device: device}
	e.cleanup = runtime.AddCleanup(e, func(c *C.lt_engine) { C.lt_engine_free(c) }, c)
	return e, nil
}

// Close frees the engine and what it has staged; it is idempotent.
func (e *Engine) Close() {
	if e == nil || e.c == nil {
		return
	}
	e.cleanup.Stop()
	C.lt_engine_free(e.c)
	e.c = nil
}

func (e *Engine) handle(op string) (*C.lt_engine, error) {
	if e == nil || e.c == nil {
		return nil, closedErr(op, "engine")
	}
	return e.c, nil
}

// Put stages a batch (see Input).
func (e *Engine) Put(in Input) error {
	c, err := e.handle("stage batch")
	if err != nil {
		return err
	}
	if err := in.check(); err != nil {
		return err
	}
	var x unsafe.Pointer
	dtype := C.int32_t(0)
	switch {
	case in.X8 != nil:
		dtype = 5
		if in.N > 0 {
			x = unsafe.Pointer(&in.X8[0])
		}
	case in.N > 0:
		x = unsafe.Pointer(&in.X[0])
	}
	var y *C.int64_t
	if in.N > 0 {
		y = (*C.int64_t)(&in.Y[0])
	}
	var w *C.float
	if in.Weights != nil {
		w = (*C.float)(unsafe.Pointer(unsafe.SliceData(in.Weights)))
	}
	var cerr *C.char
	rc := C.lt_engine_put(c, x, dtype, C.int64_t(in.N), C.int64_t(in.C), C.int64_t(in.H), C.int64_t(in.W), y, w, &cerr)
	runtime.KeepAlive(in.X)
	runtime.KeepAlive(in.X8)
	runtime.KeepAlive(in.Y)
	runtime.KeepAlive(in.Weights)
	if rc != 0 {
		return errOf("stage batch", cerr)
	}
	e.staged = append(e.staged, in.N)
	return nil
}

// Staged is the number of batches staged and not yet consumed.
func (e *Engine) Staged() int { return len(e.staged) }

// Train runs a training step of s.Models on the oldest staged batch (s.X,
// s.Y, s.Weights and the shape are not used: the batch is the staged one).
// lossScale > 0 multiplies the loss before the backward pass, divides the
// gradients by it and skips the update of every peer whose gradients are
// not finite; skipped counts those peers.
func (e *Engine) Train(s *Step, lossScale float64) (skipped int, err error) {
	const op = "train step"
	c, err := e.handle(op)
	if err != nil {
		return 0, err
	}
	if len(e.staged) == 0 {
		return 0, fmt.Errorf("torch: train step: no staged batch")
	}
	k := len(s.Models)
	if k == 0 || len(s.Optims) != k {
		return 0, fmt.Errorf("torch: train step: %d models and %d optimizers", k, len(s.Optims))
	}
	ms := make([]*C.lt_model, k)
	os := make([]*C.lt_optim, k)
	for i := range k {
		if ms[i], err = s.Models[i].handle(op); err != nil {
			return 0, err
		}
		if os[i], err = s.Optims[i].handle(op); err != nil {
			return 0, err
		}
	}
	var teacher *C.lt_model
	if s.Teacher != nil {
		if teacher, err = s.Teacher.handle(op); err != nil {
			return 0, err
		}
	}
	targets, err := s.Targets.ptr(op)
	if err != nil {
		return 0, err
	}
	var g *C.lt_pg
	if s.Group != nil {
		if g, err = s.Group.acquire(op); err != nil {
			return 0, err
		}
		defer s.Group.release()
	}
	var found C.int32_t
	var cerr *C.char
	rc := C.lt_engine_train(c, g, &ms[0], &os[0], C.int32_t(k), teacher, targets, coefs(s.Coefs),
		C.double(s.LR), C.double(lossScale), &found, &cerr)
	e.staged = e.staged[1:]
	runtime.KeepAlive(s)
	for i := range k {
		runtime.KeepAlive(s.Models[i])
		runtime.KeepAlive(s.Optims[i])
	}
	runtime.KeepAlive(s.Teacher)
	runtime.KeepAlive(s.Group)
	if rc != 0 {
		return 0, errOf(op, cerr)
	}
	return int(found), nil
}

// Metrics reads and resets the sums of the steps since the last call, for k
// peers. It waits for the device.
func (e *Engine) Metrics(k int) (EngineMetrics, error) {
	c, err := e.handle("metrics")
	if err != nil {
		return EngineMetrics{}, err
	}
	m := EngineMetrics{LossSum: make([]float64, max(k, 1)), Correct: make([]int64, max(k, 1))}
	var n C.int64_t
	var cerr *C.char
	if C.lt_engine_metrics(c, C.int32_t(k), (*C.double)(&m.LossSum[0]), (*C.int64_t)(&m.Correct[0]), &n, &cerr) != 0 {
		return EngineMetrics{}, errOf("metrics", cerr)
	}
	m.LossSum, m.Correct, m.N = m.LossSum[:k], m.Correct[:k], int64(n)
	return m, nil
}

// Eval evaluates m (evaluation mode, no gradients, the engine's precision)
// on the oldest staged batch: top-1/top-5 hits and summed cross-entropy
// against its labels, and the logits and features when asked for.
func (e *Engine) Eval(m *Model, logits, features bool) (EvalResult, error) {
	c, err := e.handle("eval")
	if err != nil {
		return EvalResult{}, err
	}
	mc, err := m.handle("eval")
	if err != nil {
		return EvalResult{}, err
	}
	if len(e.staged) == 0 {
		return EvalResult{}, fmt.Errorf("torch: eval: no staged batch")
	}
	n := e.staged[0]
	var r EvalResult
	var top1, top5 C.int64_t
	var loss C.double
	var lp, fp *C.float
	if logits && n > 0 {
		r.Logits = make([]float32, n*m.spec.NumClasses)
		lp = (*C.float)(&r.Logits[0])
	}
	if features && n > 0 {
		r.Features = make([]float32, n*m.featureDim)
		fp = (*C.float)(&r.Features[0])
	}
	var cerr *C.char
	rc := C.lt_engine_eval(c, mc, &top1, &top5, &loss, lp, fp, &cerr)
	e.staged = e.staged[1:]
	runtime.KeepAlive(m)
	if rc != 0 {
		return EvalResult{}, errOf("eval", cerr)
	}
	r.Top1, r.Top5, r.LossSum = int64(top1), int64(top5), float64(loss)
	return r, nil
}

// ChannelsLast converts the model's 4-d parameters and buffers to the
// channels-last memory format. Call it before NewSGD (the momentum buffers
// follow the parameters' format); State and LoadState still use NCHW order.
func (m *Model) ChannelsLast() error {
	mc, err := m.handle("channels last")
	if err != nil {
		return err
	}
	var cerr *C.char
	rc := C.lt_model_channels_last(mc, &cerr)
	runtime.KeepAlive(m)
	if rc != 0 {
		return errOf("channels last", cerr)
	}
	return nil
}

// SetCUDAFlags sets cuDNN's benchmark mode (autotuned convolution
// algorithms) and whether float32 matmuls and convolutions may use TF32
// (torch.backends.cudnn.benchmark, torch.backends.cuda.matmul.allow_tf32,
// torch.backends.cudnn.allow_tf32). No effect on the CPU.
func SetCUDAFlags(cudnnBenchmark, tf32 bool) error {
	if err := Check(); err != nil {
		return err
	}
	var b, t C.int32_t
	if cudnnBenchmark {
		b = 1
	}
	if tf32 {
		t = 1
	}
	var cerr *C.char
	if C.lt_set_cuda_flags(b, t, &cerr) != 0 {
		return errOf("cuda flags", cerr)
	}
	return nil
}

// Synchronize waits for the work queued on device.
func Synchronize(device string) error {
	if err := Check(); err != nil {
		return err
	}
	dev, free := cstr(device)
	defer free()
	var cerr *C.char
	if C.lt_synchronize(dev, &cerr) != 0 {
		return errOf("synchronize", cerr)
	}
	return nil
}

// DeviceMemory returns the peak bytes allocated and reserved by the
// device's caching allocator (-1 when the build cannot tell: the CPU, or a
// libtorch older than the device-allocator API); reset starts new peaks.
func DeviceMemory(device string, reset bool) (allocated, reserved int64, err error) {
	if err := Check(); err != nil {
		return 0, 0, err
	}
	dev, free := cstr(device)
	defer free()
	var a, r C.int64_t
	var rs C.int32_t
	if reset {
		rs = 1
	}
	var cerr *C.char
	if C.lt_device_memory(dev, rs, &a, &r, &cerr) != 0 {
		return 0, 0, errOf("device memory", cerr)
	}
	return int64(a), int64(r), nil
}

// HasDist reports whether the shim was built with its c10d part (data
// parallelism) and at least one backend; build-shim.sh leaves the part out
// when it does not compile.
func HasDist() bool { return len(DistBackends()) > 0 }

// DistBackends lists the data-parallel backends this build has: "gloo"
// where its libtorch came with Gloo's headers (Debian's libgloo-dev; pip
// wheels have none), "nccl" in CUDA builds compiled with NCCL's header.
func DistBackends() []string {
	if Check() != nil {
		return nil
	}
	b := C.lt_has_dist()
	var out []string
	if b&C.LT_DIST_GLOO != 0 {
		out = append(out, "gloo")
	}
	if b&C.LT_DIST_NCCL != 0 {
		out = append(out, "nccl")
	}
	return out
}
