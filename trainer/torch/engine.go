//go:build cgo

package torch

// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// The engine section of shim.h (engine.hpp, step.hpp, loss.hpp).

// Engine runs every training step and evaluation on one device (see
// EngineOptions). Put stages a batch (an Input): it is copied into pinned
// host memory and, on CUDA, sent to the device on a side stream without
// waiting, so the next batch travels while the current step runs. Train
// and Eval consume the oldest staged batch (at most two are staged). Train
// does not wait for the device (except for the fp16 skip decision, as
// PyTorch's GradScaler, and a Group's collectives); the loss and top-1 hits
// accumulate on the device until Metrics reads them. A training step costs
// one cgo crossing for Put and one for Train. An Engine is not safe for
// concurrent use.
type Engine struct {
	c       *C.lt_engine
	device  string
	staged  []int // batch sizes, oldest first
	cleanup runtime.Cleanup
}

// NewEngine creates an engine on device ("cpu", "cuda", "cuda:1").
func NewEngine(device string, o EngineOptions) (*Engine, error) {
	const op = "new engine"
	if err := Check(); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	var co C.lt_engine_opts
	co.precision = C.int32_t(o.Precision)
	co.channels_last = cbool(o.ChannelsLast)
	co.norm_channels = C.int32_t(len(o.Mean))
	for i := range o.Mean {
		co.mean[i], co.std[i] = C.float(o.Mean[i]), C.float(o.Std[i])
	}
	dev, free := cstr(device)
	defer free()
	c, err := create(op, func(e **C.char) *C.lt_engine { return C.lt_engine_new(dev, &co, e) })
	if err != nil {
		return nil, err
	}
	e := &Engine{c: c, device: device}
	e.cleanup = runtime.AddCleanup(e, freeEngine, c)
	return e, nil
}

func freeEngine(c *C.lt_engine) { C.lt_engine_free(c) }

// Close frees the engine and what it has staged; it is idempotent.
func (e *Engine) Close() {
	if e != nil {
		release(&e.c, &e.cleanup, freeEngine)
	}
}

func (e *Engine) handle(op string) (*C.lt_engine, error) {
	if e == nil || e.c == nil {
		return nil, closedErr(op, "engine")
	}
	return e.c, nil
}

// Put stages a batch (see Input).
func (e *Engine) Put(in Input) error {
	const op = "stage batch"
	c, err := e.handle(op)
	if err != nil {
		return err
	}
	if err := in.check(); err != nil {
		return err
	}
	x, dtype := unsafe.Pointer(unsafe.SliceData(in.X)), C.int32_t(C.LT_DTYPE_F32)
	if in.X8 != nil {
		x, dtype = unsafe.Pointer(unsafe.SliceData(in.X8)), C.LT_DTYPE_U8
	}
	if in.N == 0 {
		x = nil
	}
	var y *C.int64_t
	if in.N > 0 && in.Y != nil {
		y = (*C.int64_t)(&in.Y[0])
	}
	w := (*C.float)(unsafe.SliceData(in.Weights))
	err = call(op, func(er **C.char) C.int32_t {
		return C.lt_engine_put(c, x, dtype, C.int64_t(in.N), C.int64_t(in.C), C.int64_t(in.H), C.int64_t(in.W), y, w, er)
	}, e, in.X, in.X8, in.Y, in.Weights)
	if err != nil {
		return err
	}
	e.staged = append(e.staged, in.N)
	return nil
}

// next consumes the oldest staged batch (the C call that uses it consumes
// it whatever its outcome) and returns its size.
func (e *Engine) next(op string) (int, error) {
	if len(e.staged) == 0 {
		return 0, fmt.Errorf("torch: %s: no staged batch", op)
	}
	n := e.staged[0]
	e.staged = e.staged[1:]
	return n, nil
}

// Train runs the training step s on the oldest staged batch, which must
// have labels. lossScale > 0 multiplies the loss before the backward pass,
// divides the gradients by it and skips the update of every peer whose
// gradients are not finite; skipped counts those peers.
func (e *Engine) Train(s *Step, lossScale float64) (skipped int, err error) {
	const op = "train step"
	c, err := e.handle(op)
	if err != nil {
		return 0, err
	}
	k := len(s.Models)
	if k == 0 || len(s.Optims) != k {
		return 0, fmt.Errorf("torch: %s: %d models and %d optimizers", op, k, len(s.Optims))
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
	var groups *C.lt_groups
	if gs := s.Groups; gs != nil {
		groups = &C.lt_groups{}
		if groups.members, err = gs.Members.ptr(op); err != nil {
			return 0, err
		}
		if groups.weights, err = gs.Weights.ptr(op); err != nil {
			return 0, err
		}
	}
	var g *C.lt_pg
	if s.Group != nil {
		if g, err = s.Group.acquire(op); err != nil {
			return 0, err
		}
		defer s.Group.release()
	}
	coefs := cCoefs(s.Coefs)
	var mix *C.lt_mix
	if m := s.Mix; m != nil {
		mix = &C.lt_mix{lam: C.double(m.Lam), y0: C.int32_t(m.Y0), y1: C.int32_t(m.Y1), x0: C.int32_t(m.X0), x1: C.int32_t(m.X1)}
	}
	if _, err := e.next(op); err != nil {
		return 0, err
	}
	var found C.int32_t
	err = call(op, func(er **C.char) C.int32_t {
		return C.lt_engine_train(c, g, &ms[0], &os[0], C.int32_t(k), teacher, targets, coefs, groups, mix, cbool(s.ClassProbs),
			C.double(s.LR), C.double(lossScale), &found, er)
	}, e, s.Models, s.Optims, s.Teacher, s.Targets, s.Groups, s.Group)
	return int(found), err
}

// ClassProbs reads and resets what the steps with Step.ClassProbs summed
// since the last call, for c classes: over the examples peer 0 classified
// correctly, their softmax rows summed by label (c×c row-major, row =
// label) and their number per label. Zeros without such steps. It waits
// for the device.
func (e *Engine) ClassProbs(c int) (sums []float64, counts []int64, err error) {
	const op = "class probabilities"
	h, err := e.handle(op)
	if err != nil {
		return nil, nil, err
	}
	if c < 1 {
		return nil, nil, fmt.Errorf("torch: %s of %d classes", op, c)
	}
	sums, counts = make([]float64, c*c), make([]int64, c)
	err = call(op, func(er **C.char) C.int32_t {
		return C.lt_engine_class_probs(h, C.int64_t(c), (*C.double)(&sums[0]), (*C.int64_t)(&counts[0]), er)
	}, e)
	if err != nil {
		return nil, nil, err
	}
	return sums, counts, nil
}

// Metrics reads and resets the sums of the steps since the last call, for k
// peers. It waits for the device.
func (e *Engine) Metrics(k int) (EngineMetrics, error) {
	const op = "metrics"
	c, err := e.handle(op)
	if err != nil {
		return EngineMetrics{}, err
	}
	m := EngineMetrics{LossSum: make([]float64, max(k, 1)), Correct: make([]int64, max(k, 1))}
	var n C.int64_t
	err = call(op, func(er **C.char) C.int32_t {
		return C.lt_engine_metrics(c, C.int32_t(k), (*C.double)(&m.LossSum[0]), (*C.int64_t)(&m.Correct[0]), &n, er)
	}, e)
	if err != nil {
		return EngineMetrics{}, err
	}
	m.LossSum, m.Correct, m.N = m.LossSum[:k], m.Correct[:k], int64(n)
	return m, nil
}

// Eval evaluates m (evaluation mode, no gradients, the engine's precision
// and memory format) on the oldest staged batch: top-1/top-5 hits and
// summed cross-entropy against its labels (when it has them), and the
// logits and penultimate features when asked for.
func (e *Engine) Eval(m *Model, logits, features bool) (EvalResult, error) {
	return e.EvalWith(m, EvalRequest{Logits: logits, Features: features})
}

// EvalWith is Eval returning what q asks for.
func (e *Engine) EvalWith(m *Model, q EvalRequest) (EvalResult, error) {
	const op = "eval"
	c, err := e.handle(op)
	if err != nil {
		return EvalResult{}, err
	}
	mc, err := m.handle(op)
	if err != nil {
		return EvalResult{}, err
	}
	if q.TopK < 0 || q.TopK > m.spec.NumClasses {
		return EvalResult{}, fmt.Errorf("torch: %s: top-%d of %d classes", op, q.TopK, m.spec.NumClasses)
	}
	if q.Cost != nil && q.TopK == 0 {
		return EvalResult{}, fmt.Errorf("torch: %s: a cost matrix without TopK", op)
	}
	var cost *C.lt_tensor
	if q.Cost != nil {
		if cost, err = q.Cost.ptr(op); err != nil {
			return EvalResult{}, err
		}
	}
	n, err := e.next(op)
	if err != nil {
		return EvalResult{}, err
	}
	var r EvalResult
	var top1, top5 C.int64_t
	var loss C.double
	var lp, fp *C.float
	var kp, rp *C.int32_t
	if q.Logits && n > 0 {
		r.Logits = make([]float32, n*m.spec.NumClasses)
		lp = (*C.float)(&r.Logits[0])
	}
	if q.Features && n > 0 {
		// A TorchScript model without penultimate features has width 0:
		// the C++ side then fails with the reason before writing.
		buf := make([]float32, max(n*m.featureDim, 1))
		r.Features, fp = buf[:n*m.featureDim], (*C.float)(&buf[0])
	}
	if q.TopK > 0 && n > 0 {
		r.TopK = make([]int32, n*q.TopK)
		kp = (*C.int32_t)(&r.TopK[0])
		if cost != nil {
			r.RiskTopK = make([]int32, n*q.TopK)
			rp = (*C.int32_t)(&r.RiskTopK[0])
		}
	}
	err = call(op, func(er **C.char) C.int32_t {
		return C.lt_engine_eval(c, mc, &top1, &top5, &loss, lp, fp, C.int32_t(q.TopK), kp, cost, rp, er)
	}, e, m, q.Cost, r.Logits, r.Features, r.TopK, r.RiskTopK)
	if err != nil {
		return EvalResult{}, err
	}
	r.Top1, r.Top5, r.LossSum = int64(top1), int64(top5), float64(loss)
	return r, nil
}
