package models

import (
	"fmt"
	"math"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/trainer/torch"
)

// Size is what a network needs in memory, counted from its description
// before libtorch allocates anything.
type Size struct {
	Params int64 // trainable scalars (0 for TorchScript, which only libtorch can count)
	Input  int64 // scalars of one example
	// Activations are the scalars one example's forward pass produces, all
	// nodes together (what a training step keeps for the backward pass);
	// Peak is the largest single output (what evaluation needs at once).
	Activations, Peak int64
}

// Estimate counts s's parameters and activations per example.
func Estimate(s torch.Spec) (Size, error) {
	z := Size{Input: int64(s.InC) * int64(s.InH) * int64(s.InW)}
	if s.Script != "" {
		return z, nil
	}
	z.Params = s.NumParams()
	f, err := z.walk(&s.Features, torch.Shape{C: s.InC, H: s.InH, W: s.InW})
	if err != nil {
		return z, err
	}
	if _, err := z.walk(&s.Head, f); err != nil {
		return z, err
	}
	return z, nil
}

// walk adds the outputs of n and its descendants for input in.
func (z *Size) walk(n *torch.Node, in torch.Shape) (torch.Shape, error) {
	switch n.Op {
	case torch.OpSeq:
		cur := in
		for i := range n.Children {
			out, err := z.walk(&n.Children[i], cur)
			if err != nil {
				return out, err
			}
			cur = out
		}
		return cur, nil
	case torch.OpSum, torch.OpCat, torch.OpMul:
		for i := range n.Children {
			if _, err := z.walk(&n.Children[i], in); err != nil {
				return in, err
			}
		}
	}
	out, err := n.Infer(in)
	if err != nil {
		return out, err
	}
	k := int64(out.C)
	if !out.Vec {
		k *= int64(out.H) * int64(out.W)
	}
	z.Activations += k
	z.Peak = max(z.Peak, k)
	return out, nil
}

// Bytes of float32 scalars, as a float (products of a batch size can pass int64).
func bytes32(n float64) float64 { return 4 * n }

// ParamBytes is what training keeps per parameter: the weights, their
// gradients and the optimizer's state (SGD's momentum; Adam keeps one more).
func (z Size) ParamBytes() float64 { return bytes32(3 * float64(z.Params)) }

// TrainBytes is what one training batch keeps: its input and every
// activation (the backward pass reads them), gradients not counted.
func (z Size) TrainBytes(batch int) float64 {
	return bytes32(float64(batch) * float64(z.Input+z.Activations))
}

// EvalBytes is what one evaluation batch needs at least: its input and
// the largest activation, twice (a layer's input and output).
func (z Size) EvalBytes(batch int) float64 {
	return bytes32(float64(batch) * float64(z.Input+2*z.Peak))
}

// TooLargeError is a model or batch that cannot fit the machine.
type TooLargeError struct {
	Option string // "model" or "batch": which one to change
	Msg    string
}

func (e *TooLargeError) Error() string { return e.Msg }

// CheckFits refuses a model whose parameters, or a batch whose activations
// (training: train true; evaluation otherwise), need more memory than
// available bytes (the machine's: sysmem.Total). The estimates count
// only what certainly is allocated, so what passes may still not fit;
// what fails cannot.
func CheckFits(z Size, batch int, train bool, available int64) error {
	avail := float64(available)
	if pb := z.ParamBytes(); pb > avail {
		return &TooLargeError{Option: "model", Msg: fmt.Sprintf("%s parameters: their weights, gradients and optimizer state need about %s, more than this machine's %s of memory",
			count(float64(z.Params)), human(pb), human(avail))}
	}
	what, need := "a training", z.TrainBytes(batch)
	if !train {
		what, need = "an evaluation", z.EvalBytes(batch)
	}
	if left := avail - z.ParamBytes(); need > left {
		return &TooLargeError{Option: "batch", Msg: fmt.Sprintf("%s batch of %d needs about %s for its inputs and activations (%s scalars per example), more than the %s of memory this machine has left beside the model",
			what, batch, human(need), count(need/4/float64(batch)), human(max(left, 0)))}
	}
	return nil
}

func human(b float64) string {
	if b >= math.MaxInt64 {
		return fmt.Sprintf("%.3g bytes", b)
	}
	return bounded.Bytes(int64(b))
}

func count(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.3g G", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.3g M", n/1e6)
	}
	return fmt.Sprintf("%.0f", n)
}
