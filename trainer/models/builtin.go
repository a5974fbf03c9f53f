package models

import (
	"fmt"
	"strconv"

	"github.com/lcl-project/lcl/trainer/torch"
)

// Builtin returns a registry holding lcl's architectures:
//
//	mlp           hidden=256x128, dropout=0
//	cnn           channels=32x64, fc=128, dropout=0, bn=1 (conv-BN-ReLU-maxpool stages; bn=0: no BN)
//	resnet18/34/50/101  width=64, stem=auto|cifar|imagenet
//	wrn           depth=28, widen=10, dropout=0 (pre-activation Wide ResNet)
//	wrn-28-10     the CIFAR Wide ResNet of Zagoruyko & Komodakis
//
// stem=auto picks the CIFAR stem (3×3 conv, no max-pool) for inputs of at
// most 64 pixels a side and the ImageNet stem (7×7/2 conv, max-pool) above.
func Builtin() *Registry {
	r := &Registry{}
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(r.Register(Model{Name: "mlp", Doc: "multi-layer perceptron (flatten, Linear+ReLU layers fc1.., fc)",
		Options: []string{"hidden", "dropout"}, Build: func(in Input, o Options) (torch.Spec, error) {
			h, err := o.ints("hidden", []int{256, 128})
			if err != nil {
				return torch.Spec{}, err
			}
			d, err := o.float("dropout", 0)
			return torch.Spec{Kind: torch.MLP, Hidden: h, Dropout: d}, err
		}}))
	must(r.Register(Model{Name: "cnn", Doc: "small CNN: conv3x3-BN-ReLU-maxpool stages conv1.., fc1, fc",
		Options: []string{"channels", "fc", "dropout", "bn"}, Build: func(in Input, o Options) (torch.Spec, error) {
			ch, err := o.ints("channels", []int{32, 64})
			if err != nil {
				return torch.Spec{}, err
			}
			if in.H>>len(ch) == 0 || in.W>>len(ch) == 0 {
				return torch.Spec{}, fmt.Errorf("%d pooling stages do not fit a %d×%d input", len(ch), in.H, in.W)
			}
			fc, err := o.int("fc", 128)
			if err != nil {
				return torch.Spec{}, err
			}
			d, err := o.float("dropout", 0)
			if err != nil {
				return torch.Spec{}, err
			}
			bn := true
			if v, ok := o["bn"]; ok {
				if bn, err = strconv.ParseBool(v); err != nil {
					return torch.Spec{}, fmt.Errorf("option bn=%q: want 1 (batch norm, the default) or 0 (none)", v)
				}
			}
			return torch.Spec{Kind: torch.CNN, Hidden: append(ch, fc), Dropout: d, NoBN: !bn}, nil
		}}))
	for _, rn := range []struct {
		name   string
		layers []int
		bneck  bool
	}{
		{"resnet18", []int{2, 2, 2, 2}, false},
		{"resnet34", []int{3, 4, 6, 3}, false},
		{"resnet50", []int{3, 4, 6, 3}, true},
		{"resnet101", []int{3, 4, 23, 3}, true},
	} {
		must(r.Register(Model{Name: rn.name, Doc: fmt.Sprintf("torchvision %s (layers %v)", rn.name, rn.layers),
			Options: []string{"width", "stem"}, Build: func(in Input, o Options) (torch.Spec, error) {
				w, err := o.int("width", 64)
				if err != nil {
					return torch.Spec{}, err
				}
				var cifar bool
				switch o["stem"] {
				case "", "auto":
					cifar = in.H <= 64 && in.W <= 64
				case "cifar":
					cifar = true
				case "imagenet":
				default:
					return torch.Spec{}, fmt.Errorf("option stem=%q: want auto, cifar or imagenet", o["stem"])
				}
				return torch.Spec{Kind: torch.ResNet, Layers: rn.layers, Bottleneck: rn.bneck, Width: w, CIFARStem: cifar}, nil
			}}))
	}
	wrn := func(depth, widen int) Builder {
		return func(in Input, o Options) (torch.Spec, error) {
			d, err := o.int("depth", depth)
			if err != nil {
				return torch.Spec{}, err
			}
			if (d-4)%6 != 0 || d < 10 {
				return torch.Spec{}, fmt.Errorf("depth %d: want 6n+4 ≥ 10", d)
			}
			k, err := o.int("widen", widen)
			if err != nil {
				return torch.Spec{}, err
			}
			p, err := o.float("dropout", 0)
			return torch.Spec{Kind: torch.WRN, Depth: d, Widen: k, Dropout: p}, err
		}
	}
	must(r.Register(Model{Name: "wrn", Doc: "pre-activation Wide ResNet (depth 6n+4, widen k)",
		Options: []string{"depth", "widen", "dropout"}, Build: wrn(28, 10)}))
	must(r.Register(Model{Name: "wrn-28-10", Doc: "Wide ResNet 28-10 for CIFAR",
		Options: []string{"dropout"}, Build: wrn(28, 10)}))
	return r
}
