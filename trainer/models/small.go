package models

import (
	"errors"
	"fmt"

	"github.com/lcl-project/lcl/trainer/torch"
)

// MLP flattens the input through Linear+ReLU(+dropout) layers fc1..fcN into the head fc.
type MLP struct {
	Hidden  []int
	Dropout float64
}

// Build returns the MLP's trees.
func (c MLP) Build(in Input) (torch.Spec, error) {
	nodes := []torch.Node{torch.Flatten()}
	w := in.C * in.H * in.W
	for i, h := range c.Hidden {
		nodes = append(nodes, torch.Linear(fmt.Sprintf("fc%d", i+1), w, h), torch.ReLU())
		if c.Dropout > 0 {
			nodes = append(nodes, torch.Dropout(c.Dropout))
		}
		w = h
	}
	return torch.Spec{Features: torch.Seq("", nodes...), Head: head("fc", w, in.NumClasses, 0, torch.InitDefault)}, nil
}

// CNN is the small CNN: conv3×3-BN-ReLU-maxpool2 stages conv1/bn1.. (with
// NoBN: conv3×3 with a bias and no BN, so data-parallel replicas compute
// exactly what one process does), then fc1 with ReLU and dropout, head fc.
type CNN struct {
	Channels []int
	FC       int
	Dropout  float64
	NoBN     bool
}

// Build returns the CNN's trees.
func (c CNN) Build(in Input) (torch.Spec, error) {
	if len(c.Channels) == 0 {
		return torch.Spec{}, fmt.Errorf("the CNN needs at least one conv stage")
	}
	if in.H>>len(c.Channels) == 0 || in.W>>len(c.Channels) == 0 {
		return torch.Spec{}, fmt.Errorf("%d pooling stages do not fit a %d×%d input", len(c.Channels), in.H, in.W)
	}
	var nodes []torch.Node
	ch, h, w := in.C, in.H, in.W
	for i, out := range c.Channels {
		conv := torch.Conv(fmt.Sprintf("conv%d", i+1), ch, out, 3, 1)
		conv.Bias = c.NoBN
		nodes = append(nodes, conv)
		if !c.NoBN {
			nodes = append(nodes, torch.BN(fmt.Sprintf("bn%d", i+1), out))
		}
		nodes = append(nodes, torch.ReLU(), torch.MaxPool(2, 2, 0))
		ch, h, w = out, h/2, w/2
	}
	nodes = append(nodes, torch.Flatten(), torch.Linear("fc1", ch*h*w, c.FC), torch.ReLU())
	if c.Dropout > 0 {
		nodes = append(nodes, torch.Dropout(c.Dropout))
	}
	return torch.Spec{Features: torch.Seq("", nodes...), Head: head("fc", c.FC, in.NumClasses, 0, torch.InitDefault)}, nil
}

// registerSmall registers the small networks, trained by default with the
// (Fashion-)MNIST protocol.
func registerSmall(r *Registry) error {
	return errors.Join(
		r.Register(Model{Name: "mlp", Doc: "multi-layer perceptron (flatten, Linear+ReLU layers fc1.., fc)",
			Options: []string{"hidden", "dropout"}, Reference: fmnist, Preset: "fmnist-cnn", Build: buildMLP}),
		r.Register(Model{Name: "cnn", Doc: "small CNN: conv3x3-BN-ReLU-maxpool stages conv1.., fc1, fc",
			Options: []string{"channels", "fc", "dropout", "bn"}, Reference: fmnist, Preset: "fmnist-cnn", Build: buildCNN}))
}

func buildMLP(in Input, o Options) (torch.Spec, error) {
	h, err := o.ints("hidden", []int{256, 128})
	if err != nil {
		return torch.Spec{}, err
	}
	d, err := o.float("dropout", 0)
	if err != nil {
		return torch.Spec{}, err
	}
	return MLP{Hidden: h, Dropout: d}.Build(in)
}

func buildCNN(in Input, o Options) (torch.Spec, error) {
	ch, err := o.ints("channels", []int{32, 64})
	if err != nil {
		return torch.Spec{}, err
	}
	fc, err := o.int("fc", 128)
	if err != nil {
		return torch.Spec{}, err
	}
	d, err := o.float("dropout", 0)
	if err != nil {
		return torch.Spec{}, err
	}
	bn, err := o.bool("bn", true, "1 (batch norm, the default) or 0 (none)")
	if err != nil {
		return torch.Spec{}, err
	}
	return CNN{Channels: ch, FC: fc, Dropout: d, NoBN: !bn}.Build(in)
}
