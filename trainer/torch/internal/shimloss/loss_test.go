//go:build cgo

package shimloss

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lcl-project/lcl/internal/lossref"
	"github.com/lcl-project/lcl/trainer/torch"
)

// The loss that trains (loss.hpp) is held against internal/lossref, a plain
// float64 computation derived by hand from docs/trainer.md, for every term:
// its value and its gradient. trainer/torch's TestTrainStepMatchesReference
// holds real training steps (each peer's loss and update) against it too.

func refCoefs(c torch.Coefs) lossref.Coefs {
	return lossref.Coefs{SoftCE: float64(c.SoftCE), HardCE: float64(c.HardCE), KD: float64(c.KD), KDTemperature: float64(c.KDTemperature),
		Mutual: float64(c.Mutual)}
}

func TestLossMatchesReference(t *testing.T) {
	const n, c = 5, 4
	r := rand.New(rand.NewPCG(1, 2))
	z, tl := lossref.Normal32(r, n*c), lossref.Normal32(r, n*c)
	peers := [][]float32{lossref.Normal32(r, n*c), lossref.Normal32(r, n*c)}
	y := []int64{0, 3, 1, 1, 2}
	T := lossref.NearbyTargets(c)
	w := []float32{1, 0.5, 2, 0, 1}
	for _, tc := range []struct {
		name    string
		co      torch.Coefs
		w       []float32
		teacher bool
		peers   int
	}{
		{"soft", torch.Coefs{SoftCE: 1}, nil, false, 0},
		{"soft weighted", torch.Coefs{SoftCE: 1}, w, false, 0},
		{"hard", torch.Coefs{HardCE: 1}, nil, false, 0},
		{"soft+hard", torch.Coefs{SoftCE: 0.7, HardCE: 0.3}, nil, false, 0},
		{"kd τ=4", torch.Coefs{HardCE: 0.1, KD: 0.9, KDTemperature: 4}, nil, true, 0},
		{"kd τ=2 weighted", torch.Coefs{SoftCE: 0.5, KD: 0.5, KDTemperature: 2}, w, true, 0},
		{"mutual, one peer", torch.Coefs{HardCE: 1, Mutual: 1}, nil, false, 1},
		{"mutual, two peers", torch.Coefs{HardCE: 1, Mutual: 0.6}, nil, false, 2},
		{"every term weighted", torch.Coefs{SoftCE: 0.4, HardCE: 0.3, KD: 0.7, KDTemperature: 3, Mutual: 0.5}, w, true, 2},
		{"all weights zero", torch.Coefs{SoftCE: 1, Mutual: 1}, make([]float32, n), false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Logits: z, N: n, C: c, Y: y, Targets: T, Weights: tc.w, Coefs: tc.co, Peers: peers[:tc.peers]}
			ref := lossref.Input{Logits: lossref.Rows(z, n, c), Labels: lossref.Labels(y), Targets: lossref.Rows(T, c, c),
				Weights: lossref.Float64s(tc.w), Coefs: refCoefs(tc.co)}
			if tc.teacher {
				in.Teacher, ref.Teacher = tl, lossref.Rows(tl, n, c)
			}
			for _, p := range peers[:tc.peers] {
				ref.Peers = append(ref.Peers, lossref.Rows(p, n, c))
			}
			got, grad, err := Loss(in)
			if err != nil {
				t.Fatal(err)
			}
			want, wgrad, err := lossref.Loss(ref)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(float64(got)-want) > 1e-5*math.Max(1, math.Abs(want)) {
				t.Errorf("loss = %.7f, want %.7f", got, want)
			}
			for i := range n {
				for j := range c {
					if g := float64(grad[i*c+j]); math.Abs(g-wgrad[i][j]) > 1e-6 {
						t.Fatalf("grad[%d][%d] = %.7f, want %.7f", i, j, g, wgrad[i][j])
					}
				}
			}
		})
	}
	if _, _, err := Loss(Input{Logits: z, N: n, C: c, Y: y, Coefs: torch.Coefs{KD: 1}}); err == nil {
		t.Error("distillation without teacher logits accepted")
	}
}

func TestOneHotEqualsCrossEntropy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sz := range []struct{ n, c int }{{1, 2}, {7, 10}, {32, 100}} {
		z := lossref.Normal32(r, sz.n*sz.c)
		y := make([]int64, sz.n)
		for i := range y {
			y[i] = int64(r.IntN(sz.c))
		}
		ce, err := CrossEntropy(z, sz.n, sz.c, y)
		if err != nil {
			t.Fatal(err)
		}
		for _, co := range []torch.Coefs{{SoftCE: 1}, {HardCE: 1}} {
			got, _, err := Loss(Input{Logits: z, N: sz.n, C: sz.c, Y: y, Coefs: co})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(float64(got-ce)) > 1e-5*math.Max(1, float64(ce)) {
				t.Errorf("n=%d c=%d %+v: loss %.7f, cross_entropy %.7f", sz.n, sz.c, co, got, ce)
			}
		}
	}
}

// TestMixedLossIsTheMixOfLosses: a mixed batch's loss (the train step takes
// each label term against the mixed target, with one log-softmax) equals
// lam·loss(y) + (1−lam)·loss(y′), the definition timm's Mixup and the
// issue give, value and gradient: against internal/lossref for every term
// it has, and for the group term against the shim's own unmixed loss (held
// against PyTorch in TestHXEMatchesPyTorch). Distillation and mutual terms
// do not depend on the labels and so count once.
func TestMixedLossIsTheMixOfLosses(t *testing.T) {
	const n, c, lam = 5, 4, 0.3
	r := rand.New(rand.NewPCG(7, 8))
	z, tl := lossref.Normal32(r, n*c), lossref.Normal32(r, n*c)
	peers := [][]float32{lossref.Normal32(r, n*c)}
	y := []int64{0, 3, 1, 1, 2}
	yb := []int64{2, 1, 1, 3, 0} // y flipped, as mix_batch pairs examples
	T := lossref.NearbyTargets(c)
	w := []float32{1, 0.5, 2, 0, 1}
	members := []float32{1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}             // {0,1}, {2,3}, all
	weights := []float32{1, 0, 0.5, 0.7, 0, 0.2, 0, 1, 0.1, 0, 0.9, 0.3} // C×3
	for _, tc := range []struct {
		name   string
		co     torch.Coefs
		w      []float32
		groups bool
	}{
		{"soft", torch.Coefs{SoftCE: 1}, nil, false},
		{"hard weighted", torch.Coefs{HardCE: 1}, w, false},
		{"soft+hard+kd+mutual", torch.Coefs{SoftCE: 0.4, HardCE: 0.3, KD: 0.7, KDTemperature: 3, Mutual: 0.5}, w, false},
		{"group", torch.Coefs{Group: 1}, nil, true},
		{"group+hard weighted", torch.Coefs{Group: 0.6, HardCE: 0.4}, w, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Logits: z, N: n, C: c, Y: y, Targets: T, Weights: tc.w, Coefs: tc.co, Teacher: tl, Peers: peers,
				Mixed: yb, Lam: lam}
			if tc.groups {
				in.Groups, in.GroupMembers, in.GroupWeights = 3, members, weights
			}
			got, grad, err := Loss(in)
			if err != nil {
				t.Fatal(err)
			}
			// The reference: the two unmixed losses, mixed.
			var want float64
			wgrad := make([]float64, n*c)
			for _, part := range []struct {
				y []int64
				k float64
			}{{y, lam}, {yb, 1 - lam}} {
				var l float64
				var g []float64
				if tc.groups {
					un := in
					un.Y, un.Mixed, un.Lam = part.y, nil, 0
					l32, g32, err := Loss(un)
					if err != nil {
						t.Fatal(err)
					}
					l, g = float64(l32), lossref.Float64s(g32)
				} else {
					ref := lossref.Input{Logits: lossref.Rows(z, n, c), Labels: lossref.Labels(part.y),
						Targets: lossref.Rows(T, c, c), Weights: lossref.Float64s(tc.w), Coefs: refCoefs(tc.co),
						Teacher: lossref.Rows(tl, n, c), Peers: [][][]float64{lossref.Rows(peers[0], n, c)}}
					var rows [][]float64
					if l, rows, err = lossref.Loss(ref); err != nil {
						t.Fatal(err)
					}
					for _, row := range rows {
						g = append(g, row...)
					}
				}
				want += part.k * l
				for i := range g {
					wgrad[i] += part.k * g[i]
				}
			}
			if math.Abs(float64(got)-want) > 1e-5*math.Max(1, math.Abs(want)) {
				t.Errorf("loss = %.7f, want %.7f", got, want)
			}
			for i := range wgrad {
				if math.Abs(float64(grad[i])-wgrad[i]) > 1e-6 {
					t.Fatalf("grad[%d] = %.7f, want %.7f", i, grad[i], wgrad[i])
				}
			}
			// Unmixed, the same logits give another loss: the test sees the mixing.
			un := in
			un.Mixed, un.Lam = nil, 0
			if l, _, err := Loss(un); err != nil || math.Abs(float64(l)-want) < 1e-4 {
				t.Errorf("unmixed loss %.7f (err %v) equals the mixed one %.7f", l, err, want)
			}
		})
	}
}
