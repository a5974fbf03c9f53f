package models

import (
	"fmt"
	"strconv"

	"github.com/lcl-project/lcl/trainer/torch"
)

// Reference inputs of published parameter counts.
var (
	imageNet  = Input{C: 3, H: 224, W: 224, NumClasses: 1000}
	imageNet2 = Input{C: 3, H: 299, W: 299, NumClasses: 1000}
	cifar10   = Input{C: 3, H: 32, W: 32, NumClasses: 10}
	cifar100  = Input{C: 3, H: 32, W: 32, NumClasses: 100}
	fmnist    = Input{C: 1, H: 28, W: 28, NumClasses: 10}
)

// Builtin returns a registry holding lcl's architectures: the nine of the
// paper (resnet18/34/50/101, wrn-28-10, resnext101-32x8d, senet154,
// inception-resnet-v2, densenet-bc-190-40), their families with options,
// and the small mlp and cnn. Each is a Go description of its network
// (resnet.go, senet.go, inception.go, densenet.go, small.go).
func Builtin() *Registry {
	r := &Registry{}
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(r.Register(Model{Name: "mlp", Doc: "multi-layer perceptron (flatten, Linear+ReLU layers fc1.., fc)",
		Options: []string{"hidden", "dropout"}, Reference: fmnist, Build: func(in Input, o Options) (torch.Spec, error) {
			h, err := o.ints("hidden", []int{256, 128})
			if err != nil {
				return torch.Spec{}, err
			}
			d, err := o.float("dropout", 0)
			if err != nil {
				return torch.Spec{}, err
			}
			return MLP{Hidden: h, Dropout: d}.Build(in)
		}}))
	must(r.Register(Model{Name: "cnn", Doc: "small CNN: conv3x3-BN-ReLU-maxpool stages conv1.., fc1, fc",
		Options: []string{"channels", "fc", "dropout", "bn"}, Reference: fmnist, Build: func(in Input, o Options) (torch.Spec, error) {
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
		}}))

	resnetOpts := []string{"width", "groups", "group-width", "layers", "stem"}
	resnet := func(layers []int, bneck bool, groups, groupWidth int) Builder {
		return func(in Input, o Options) (torch.Spec, error) {
			c := ResNet{Bottleneck: bneck}
			var err error
			if c.Width, err = o.int("width", 64); err != nil {
				return torch.Spec{}, err
			}
			if c.Groups, err = o.int("groups", groups); err != nil {
				return torch.Spec{}, err
			}
			if c.GroupWidth, err = o.int("group-width", groupWidth); err != nil {
				return torch.Spec{}, err
			}
			if c.Layers, err = o.ints("layers", layers); err != nil {
				return torch.Spec{}, err
			}
			if c.CIFARStem, err = o.stem(in); err != nil {
				return torch.Spec{}, err
			}
			return c.Build(in)
		}
	}
	for _, rn := range []struct {
		name, published string
		layers          []int
		bneck           bool
	}{
		{"resnet18", "11.69", []int{2, 2, 2, 2}, false},
		{"resnet34", "21.80", []int{3, 4, 6, 3}, false},
		{"resnet50", "25.56", []int{3, 4, 6, 3}, true},
		{"resnet101", "44.55", []int{3, 4, 23, 3}, true},
	} {
		must(r.Register(Model{Name: rn.name, Doc: fmt.Sprintf("torchvision %s (He et al. 2016; layers %v)", rn.name, rn.layers),
			Options: resnetOpts, Reference: imageNet, Published: rn.published, Paper: true,
			Build: resnet(rn.layers, rn.bneck, 1, 64)}))
	}
	must(r.Register(Model{Name: "resnext50-32x4d", Doc: "torchvision resnext50_32x4d (Xie et al. 2017): 32 groups of 4 channels",
		Options: resnetOpts, Reference: imageNet, Published: "25.03", Build: resnet([]int{3, 4, 6, 3}, true, 32, 4)}))
	must(r.Register(Model{Name: "resnext101-32x8d", Doc: "torchvision resnext101_32x8d (Xie et al. 2017): 32 groups of 8 channels",
		Options: resnetOpts, Reference: imageNet, Published: "88.79", Paper: true, Build: resnet([]int{3, 4, 23, 3}, true, 32, 8)}))

	wrn := func(depth, widen int) Builder {
		return func(in Input, o Options) (torch.Spec, error) {
			d, err := o.int("depth", depth)
			if err != nil {
				return torch.Spec{}, err
			}
			k, err := o.int("widen", widen)
			if err != nil {
				return torch.Spec{}, err
			}
			p, err := o.float("dropout", 0)
			if err != nil {
				return torch.Spec{}, err
			}
			return WRN{Depth: d, Widen: k, Dropout: p}.Build(in)
		}
	}
	must(r.Register(Model{Name: "wrn", Doc: "pre-activation Wide ResNet (depth 6n+4, widen k)",
		Options: []string{"depth", "widen", "dropout"}, Reference: cifar100, Build: wrn(28, 10)}))
	must(r.Register(Model{Name: "wrn-28-10", Doc: "Wide ResNet 28-10 for CIFAR (Zagoruyko & Komodakis 2016)",
		Options: []string{"dropout"}, Reference: cifar100, Published: "36.5", Paper: true, Build: wrn(28, 10)}))

	must(r.Register(Model{Name: "senet154", Doc: "SENet-154 (Hu et al. 2018), timm's legacy_senet154: SE-ResNeXt bottlenecks, 64 groups, reduction 16, dropout 0.2",
		Options: []string{"layers", "groups", "reduction", "dropout"}, Reference: imageNet, Published: "115.09", Paper: true,
		Build: func(in Input, o Options) (torch.Spec, error) {
			c := SENet{}
			var err error
			if c.Layers, err = o.ints("layers", []int{3, 8, 36, 3}); err != nil {
				return torch.Spec{}, err
			}
			if c.Groups, err = o.int("groups", 64); err != nil {
				return torch.Spec{}, err
			}
			if c.Reduction, err = o.int("reduction", 16); err != nil {
				return torch.Spec{}, err
			}
			if c.Dropout, err = o.float("dropout", 0.2); err != nil {
				return torch.Spec{}, err
			}
			return c.Build(in)
		}}))

	must(r.Register(Model{Name: "inception-resnet-v2", Doc: "Inception-ResNet-v2 (Szegedy et al. 2017), timm's inception_resnet_v2; 299×299 inputs, dropout 0.2",
		Options: []string{"repeats", "dropout"}, Reference: imageNet2, Published: "55.84", Paper: true,
		Build: func(in Input, o Options) (torch.Spec, error) {
			rep, err := o.ints("repeats", []int{10, 20, 9})
			if err != nil {
				return torch.Spec{}, err
			}
			if len(rep) != 3 {
				return torch.Spec{}, fmt.Errorf("option repeats=%q: want three counts like 10x20x9", o["repeats"])
			}
			d, err := o.float("dropout", 0.2)
			if err != nil {
				return torch.Spec{}, err
			}
			return InceptionResNetV2{Repeats: [3]int{rep[0], rep[1], rep[2]}, Dropout: d}.Build(in)
		}}))

	densenetOpts := []string{"growth", "depth", "blocks", "init", "bottleneck", "compression", "dropout", "stem"}
	densenet := func(growth int, blocks []int, depth, init int, bottleneck bool, compression float64, stem string) Builder {
		return func(in Input, o Options) (torch.Spec, error) {
			c := DenseNet{}
			var err error
			if c.Growth, err = o.int("growth", growth); err != nil {
				return torch.Spec{}, err
			}
			if o["stem"] == "" && stem != "" {
				o["stem"] = stem
			}
			if c.CIFARStem, err = o.stem(in); err != nil {
				return torch.Spec{}, err
			}
			bneck, err := o.bool("bottleneck", bottleneck, "1 (BN-ReLU-conv1×1 before each 3×3, DenseNet-B) or 0")
			if err != nil {
				return torch.Spec{}, err
			}
			if bneck {
				c.BNSize = 4
			}
			_, hasDepth := o["depth"]
			switch {
			case hasDepth && o["blocks"] != "":
				return torch.Spec{}, fmt.Errorf("give depth or blocks, not both")
			case hasDepth || (blocks == nil && o["blocks"] == ""):
				d, err := o.int("depth", depth)
				if err != nil {
					return torch.Spec{}, err
				}
				if c.Blocks, err = DenseNetDepth(d, bneck); err != nil {
					return torch.Spec{}, err
				}
			default:
				if c.Blocks, err = o.ints("blocks", blocks); err != nil {
					return torch.Spec{}, err
				}
			}
			defInit := init
			if defInit == 0 {
				defInit = 2 * c.Growth // the CIFAR -BC networks start with 2k channels
			}
			if c.Init, err = o.int("init", defInit); err != nil {
				return torch.Spec{}, err
			}
			if c.Compression, err = o.fraction("compression", compression); err != nil {
				return torch.Spec{}, err
			}
			if c.Dropout, err = o.float("dropout", 0); err != nil {
				return torch.Spec{}, err
			}
			return c.Build(in)
		}
	}
	must(r.Register(Model{Name: "densenet", Doc: "DenseNet (Huang et al. 2017): depth L (CIFAR: 3 blocks) or blocks=6x12x24x16, growth k, init channels (2k), bottleneck, compression θ",
		Options: densenetOpts, Reference: cifar100, Build: densenet(12, nil, 100, 0, true, 0.5, "")}))
	// Huang et al.'s Table 2 gives one count, 25.6M, for CIFAR-10 and
	// CIFAR-100: it is the 10-class network's (25,624,430); the 100-class
	// classifier adds 197,190 (25,821,620).
	must(r.Register(Model{Name: "densenet-bc-190-40", Doc: "DenseNet-BC (L = 190, k = 40) for CIFAR (Huang et al. 2017), torchvision's names",
		Options: densenetOpts, Reference: cifar10, Published: "25.6", Paper: true, Build: densenet(40, nil, 190, 0, true, 0.5, "cifar")}))
	for _, dn := range []struct {
		name, published string
		growth, init    int
		blocks          []int
	}{
		{"densenet121", "7.98", 32, 64, []int{6, 12, 24, 16}},
		{"densenet161", "28.68", 48, 96, []int{6, 12, 36, 24}},
		{"densenet169", "14.15", 32, 64, []int{6, 12, 32, 32}},
		{"densenet201", "20.01", 32, 64, []int{6, 12, 48, 32}},
	} {
		must(r.Register(Model{Name: dn.name, Doc: fmt.Sprintf("torchvision %s (ImageNet DenseNet-BC, k = %d, blocks %v)", dn.name, dn.growth, dn.blocks),
			Options: densenetOpts, Reference: imageNet, Published: dn.published,
			Build: densenet(dn.growth, dn.blocks, 0, dn.init, true, 0.5, "imagenet")}))
	}
	return r
}

// stem reads stem=auto|cifar|imagenet: auto is the CIFAR stem for inputs
// of at most 64 pixels a side.
func (o Options) stem(in Input) (cifar bool, err error) {
	switch o["stem"] {
	case "", "auto":
		return in.H <= 64 && in.W <= 64, nil
	case "cifar":
		return true, nil
	case "imagenet":
		return false, nil
	}
	return false, fmt.Errorf("option stem=%q: want auto, cifar or imagenet", o["stem"])
}

func (o Options) bool(key string, def bool, want string) (bool, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("option %s=%q: want %s", key, v, want)
	}
	return b, nil
}

// fraction parses a number in (0, 1].
func (o Options) fraction(key string, def float64) (float64, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("option %s=%q: want a number in (0,1]", key, v)
	}
	return f, nil
}
