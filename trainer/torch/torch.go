// Package torch is lcl's thin binding over libtorch, the C++ core of
// PyTorch. It exposes coarse operations — build a model, stage a batch and
// run a whole training step of several peers or an evaluation on it
// (Engine), read and write parameters and optimizer state (State) — so a
// training step costs a few cgo crossings, not one per tensor operation:
// lcl train makes 3–4 per step (stage the batch, seed libtorch's generator,
// train, and read the metrics every few steps; every step on the CPU), and
// one more per moving average of the weights. The C ABI lives in shim.h;
// every C++ exception becomes an *Error returned by the call that failed.
//
// Values hold C++ memory that Go's GC cannot see: call Close when done.
// Finalizers only back up a forgotten Close; a method called after Close
// returns an error wrapping ErrClosed. Models and optimizers are not safe for
// concurrent use.
//
// With the ltshim build tag the shim is a separately built shared library; a
// library of another ABI version is reported by the first operation (and by
// Check) as an error wrapping ErrABIMismatch, never by a panic at start-up,
// so commands that do not train still run.
package torch

// lazy_gen.c (-tags ltlazy, load_lazy.go) is generated from the shim's headers.
//go:generate go run ./internal/lazygen/gen lazy_gen.c shim.h scriptcheck.h

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/lcl-project/lcl/internal/coefs"
)

// ErrNoLibtorch is returned by every operation of a binary built without cgo.
var ErrNoLibtorch = errors.New("torch: built without cgo: libtorch is not available")

// ErrABIMismatch is wrapped by the error of every operation when the shim
// library (-tags ltshim) was built from another version of lcl.
var ErrABIMismatch = errors.New("shim ABI version mismatch")

// ErrClosed is wrapped by the error of an operation on a closed (or nil)
// Tensor, Model, Optimizer or Group.
var ErrClosed = errors.New("used after Close")

func closedErr(op, what string) error { return fmt.Errorf("torch: %s: %s %w", op, what, ErrClosed) }

// Error is a failure reported by libtorch (a C++ exception).
type Error struct {
	Op  string // the binding's operation, e.g. "train step"
	Msg string // the C++ exception's message
}

func (e *Error) Error() string { return "torch: " + e.Op + ": " + e.Msg }

// AllocStats are the counters of the caching CPU allocator the binding
// installs in libtorch (see allocator.hpp): allocations of cached sizes
// served from a free list (Hits) or from malloc (Misses), and bytes live,
// at their peak, and kept in the free lists.
type AllocStats struct {
	Hits, Misses                      int64
	LiveBytes, PeakBytes, CachedBytes int64
}

// Coefs weighs the terms of the per-example training loss (internal/coefs
// documents them): the one Go form, which a plugin's plan and the trainer's
// use too. The C struct lt_coefs holds the same fields, in float32 and in
// field order (cCoefs; the tests hold shim.h against this struct).
type Coefs = coefs.Coefs

// DType is a tensor element type.
type DType int32

const (
	Float32 DType = iota
	Int64
	Float64
	Float16
	Int32
	Uint8
	BFloat16
)

var dtypeNames = [...]string{"F32", "I64", "F64", "F16", "I32", "U8", "BF16"}

// String returns the safetensors name of the type (F32, I64, ...).
func (d DType) String() string { return enumName(dtypeNames[:], d, "DType") }

// ParseDType parses a safetensors dtype name.
func ParseDType(s string) (DType, error) {
	if i := enumIndex(dtypeNames[:], s, func(a, b string) bool { return a == b }); i >= 0 {
		return DType(i), nil
	}
	return 0, fmt.Errorf("unknown dtype %q", s)
}

// enumName is names[v], or typ(v) for a value outside the table.
func enumName[T ~int32](names []string, v T, typ string) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, int32(v))
}

// enumIndex is the index of the name in names that is s by equal, or -1.
func enumIndex(names []string, s string, equal func(a, b string) bool) int {
	for i, n := range names {
		if equal(s, n) {
			return i
		}
	}
	return -1
}

// Size is the width of one element in bytes.
func (d DType) Size() int {
	switch d {
	case Float32, Int32:
		return 4
	case Int64, Float64:
		return 8
	case Float16, BFloat16:
		return 2
	default:
		return 1
	}
}

// Named is one named tensor of a model's or an optimizer's state, with its
// raw little-endian bytes.
type Named struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte
}

// NumBytes is the size of the tensor's data: its element size times the
// product of its shape.
func (n Named) NumBytes() int64 {
	b := int64(n.DType.Size())
	for _, d := range n.Shape {
		b *= d
	}
	return b
}

// EvalResult is the outcome of evaluating one batch.
type EvalResult struct {
	Top1, Top5 int64
	LossSum    float64   // summed cross-entropy against the labels
	Logits     []float32 // n×classes when asked for
	Features   []float32 // n×FeatureDim when asked for
	// TopK holds each example's EvalRequest.TopK classes of highest
	// logit, highest first (n×k), and RiskTopK its k classes of least
	// conditional risk under EvalRequest.Cost, least first (n×k), when
	// asked for.
	TopK, RiskTopK []int32
}

// EvalRequest says what an evaluation returns besides the figures: the
// logits, the penultimate features, and each example's TopK best classes
// (0: none; at most the class count). With Cost, a C×C float32 tensor on
// the engine's device, it returns the TopK classes of least conditional
// risk Σ_i softmax(z)_i·Cost[i][j] as well (conditional risk
// minimisation, Karthik et al., ICLR 2021), computed on the device.
type EvalRequest struct {
	Logits, Features bool
	TopK             int
	Cost             *Tensor
}

func checkStateMatch(want []Named, have map[string]Named, what string) error {
	if len(have) != len(want) {
		return fmt.Errorf("%s: %d tensors, want %d", what, len(have), len(want))
	}
	for _, w := range want {
		h, ok := have[w.Name]
		if !ok {
			return fmt.Errorf("%s: tensor %q missing", what, w.Name)
		}
		if h.DType != w.DType {
			return fmt.Errorf("%s: tensor %q has dtype %v, want %v", what, w.Name, h.DType, w.DType)
		}
		if fmt.Sprint(h.Shape) != fmt.Sprint(w.Shape) {
			return fmt.Errorf("%s: tensor %q has shape %v, want %v", what, w.Name, h.Shape, w.Shape)
		}
	}
	return nil
}

// Tensor is a float32 tensor held by libtorch (used for target matrices).
type Tensor struct {
	c       tensorHandle // nil once closed
	shape   []int64
	cleanup runtime.Cleanup
}

// Shape is the tensor's shape.
func (t *Tensor) Shape() []int64 { return t.shape }

// Script is a TorchScript module loaded and checked once (LoadScript),
// held on the CPU: NewModel builds each of a run's models from a copy of it
// (Spec.Loaded), so the module trained is the module checked and its file
// is read, and its __setstate__ run, once.
type Script struct {
	c       scriptHandle // nil once closed
	path    string
	cleanup runtime.Cleanup
}

// Path is the file the module was loaded from.
func (s *Script) Path() string { return s.path }

// Model is a network built on the C++ side from a Spec.
type Model struct {
	c          modelHandle // nil once closed
	spec       Spec
	featureDim int
	cleanup    runtime.Cleanup
}

// Spec is the architecture the model was built from.
func (m *Model) Spec() Spec { return m.spec }

// FeatureDim is the width of the penultimate features.
func (m *Model) FeatureDim() int { return m.featureDim }

// Optimizer updates all of a model's parameters at each training step
// with one of the shim's update rules (NewOptimizer). Its State holds what
// the rule keeps per parameter (momentum buffers, mean squares, moments,
// step counts).
type Optimizer struct {
	c       optimHandle // nil once closed
	cleanup runtime.Cleanup
}

// Rule names one of the shim's update rules (optim.hpp's lts::Kind): its
// number and its name there, which the shim checks against each other, so
// a caller's table that has drifted from optim.hpp fails with both named.
// The trainer's optimizer registry (trainer.Optimizers) holds every rule
// with its parameters.
type Rule struct {
	Kind int32
	Name string
}

// State is the named state of a Model (its parameters, then its buffers,
// with torchvision's names) or of an Optimizer (what it keeps per
// parameter: see its rule in optim.hpp), held by libtorch and read
// and written in place: Info lists the tensors, Read copies one out, Copy
// copies all of them, Load overwrites all of them. It refers to its owner:
// after the owner's Close every method returns an error wrapping
// ErrClosed.
type State struct {
	op    string     // "model state" or "optimizer state"
	owner stateOwner // nil in builds without cgo
}

// stateOwner is a Model or an Optimizer: what owns a state table.
type stateOwner interface {
	stateTable(op string) (stateHandle, error)
}

// State is the model's parameters and buffers.
func (m *Model) State() *State { return &State{op: "model state", owner: m} }

// State is the optimizer's per-parameter state.
func (o *Optimizer) State() *State { return &State{op: "optimizer state", owner: o} }

// Groups are the class groups of the group term of a step's loss
// (Coefs.Group): Members is G×C, 1 where class c belongs to group g, else
// 0; Weights is C×G, row y the weight of each group's log-probability for
// an example of class y. A group's probability is the sum of its classes'
// softmax probabilities.
type Groups struct {
	Members, Weights *Tensor
}

// Step is what one training step does with the batch an Engine staged
// (Input): which peers it trains with which optimizers, under which loss,
// at which learning rate (Engine.Train).
type Step struct {
	Models  []*Model     // K ≥ 1 peers trained together
	Optims  []*Optimizer // one per peer
	Teacher *Model       // frozen teacher, needed when Coefs.KD != 0
	Targets *Tensor      // C×C target matrix, nil for one-hot
	Coefs   Coefs
	// Groups are the class groups of the group term, needed when
	// Coefs.Group != 0.
	Groups *Groups
	LR     float64
	// Group, when set, makes the step data-parallel: the staged batch is
	// this rank's slice of a global batch (N may be 0), the gradients are
	// summed over the ranks between the backward pass and the update, and
	// the Engine's metrics are the global batch's (see lt_engine_train in
	// shim.h).
	Group *Group
	// Mix, when set, mixes the batch with itself flipped before the
	// forward passes (mixup, CutMix; see Mix).
	Mix *Mix
	// ClassProbs makes the engine sum peer 0's softmax rows of the
	// examples it classifies correctly, by label (Engine.ClassProbs).
	ClassProbs bool
}

// Mix is one step's mixing (lt_mix in shim.h): example i is mixed with
// example N-1-i, inside the box rows [Y0,Y1) × columns [X0,X1) when it has
// an area (CutMix), else as Lam·x + (1−Lam)·x′ (mixup), and the loss is
// Lam·loss(labels) + (1−Lam)·loss(flipped labels). Lam = 1 mixes nothing.
type Mix struct {
	Lam            float64
	Y0, Y1, X0, X1 int
}

// Group is a c10d process group: the processes (ranks) of one data-parallel
// run. Every rank must make the same calls on its Group in the same order; a
// Group is not safe for concurrent use, except for Abort, which may be
// called from any goroutine at any time, also during or after Close.
type Group struct {
	rank, size int
	mu         sync.Mutex
	c          groupHandle // guarded by mu; nil once closed
	users      int         // guarded by mu: calls in flight that use c
	idle       sync.Cond   // on mu: users dropped to 0
	cleanup    runtime.Cleanup
}

// GroupConfig says how to join a process group.
type GroupConfig struct {
	Backend string // "gloo" (default) or "nccl" (CUDA builds only)
	Addr    string // rank 0's address (MASTER_ADDR)
	Port    int    // rank 0's TCPStore port (MASTER_PORT)
	Rank    int
	Size    int
	// Timeout bounds the rendezvous and every collective: a stalled peer
	// makes the others fail after it (a peer that exited fails them at once).
	Timeout time.Duration
	// Interface is the network interface Gloo binds ("": 127.0.0.1 for a
	// loopback Addr, else the address of this host's name).
	Interface string
	// AgentStore says the launcher already hosts the store at Addr:Port
	// (torchrun sets TORCHELASTIC_USE_AGENT_STORE=True): rank 0 connects to
	// it instead of hosting one.
	AgentStore bool
	// Prefix namespaces the group's keys in the store ("" = "lcl"). Rank 0
	// marks the run under it and then in the key next to it (Prefix up to
	// its last '/', + "/rank0"); a rank that finds that mark but not its
	// own Prefix's is refused at once (launch names Prefix after the run's
	// secret).
	Prefix string
	// Bind is the IP address rank 0's store listens on; "" means every
	// interface (libtorch's own choice). Only rank 0 hosting the store
	// (not AgentStore) uses it.
	Bind string
}

// Rank is this process's rank, 0 ≤ Rank < Size.
func (g *Group) Rank() int { return g.rank }

// Size is the number of ranks.
func (g *Group) Size() int { return g.size }

// generator guards libtorch's default generator, of which a process has
// one: two runs in one process (the ranks of a group in a test, runs side
// by side in a program) must not interleave their seeding and the draws
// that follow it.
var generator sync.Mutex

// Seeded seeds libtorch's default generator (ManualSeed) and runs f, which
// draws from it (models' initialisation), while no other Seeded call of
// this process can reseed it or draw: what f draws depends on seed alone.
func Seeded(seed uint64, f func() error) error {
	generator.Lock()
	defer generator.Unlock()
	if err := ManualSeed(seed); err != nil {
		return err
	}
	return f()
}
