package models

import (
	"errors"

	"github.com/lcl-project/lcl/trainer/torch"
)

// ProjOption is the option every built-in model takes besides its own:
// proj=N ends its features in HAFrame's projection to N dimensions
// (withProjection), so that a fixed classifier of N class vectors
// (--strategy haframe) can be met by features of any sign.
const ProjOption = "proj"

// withProjection appends HAFrame's projection (Liang & Davis 2023, their
// util/arch/HAF_resnet.py) to s's features and makes the head read its n
// outputs: Linear(d, n) without a bias — their 1×1 convolution to n
// channels, here after the pooling (on an average pool the two are the
// same map; both are linear) — then BatchNorm1d(n) and their
// NarrowResidualTransformationHead(n, n, 'prelu'): two point-residual
// layers, each x + PReLU(BN(W₂·PReLU(BN(W₁·x)))) with bias-free W₁, W₂ and
// one PReLU slope per feature. The features then end in a residual sum, not
// a ReLU: they can take any sign, as HAFrame's frame needs (its class
// vectors' cosines are partly negative). The modules are
// projection.{linear,bn,residual_layer1,residual_layer2}, the last two
// named inside as theirs (linear1, bn1, act_func1, linear2, bn2,
// act_func2). s must be checked (Spec.Check) with its input set.
func withProjection(s torch.Spec, n int) (torch.Spec, error) {
	d, err := s.Check()
	if err != nil {
		return s, err
	}
	// The head's first linear layer is the one on the features (as the
	// shim takes the feature width from it).
	var first *torch.Node
	s.Head.Walk(func(_ string, m *torch.Node) error {
		if m.Op == torch.OpLinear && first == nil {
			first = m
		}
		return nil
	})
	if first == nil {
		return s, errors.New("option proj: the head has no linear layer to read the projection")
	}
	first.In = n
	s.Features = torch.Seq("", s.Features, torch.Seq("projection",
		torch.Node{Op: torch.OpLinear, Name: "linear", In: d, Out: n},
		torch.BN("bn", n), pointResidual("residual_layer1", n), pointResidual("residual_layer2", n)))
	return s, nil
}

// pointResidual is HAFrame's PointResidualTransformationLayer(n, n, n,
// 'prelu'): x + PReLU(BN(W₂·PReLU(BN(W₁·x)))), the identity as its residual
// (the widths match).
func pointResidual(name string, n int) torch.Node {
	lin := func(name string) torch.Node { return torch.Node{Op: torch.OpLinear, Name: name, In: n, Out: n} }
	body := torch.Seq("", lin("linear1"), torch.BN("bn1", n), torch.PReLU("act_func1", n),
		lin("linear2"), torch.BN("bn2", n), torch.PReLU("act_func2", n))
	return torch.Seq(name, torch.Sum(body, torch.Identity()))
}
