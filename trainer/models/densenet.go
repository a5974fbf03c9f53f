package models

import (
	"errors"
	"fmt"

	"github.com/lcl-project/lcl/trainer/torch"
)

// DenseNet is the densely connected network of Huang et al. (2017) with
// torchvision's names (features.conv0, features.denseblockN.denselayerM.
// {norm1,conv1,norm2,conv2}, features.transitionN.{norm,conv},
// features.norm5, classifier). Each layer's output is concatenated to its
// input. With CIFARStem it is the paper's CIFAR network (a 3×3 convolution
// to Init channels, three blocks, MSR initialisation, dropout after every
// convolution but the first); otherwise torchvision's ImageNet network (a
// 7×7/2 convolution, BN, ReLU and a 3×3/2 max-pool, Kaiming fan-in
// initialisation, dropout after each layer).
type DenseNet struct {
	Growth      int     // k
	Blocks      []int   // layers per dense block
	Init        int     // channels of the first convolution
	BNSize      int     // bottleneck width in multiples of k (4); 0 = no bottleneck (plain DenseNet)
	Compression float64 // θ: a transition keeps ⌊θ·m⌋ of m channels (0.5 for -BC)
	Dropout     float64
	CIFARStem   bool
}

// DenseNetDepth returns the blocks of the CIFAR DenseNet of depth L: three
// blocks of (L−4)/6 bottleneck layers (L−4)/3 plain ones.
func DenseNetDepth(depth int, bottleneck bool) ([]int, error) {
	per := 3
	if bottleneck {
		per = 6
	}
	if depth < 4+per || (depth-4)%per != 0 {
		return nil, fmt.Errorf("depth %d: want %dn+4", depth, per)
	}
	n := (depth - 4) / per
	return []int{n, n, n}, nil
}

// Build returns DenseNet's trees.
func (c DenseNet) Build(in Input) (torch.Spec, error) {
	if c.Growth <= 0 || c.Init <= 0 || len(c.Blocks) == 0 || !(c.Compression > 0 && c.Compression <= 1) {
		return torch.Spec{}, fmt.Errorf("growth %d, init %d, %d blocks, compression %v", c.Growth, c.Init, len(c.Blocks), c.Compression)
	}
	init := torch.InitKaimingFanIn
	if c.CIFARStem {
		init = torch.InitKaimingFanOut
	}
	conv := func(name string, cin, cout, k int) torch.Node { return convInit(name, cin, cout, k, 1, init) }
	// drop follows a convolution: after every one (CIFAR, the paper) or
	// only after the layer's last (torchvision).
	drop := func(nodes []torch.Node, last bool) []torch.Node {
		if c.Dropout > 0 && (c.CIFARStem || last) {
			return append(nodes, torch.Dropout(c.Dropout))
		}
		return nodes
	}
	var feats []torch.Node
	if c.CIFARStem {
		feats = []torch.Node{conv("conv0", in.C, c.Init, 3)}
	} else {
		c0 := convInit("conv0", in.C, c.Init, 7, 2, init)
		feats = []torch.Node{c0, torch.BN("norm0", c.Init), torch.ReLU(), torch.MaxPool(3, 2, 1)}
	}
	ch := c.Init
	for i, n := range c.Blocks {
		if n <= 0 {
			return torch.Spec{}, fmt.Errorf("block %d has %d layers", i+1, n)
		}
		var layers []torch.Node
		for l := range n {
			var body []torch.Node
			if c.BNSize > 0 {
				w := c.BNSize * c.Growth
				body = append(body, torch.BN("norm1", ch), torch.ReLU(), conv("conv1", ch, w, 1))
				body = drop(body, false)
				body = append(body, torch.BN("norm2", w), torch.ReLU(), conv("conv2", w, c.Growth, 3))
			} else {
				body = append(body, torch.BN("norm1", ch), torch.ReLU(), conv("conv1", ch, c.Growth, 3))
			}
			body = drop(body, true)
			layers = append(layers, torch.Cat(torch.Identity(), torch.Seq(fmt.Sprintf("denselayer%d", l+1), body...)))
			ch += c.Growth
		}
		feats = append(feats, torch.Seq(fmt.Sprintf("denseblock%d", i+1), layers...))
		if i < len(c.Blocks)-1 {
			out := int(c.Compression * float64(ch))
			t := []torch.Node{torch.BN("norm", ch), torch.ReLU(), conv("conv", ch, out, 1)}
			t = drop(t, false)
			t = append(t, torch.AvgPool(2, 2, 0))
			feats = append(feats, torch.Seq(fmt.Sprintf("transition%d", i+1), t...))
			ch = out
		}
	}
	feats = append(feats, torch.BN("norm5", ch))
	return torch.Spec{
		Features: pooled(torch.Seq("features", feats...), torch.ReLU()),
		Head:     head("classifier", ch, in.NumClasses, 0, torch.InitZeroBias),
	}, nil
}

// densenetOptions are the options of every DenseNet.
func densenetOptions() []string {
	return []string{"growth", "depth", "blocks", "init", "bottleneck", "compression", "dropout", "stem"}
}

// registerDenseNets registers the DenseNets: the CIFAR protocol for inputs
// up to 64 pixels, ImageNet's above.
func registerDenseNets(r *Registry) error {
	model := func(m Model) Model {
		m.Options, m.Preset, m.LargePreset = densenetOptions(), "densenet-cifar", "densenet-imagenet"
		return m
	}
	errs := []error{
		r.Register(model(Model{Name: "densenet", Doc: "DenseNet (Huang et al. 2017): depth L (CIFAR: 3 blocks) or blocks=6x12x24x16, growth k, init channels (2k), bottleneck, compression θ",
			Reference: cifar100, Build: densenetBuilder(12, nil, 100, 0, true, 0.5, "")})),
		// Huang et al.'s Table 2 gives one count, 25.6M, for CIFAR-10 and
		// CIFAR-100: it is the 10-class network's (25,624,430); the 100-class
		// classifier adds 197,190 (25,821,620).
		r.Register(model(Model{Name: "densenet-bc-190-40", Doc: "DenseNet-BC (L = 190, k = 40) for CIFAR (Huang et al. 2017), torchvision's names",
			Reference: cifar10, Published: "25.6", Paper: true, Build: densenetBuilder(40, nil, 190, 0, true, 0.5, "cifar")})),
	}
	for _, d := range []struct {
		name, published string
		growth, init    int
		blocks          []int
	}{
		{"densenet121", "7.98", 32, 64, []int{6, 12, 24, 16}},
		{"densenet161", "28.68", 48, 96, []int{6, 12, 36, 24}},
		{"densenet169", "14.15", 32, 64, []int{6, 12, 32, 32}},
		{"densenet201", "20.01", 32, 64, []int{6, 12, 48, 32}},
	} {
		errs = append(errs, r.Register(model(Model{Name: d.name, Doc: fmt.Sprintf("torchvision %s (ImageNet DenseNet-BC, k = %d, blocks %v)", d.name, d.growth, d.blocks),
			Reference: imageNet, Published: d.published, Build: densenetBuilder(d.growth, d.blocks, 0, d.init, true, 0.5, "imagenet")})))
	}
	return errors.Join(errs...)
}

// densenetBuilder builds a DenseNet of these defaults with the options given.
func densenetBuilder(growth int, blocks []int, depth, init int, bottleneck bool, compression float64, stem string) Builder {
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
