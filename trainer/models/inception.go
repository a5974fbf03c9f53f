package models

import (
	"fmt"

	"github.com/lcl-project/lcl/trainer/torch"
)

// InceptionResNetV2 is the network of Szegedy et al. (2017, Figure 15)
// with timm's names (inception_resnet_v2, after Cadene's port of the
// TensorFlow-Slim model): a stem, Mixed_5b, Repeats[0] Inception-ResNet-A
// blocks (Block35, residual scale 0.17), the reduction Mixed_6a,
// Repeats[1] Inception-ResNet-B blocks (Block17, 0.10), the reduction
// Mixed_7a, Repeats[2] Inception-ResNet-C blocks (Block8, 0.20) and a
// last Block8 without ReLU, a 1×1 convolution to 1536 channels, average
// pooling, dropout and the classifier. Convolutions are
// conv-BN(eps 0.001)-ReLU units.
type InceptionResNetV2 struct {
	Repeats [3]int  // [10, 20, 9]
	Dropout float64 // before classif: the paper keeps 0.8 of the units (0.2); timm's default is 0
}

// basic is timm's BasicConv2d: conv (no bias), bn (eps 0.001), ReLU.
func basic(name string, in, out, kh, kw, stride, ph, pw int) torch.Node {
	bn := torch.BN("bn", out)
	bn.Eps = 1e-3
	return torch.Seq(name, convRect("conv", in, out, kh, kw, stride, ph, pw, torch.InitDefault), bn, torch.ReLU())
}

// sq is a square basic unit.
func sq(name string, in, out, k, stride, pad int) torch.Node {
	return basic(name, in, out, k, k, stride, pad, pad)
}

// inceptionResidual is out = act(scale·conv2d(cat(branches)) + x).
func inceptionResidual(name string, scale float64, c, catC int, relu bool, branches ...torch.Node) torch.Node {
	up := torch.Conv("conv2d", catC, c, 1, 1)
	up.Bias = true
	up.Init = torch.InitDefault
	s := torch.Sum(torch.Seq("", torch.Cat(branches...), up), torch.Identity())
	s.Scale = scale
	if !relu {
		return torch.Seq(name, s)
	}
	return torch.Seq(name, s, torch.ReLU())
}

func block35(name string) torch.Node {
	return inceptionResidual(name, 0.17, 320, 128, true,
		sq("branch0", 320, 32, 1, 1, 0),
		torch.Seq("branch1", sq("0", 320, 32, 1, 1, 0), sq("1", 32, 32, 3, 1, 1)),
		torch.Seq("branch2", sq("0", 320, 32, 1, 1, 0), sq("1", 32, 48, 3, 1, 1), sq("2", 48, 64, 3, 1, 1)))
}

func block17(name string) torch.Node {
	return inceptionResidual(name, 0.10, 1088, 384, true,
		sq("branch0", 1088, 192, 1, 1, 0),
		torch.Seq("branch1", sq("0", 1088, 128, 1, 1, 0), basic("1", 128, 160, 1, 7, 1, 0, 3), basic("2", 160, 192, 7, 1, 1, 3, 0)))
}

func block8(name string, scale float64, relu bool) torch.Node {
	return inceptionResidual(name, scale, 2080, 448, relu,
		sq("branch0", 2080, 192, 1, 1, 0),
		torch.Seq("branch1", sq("0", 2080, 192, 1, 1, 0), basic("1", 192, 224, 1, 3, 1, 0, 1), basic("2", 224, 256, 3, 1, 1, 1, 0)))
}

func repeat(name string, n int, block func(string) torch.Node) torch.Node {
	var bs []torch.Node
	for i := range n {
		bs = append(bs, block(idx(i)))
	}
	return torch.Seq(name, bs...)
}

// Build returns the trees with timm's names: conv2d_1a.conv, mixed_5b.branch1.0.conv,
// repeat.0.conv2d, repeat_1.*, repeat_2.*, block8, conv2d_7b, classif.
func (c InceptionResNetV2) Build(in Input) (torch.Spec, error) {
	for i, r := range c.Repeats {
		if r < 0 {
			return torch.Spec{}, fmt.Errorf("repeats[%d] = %d", i, r)
		}
	}
	avg := torch.AvgPool(3, 1, 1)
	avg.NoPadAvg = true
	nodes := []torch.Node{
		sq("conv2d_1a", in.C, 32, 3, 2, 0),
		sq("conv2d_2a", 32, 32, 3, 1, 0),
		sq("conv2d_2b", 32, 64, 3, 1, 1),
		torch.MaxPool(3, 2, 0),
		sq("conv2d_3b", 64, 80, 1, 1, 0),
		sq("conv2d_4a", 80, 192, 3, 1, 0),
		torch.MaxPool(3, 2, 0),
		torch.Cat(
			sq("branch0", 192, 96, 1, 1, 0),
			torch.Seq("branch1", sq("0", 192, 48, 1, 1, 0), sq("1", 48, 64, 5, 1, 2)),
			torch.Seq("branch2", sq("0", 192, 64, 1, 1, 0), sq("1", 64, 96, 3, 1, 1), sq("2", 96, 96, 3, 1, 1)),
			torch.Seq("branch3", avg, sq("1", 192, 64, 1, 1, 0))),
		repeat("repeat", c.Repeats[0], block35),
		torch.Cat(
			sq("branch0", 320, 384, 3, 2, 0),
			torch.Seq("branch1", sq("0", 320, 256, 1, 1, 0), sq("1", 256, 256, 3, 1, 1), sq("2", 256, 384, 3, 2, 0)),
			torch.MaxPool(3, 2, 0)),
		repeat("repeat_1", c.Repeats[1], block17),
		torch.Cat(
			torch.Seq("branch0", sq("0", 1088, 256, 1, 1, 0), sq("1", 256, 384, 3, 2, 0)),
			torch.Seq("branch1", sq("0", 1088, 256, 1, 1, 0), sq("1", 256, 288, 3, 2, 0)),
			torch.Seq("branch2", sq("0", 1088, 256, 1, 1, 0), sq("1", 256, 288, 3, 1, 1), sq("2", 288, 320, 3, 2, 0)),
			torch.MaxPool(3, 2, 0)),
		repeat("repeat_2", c.Repeats[2], func(n string) torch.Node { return block8(n, 0.20, true) }),
		block8("block8", 1.0, false),
		sq("conv2d_7b", 2080, 1536, 1, 1, 0),
	}
	// The mixed blocks are modules of their own in timm.
	nodes[7] = torch.Seq("mixed_5b", nodes[7])
	nodes[9] = torch.Seq("mixed_6a", nodes[9])
	nodes[11] = torch.Seq("mixed_7a", nodes[11])
	return torch.Spec{Features: pooled(nodes...), Head: head("classif", 1536, in.NumClasses, c.Dropout, torch.InitDefault)}, nil
}

// registerInception registers Inception-ResNet-v2, trained with its paper's
// RMSProp protocol.
func registerInception(r *Registry) error {
	return r.Register(Model{Name: "inception-resnet-v2", Doc: "Inception-ResNet-v2 (Szegedy et al. 2017), timm's inception_resnet_v2; 299×299 inputs, dropout 0.2",
		Options: []string{"repeats", "dropout"}, Reference: imageNet2, Published: "55.84", Paper: true,
		Preset: "inception-resnet-v2", Build: buildInception})
}

func buildInception(in Input, o Options) (torch.Spec, error) {
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
}
