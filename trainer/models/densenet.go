package models

import (
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
