package torch

import (
	"fmt"
	"strings"

	"golang.org/x/sys/cpu"
)

// Precision is the floating-point type the forward passes run in (autocast);
// parameters, gradients, optimizer state, checkpoints and the loss stay
// float32.
type Precision int32

const (
	FP32 Precision = iota // no autocast
	BF16                  // bfloat16 autocast (CPU and CUDA)
	FP16                  // float16 autocast with dynamic loss scaling (CUDA)
)

var precisionNames = [...]string{"fp32", "bf16", "fp16"}

func (p Precision) String() string { return enumName(precisionNames[:], p, "Precision") }

// ParsePrecision parses fp32, bf16 or fp16 (in any case).
func ParsePrecision(s string) (Precision, error) {
	if i := enumIndex(precisionNames[:], s, strings.EqualFold); i >= 0 {
		return Precision(i), nil
	}
	return 0, fmt.Errorf("precision %q: want fp32, bf16 or fp16", s)
}

// EngineOptions configure an Engine.
type EngineOptions struct {
	Precision    Precision
	ChannelsLast bool // inputs in the channels-last memory format
	// Mean and Std (one per channel, at most 4) normalise uint8 batches on
	// the device: x' = (x/255 − Mean[c]) / Std[c]. Empty when only float32
	// batches are staged.
	Mean, Std []float32
}

func (o EngineOptions) check() error {
	if o.Precision < FP32 || o.Precision > FP16 {
		return fmt.Errorf("torch: engine: unknown precision %d", o.Precision)
	}
	if len(o.Mean) != len(o.Std) || len(o.Mean) > 4 {
		return fmt.Errorf("torch: engine: %d means and %d stds (want equal counts, at most 4)", len(o.Mean), len(o.Std))
	}
	for _, s := range o.Std {
		if !(s > 0) {
			return fmt.Errorf("torch: engine: std %v: want positive", o.Std)
		}
	}
	return nil
}

// Input is a batch for Engine.Put: N examples of C×H×W in X (float32,
// normalised) or X8 (uint8 pixels, normalised on the device with the
// engine's Mean and Std), labels Y (nil: none, for an evaluation without
// figures, e.g. features; a training step needs them) and optional
// per-example Weights (training steps). N may be 0 (a data-parallel rank's
// empty slice).
type Input struct {
	N, C, H, W int
	X          []float32
	X8         []uint8
	Y          []int64
	Weights    []float32
}

func (in *Input) check() error {
	size := in.N * in.C * in.H * in.W
	ok := in.N >= 0 && in.C > 0 && in.H > 0 && in.W > 0 && (in.Y == nil || len(in.Y) == in.N)
	if in.X8 != nil {
		ok = ok && in.X == nil && len(in.X8) == size
	} else {
		ok = ok && len(in.X) == size
	}
	if !ok {
		return fmt.Errorf("torch: stage batch: %d float32 and %d uint8 values, %d labels for a batch of %d×%d×%d×%d",
			len(in.X), len(in.X8), len(in.Y), in.N, in.C, in.H, in.W)
	}
	if in.Weights != nil && len(in.Weights) != in.N {
		return fmt.Errorf("torch: stage batch: %d weights for a batch of %d", len(in.Weights), in.N)
	}
	return nil
}

// EngineMetrics are the sums of the training steps since the last read:
// per peer the batch loss times the examples, and the top-1 hits on the
// training batches; N the examples (of the global batches with a Group).
type EngineMetrics struct {
	LossSum []float64
	Correct []int64
	N       int64
}

// AutoPrecision is what `--precision auto` resolves to on device: bf16
// where the hardware computes in bf16 — a CUDA device, or a CPU with
// AMX-BF16 or AVX512-BF16 units (Intel Xeon from Cooper Lake and Sapphire
// Rapids on, AMD Zen 4 on) — else fp32, since libtorch emulates bf16 on
// other CPUs, slower than fp32. why names the reason, for the line lcl
// prints. On the demo's protocol bf16 kept the accuracy of fp32 within the
// seeds' spread and trained 1.5× faster on an AMX CPU (docs/trainer.md).
func AutoPrecision(device string) (p Precision, why string) {
	if strings.HasPrefix(device, "cuda") {
		return BF16, "a CUDA device"
	}
	switch {
	case cpu.X86.HasAMXBF16:
		return BF16, "this CPU has AMX-BF16"
	case cpu.X86.HasAVX512BF16:
		return BF16, "this CPU has AVX512-BF16"
	}
	return FP32, "this CPU has no bf16 units (AMX-BF16, AVX512-BF16)"
}
