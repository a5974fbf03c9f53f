package models

import (
	"strconv"

	"github.com/lcl-project/lcl/trainer/torch"
)

// The vocabulary the architectures are written in: small helpers over
// torch's node constructors, named as in torchvision.

// idx names the i-th child of a torch.nn.Sequential ("0", "1", ...).
func idx(i int) string { return strconv.Itoa(i) }

// convRect is a bias-free convolution with a kh×kw kernel.
func convRect(name string, in, out, kh, kw, stride, ph, pw int, init torch.WeightInit) torch.Node {
	return torch.Node{Op: torch.OpConv, Name: name, In: in, Out: out, Kernel: [2]int{kh, kw},
		Stride: [2]int{stride, stride}, Pad: [2]int{ph, pw}, Init: init}
}

// convInit is torch.Conv with another initialisation.
func convInit(name string, in, out, k, stride int, init torch.WeightInit) torch.Node {
	c := torch.Conv(name, in, out, k, stride)
	c.Init = init
	return c
}

// residual is out = relu(body(x) + shortcut(x)) inside a module named name
// (torchvision's blocks): shortcut is Identity when nil.
func residual(name string, body []torch.Node, shortcut *torch.Node) torch.Node {
	sc := torch.Identity()
	if shortcut != nil {
		sc = *shortcut
	}
	return torch.Seq(name, torch.Sum(torch.Seq("", body...), sc), torch.ReLU())
}

// downsample is torchvision's projection shortcut: conv then BN, named
// "downsample.0" and "downsample.1".
func downsample(in, out, k, stride, pad int) *torch.Node {
	c := torch.Conv(idx(0), in, out, k, stride)
	c.Pad = [2]int{pad, pad}
	d := torch.Seq("downsample", c, torch.BN(idx(1), out))
	return &d
}

// head is the usual classifier: optional dropout, then a linear layer.
func head(name string, in, classes int, dropout float64, init torch.WeightInit) torch.Node {
	l := torch.Linear(name, in, classes)
	l.Init = init
	if dropout > 0 {
		return torch.Seq("", torch.Dropout(dropout), l)
	}
	return torch.Seq("", l)
}

// pooled ends a feature extractor: global average pool and flatten.
func pooled(nodes ...torch.Node) torch.Node {
	return torch.Seq("", append(append([]torch.Node{}, nodes...), torch.GAP(), torch.Flatten())...)
}
