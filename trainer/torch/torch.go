// Package torch is lcl's thin binding over libtorch, the C++ core of
// PyTorch. It exposes coarse operations — build a model, run a whole training
// step of several peers, evaluate a batch, read and write parameters — so a
// training step costs one cgo crossing. The C ABI lives in shim.h; every C++
// exception becomes an *Error returned by the call that failed.
//
// Values hold C++ memory that Go's GC cannot see: call Close when done.
// Finalizers only back up a forgotten Close. Models and optimizers are not
// safe for concurrent use.
package torch

import (
	"errors"
	"fmt"
)

// ErrNoLibtorch is returned by every operation of a binary built without cgo.
var ErrNoLibtorch = errors.New("torch: built without cgo: libtorch is not available")

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

// Kind selects an architecture family built on the C++ side.
type Kind int32

const (
	MLP Kind = iota
	CNN
	ResNet
	WRN
)

// Spec describes an architecture. Unused fields are ignored by a kind.
type Spec struct {
	Kind          Kind
	InC, InH, InW int // input shape
	NumClasses    int
	Hidden        []int // MLP: hidden widths; CNN: conv channels then the fc width
	Bottleneck    bool  // ResNet: Bottleneck blocks (else BasicBlock)
	Layers        []int // ResNet: blocks per stage
	Width         int   // ResNet: width of the first stage (64)
	CIFARStem     bool  // ResNet: 3x3 stride-1 stem without max-pool
	Depth, Widen  int   // WRN
	Dropout       float32
	NoBN          bool // CNN: no batch norm (conv layers with bias)
}

// Coefs weighs the terms of the per-example training loss:
//
//	Soft·(−Σ_j T_yj log p_j) + Hard·(−log p_y) + KD·τ²·KL(q_τ‖p_τ) + Mutual·mean_peers KL(p_peer‖p)
//
// with p = softmax(logits), T the target matrix row of the label, q_τ and p_τ
// the teacher's and the model's softmax at temperature τ = KDTemp, and each
// peer's prediction treated as a constant. Every term is summed over classes;
// the batch loss is the mean over examples, or Σ w_i l_i / Σ w_i with
// per-example weights.
type Coefs struct {
	Soft, Hard, KD, KDTemp, Mutual float32
}

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
func (d DType) String() string {
	if d >= 0 && int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", int32(d))
}

// ParseDType parses a safetensors dtype name.
func ParseDType(s string) (DType, error) {
	for i, n := range dtypeNames {
		if n == s {
			return DType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown dtype %q", s)
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

// StepResult is what one training step reports per peer.
type StepResult struct {
	Loss    []float32 // batch loss of each peer
	Correct []int64   // top-1 hits of each peer on the (training) batch
	N       int64     // examples of the batch (of the global batch with a Group)
}

// EvalResult is the outcome of evaluating one batch.
type EvalResult struct {
	Top1, Top5 int64
	LossSum    float64   // summed cross-entropy against the labels
	Logits     []float32 // n×classes when asked for
	Features   []float32 // n×FeatureDim when asked for
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
