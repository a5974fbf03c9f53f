package models

import (
	"errors"
	"fmt"

	"github.com/lcl-project/lcl/trainer/torch"
)

// ResNet is torchvision's ResNet family (He et al. 2016) with its ResNeXt
// generalisation (Xie et al. 2017): BasicBlock or Bottleneck (v1.5: the
// stride on the 3×3 convolution) stages, the 3×3 convolution of a
// bottleneck in Groups groups of GroupWidth·(planes/64) channels.
type ResNet struct {
	Bottleneck bool
	Layers     []int // blocks per stage
	Width      int   // planes of the first stage (64)
	Groups     int   // ResNeXt cardinality (1)
	GroupWidth int   // torchvision's width_per_group (64)
	CIFARStem  bool  // 3×3 stride-1 stem without max-pool
}

// Build returns the spec's trees with torchvision's names (conv1, bn1,
// layerN.M.{conv1,bn1,...,downsample.0}, fc).
func (c ResNet) Build(in Input) (torch.Spec, error) {
	if len(c.Layers) < 1 || len(c.Layers) > 4 {
		return torch.Spec{}, fmt.Errorf("%d stages: want 1 to 4", len(c.Layers))
	}
	exp := 1
	if c.Bottleneck {
		exp = 4
	}
	if !c.Bottleneck && (c.Groups != 1 || c.GroupWidth != 64) {
		return torch.Spec{}, fmt.Errorf("groups and group-width need bottleneck blocks (torchvision's BasicBlock has neither)")
	}
	var stem []torch.Node
	if c.CIFARStem {
		stem = []torch.Node{torch.Conv("conv1", in.C, c.Width, 3, 1), torch.BN("bn1", c.Width), torch.ReLU()}
	} else {
		stem = []torch.Node{torch.Conv("conv1", in.C, c.Width, 7, 2), torch.BN("bn1", c.Width), torch.ReLU(), torch.MaxPool(3, 2, 1)}
	}
	inplanes := c.Width
	for i, n := range c.Layers {
		planes := c.Width << i
		var blocks []torch.Node
		for b := range n {
			stride := 1
			if b == 0 && i > 0 {
				stride = 2
			}
			var ds *torch.Node
			if stride != 1 || inplanes != planes*exp {
				ds = downsample(inplanes, planes*exp, 1, stride, 0)
			}
			var body []torch.Node
			if c.Bottleneck {
				w := planes * c.GroupWidth / 64 * c.Groups
				c2 := torch.Conv("conv2", w, w, 3, stride)
				c2.Groups = c.Groups
				body = []torch.Node{
					torch.Conv("conv1", inplanes, w, 1, 1), torch.BN("bn1", w), torch.ReLU(),
					c2, torch.BN("bn2", w), torch.ReLU(),
					torch.Conv("conv3", w, planes*exp, 1, 1), torch.BN("bn3", planes*exp),
				}
			} else {
				body = []torch.Node{
					torch.Conv("conv1", inplanes, planes, 3, stride), torch.BN("bn1", planes), torch.ReLU(),
					torch.Conv("conv2", planes, planes, 3, 1), torch.BN("bn2", planes),
				}
			}
			blocks = append(blocks, residual(idx(b), body, ds))
			inplanes = planes * exp
		}
		stem = append(stem, torch.Seq(fmt.Sprintf("layer%d", i+1), blocks...))
	}
	return torch.Spec{Features: pooled(stem...), Head: head("fc", inplanes, in.NumClasses, 0, torch.InitDefault)}, nil
}

// WRN is the pre-activation Wide ResNet of Zagoruyko & Komodakis (2016):
// depth 6n+4, widths 16k, 32k, 64k, dropout between the convolutions.
type WRN struct {
	Depth, Widen int
	Dropout      float64
}

// Build returns WRN's trees: conv1, layerN.M.{bn1,conv1,bn2,conv2,shortcut.0}, bn, fc.
func (c WRN) Build(in Input) (torch.Spec, error) {
	if c.Depth < 10 || (c.Depth-4)%6 != 0 {
		return torch.Spec{}, fmt.Errorf("depth %d: want 6n+4 ≥ 10", c.Depth)
	}
	n := (c.Depth - 4) / 6
	nodes := []torch.Node{torch.Conv("conv1", in.C, 16, 3, 1)}
	ch := 16
	for i, w := range []int{16 * c.Widen, 32 * c.Widen, 64 * c.Widen} {
		var blocks []torch.Node
		for b := range n {
			stride := 1
			if b == 0 && i > 0 {
				stride = 2
			}
			inner := []torch.Node{torch.Conv("conv1", ch, w, 3, stride), torch.BN("bn2", w), torch.ReLU()}
			if c.Dropout > 0 {
				inner = append(inner, torch.Dropout(c.Dropout))
			}
			inner = append(inner, torch.Conv("conv2", w, w, 3, 1))
			var blk torch.Node
			if stride != 1 || ch != w {
				// The projection sees the pre-activated input.
				sc := torch.Seq("shortcut", torch.Conv(idx(0), ch, w, 1, stride))
				blk = torch.Seq(idx(b), torch.BN("bn1", ch), torch.ReLU(), torch.Sum(torch.Seq("", inner...), sc))
			} else {
				body := append([]torch.Node{torch.BN("bn1", ch), torch.ReLU()}, inner...)
				blk = torch.Seq(idx(b), torch.Sum(torch.Seq("", body...), torch.Identity()))
			}
			blocks = append(blocks, blk)
			ch = w
		}
		nodes = append(nodes, torch.Seq(fmt.Sprintf("layer%d", i+1), blocks...))
	}
	nodes = append(nodes, torch.BN("bn", ch), torch.ReLU())
	return torch.Spec{Features: pooled(nodes...), Head: head("fc", ch, in.NumClasses, 0, torch.InitDefault)}, nil
}

// resnetOptions are the options of every ResNet and ResNeXt.
func resnetOptions() []string { return []string{"width", "groups", "group-width", "layers", "stem"} }

// registerResNets registers torchvision's ResNets (the CIFAR protocol for
// inputs up to 64 pixels, ImageNet's above) and ResNeXts.
func registerResNets(r *Registry) error {
	var errs []error
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
		errs = append(errs, r.Register(Model{Name: rn.name, Doc: fmt.Sprintf("torchvision %s (He et al. 2016; layers %v)", rn.name, rn.layers),
			Options: resnetOptions(), Reference: imageNet, Published: rn.published, Paper: true,
			Preset: "cifar-resnet", LargePreset: "imagenet-resnet", Build: resnetBuilder(rn.layers, rn.bneck, 1, 64)}))
	}
	return errors.Join(append(errs,
		r.Register(Model{Name: "resnext50-32x4d", Doc: "torchvision resnext50_32x4d (Xie et al. 2017): 32 groups of 4 channels",
			Options: resnetOptions(), Reference: imageNet, Published: "25.03", Preset: "resnext-imagenet",
			Build: resnetBuilder([]int{3, 4, 6, 3}, true, 32, 4)}),
		r.Register(Model{Name: "resnext101-32x8d", Doc: "torchvision resnext101_32x8d (Xie et al. 2017): 32 groups of 8 channels",
			Options: resnetOptions(), Reference: imageNet, Published: "88.79", Paper: true, Preset: "resnext-imagenet",
			Build: resnetBuilder([]int{3, 4, 23, 3}, true, 32, 8)}))...)
}

// resnetBuilder builds a ResNet of these defaults with the options given.
func resnetBuilder(layers []int, bneck bool, groups, groupWidth int) Builder {
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

// registerWRN registers the Wide ResNets, trained with their CIFAR protocol.
func registerWRN(r *Registry) error {
	return errors.Join(
		r.Register(Model{Name: "wrn", Doc: "pre-activation Wide ResNet (depth 6n+4, widen k)",
			Options: []string{"depth", "widen", "dropout"}, Reference: cifar100, Preset: "wrn-cifar", Build: wrnBuilder(28, 10)}),
		r.Register(Model{Name: "wrn-28-10", Doc: "Wide ResNet 28-10 for CIFAR (Zagoruyko & Komodakis 2016)",
			Options: []string{"dropout"}, Reference: cifar100, Published: "36.5", Paper: true, Preset: "wrn-cifar", Build: wrnBuilder(28, 10)}))
}

// wrnBuilder builds a Wide ResNet of these defaults with the options given.
func wrnBuilder(depth, widen int) Builder {
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
