package models

import (
	"fmt"

	"github.com/lcl-project/lcl/trainer/torch"
)

// SENet is SENet-154 of Hu et al. (2018) as timm's legacy_senet154 (after
// Cadene's port of the authors' Caffe model) defines it: a deep 3×3 stem
// (layer0), a ceil-mode max-pool, stages of SE-ResNeXt bottlenecks whose
// 1×1 convolution doubles the planes and whose grouped 3×3 convolution
// quadruples them, a squeeze-excitation gate on each residual branch,
// 3×3 projection shortcuts after the first stage, and dropout before the
// classifier.
type SENet struct {
	Layers    []int   // blocks per stage ([3, 8, 36, 3])
	Groups    int     // cardinality of the 3×3 convolutions (64)
	Reduction int     // squeeze-excitation reduction ratio (16)
	Dropout   float64 // before last_linear (0.2)
}

// se is the squeeze-excitation gate x·σ(fc2(relu(fc1(mean(x))))) with 1×1
// convolutions fc1, fc2 (timm's SEModule).
func se(c, reduction int) torch.Node {
	fc1 := torch.Conv("fc1", c, c/reduction, 1, 1)
	fc1.Bias = true
	fc2 := torch.Conv("fc2", c/reduction, c, 1, 1)
	fc2.Bias = true
	return torch.Mul(torch.Identity(), torch.Seq("se_module", torch.GAP(), fc1, torch.ReLU(), fc2, torch.Sigmoid()))
}

// Build returns the trees with timm's names: layer0.{conv1..3,bn1..3},
// layerN.M.{conv1..3,bn1..3,se_module.fc1,se_module.fc2,downsample.0/1},
// last_linear.
func (c SENet) Build(in Input) (torch.Spec, error) {
	if len(c.Layers) != 4 {
		return torch.Spec{}, fmt.Errorf("%d stages: want 4", len(c.Layers))
	}
	const inplanes0 = 128
	pool := torch.MaxPool(3, 2, 0)
	pool.Ceil = true
	nodes := []torch.Node{
		torch.Seq("layer0",
			torch.Conv("conv1", in.C, 64, 3, 2), torch.BN("bn1", 64), torch.ReLU(),
			torch.Conv("conv2", 64, 64, 3, 1), torch.BN("bn2", 64), torch.ReLU(),
			torch.Conv("conv3", 64, inplanes0, 3, 1), torch.BN("bn3", inplanes0), torch.ReLU()),
		pool,
	}
	inplanes := inplanes0
	for i, n := range c.Layers {
		planes := 64 << i
		out := planes * 4
		if out%c.Groups != 0 || (planes*2)%c.Groups != 0 || out/c.Reduction < 1 {
			return torch.Spec{}, fmt.Errorf("stage %d: %d groups or reduction %d do not fit %d channels", i+1, c.Groups, c.Reduction, out)
		}
		var blocks []torch.Node
		for b := range n {
			stride := 1
			if b == 0 && i > 0 {
				stride = 2
			}
			var ds *torch.Node
			if stride != 1 || inplanes != out {
				k, pad := 1, 0
				if i > 0 {
					k, pad = 3, 1
				}
				ds = downsample(inplanes, out, k, stride, pad)
			}
			c2 := torch.Conv("conv2", planes*2, out, 3, stride)
			c2.Groups = c.Groups
			body := []torch.Node{
				torch.Conv("conv1", inplanes, planes*2, 1, 1), torch.BN("bn1", planes*2), torch.ReLU(),
				c2, torch.BN("bn2", out), torch.ReLU(),
				torch.Conv("conv3", out, out, 1, 1), torch.BN("bn3", out),
				se(out, c.Reduction),
			}
			blocks = append(blocks, residual(idx(b), body, ds))
			inplanes = out
		}
		nodes = append(nodes, torch.Seq(fmt.Sprintf("layer%d", i+1), blocks...))
	}
	return torch.Spec{Features: pooled(nodes...), Head: head("last_linear", inplanes, in.NumClasses, c.Dropout, torch.InitDefault)}, nil
}

// registerSENet registers SENet-154, trained with its ImageNet protocol.
func registerSENet(r *Registry) error {
	return r.Register(Model{Name: "senet154", Doc: "SENet-154 (Hu et al. 2018), timm's legacy_senet154: SE-ResNeXt bottlenecks, 64 groups, reduction 16, dropout 0.2",
		Options: []string{"layers", "groups", "reduction", "dropout"}, Reference: imageNet, Published: "115.09", Paper: true,
		Preset: "senet-imagenet", Build: buildSENet})
}

func buildSENet(in Input, o Options) (torch.Spec, error) {
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
}
