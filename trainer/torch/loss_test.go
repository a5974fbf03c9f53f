//go:build cgo

package torch

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lcl-project/lcl/internal/lossref"
)

// The loss that trains (loss.hpp) is held against internal/lossref, a plain
// float64 computation derived by hand from docs/trainer.md, for every term,
// both on its own (value and gradient: internal/shimloss) and through real
// training steps (each peer's reported loss and its parameter update).

func refCoefs(c Coefs) lossref.Coefs {
	return lossref.Coefs{SoftCE: float64(c.SoftCE), HardCE: float64(c.HardCE), KD: float64(c.KD), KDTemperature: float64(c.KDTemperature),
		Mutual: float64(c.Mutual)}
}

// linearLogits is Wx+b for the n rows of x (W is c×d, row-major).
func linearLogits(W, b, x []float32, n, d, c int) [][]float64 {
	z := make([][]float64, n)
	for i := range n {
		z[i] = make([]float64, c)
		for k := range c {
			z[i][k] = float64(b[k])
			for j := range d {
				z[i][k] += float64(W[k*d+j]) * float64(x[i*d+j])
			}
		}
	}
	return z
}

// linearGrads turns the gradient g of a linear model's logits into the
// gradients of its weight (Σ_i g_i x_iᵀ) and bias (Σ_i g_i).
func linearGrads(g [][]float64, x []float32, d int) (gW, gb []float64) {
	c := len(g[0])
	gW, gb = make([]float64, c*d), make([]float64, c)
	for i, gi := range g {
		for k := range c {
			gb[k] += gi[k]
			for j := range d {
				gW[k*d+j] += gi[k] * float64(x[i*d+j])
			}
		}
	}
	return gW, gb
}

// TestTrainStepMatchesReference: a training step of K linear peers (plain
// SGD at learning rate lr) reports, for each peer, the reference loss of its
// logits, and moves its parameters by −lr × the reference gradient of that
// loss alone: the peers' predictions in the mutual term are constants, so a
// peer's update does not depend on how the others' losses change.
func TestTrainStepMatchesReference(t *testing.T) {
	const n, d, c, lr = 6, 5, 4, 0.5
	r := rand.New(rand.NewPCG(11, 12))
	x := randn(r, n*d)
	y := []int64{3, 0, 2, 1, 3, 0}
	T := lossref.NearbyTargets(c)
	tt, err := NewTensor(T, []int64{c, c}, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer tt.Close()
	newLinear := func(seed uint64) *Model {
		if err := ManualSeed(seed); err != nil {
			t.Fatal(err)
		}
		m, err := NewModel(mlpSpec(1, 1, d, c), "cpu")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	teacher := newLinear(99)
	defer teacher.Close()
	tp := stateFloats(t, teacher)
	tlogits := linearLogits(tp["fc.weight"], tp["fc.bias"], x, n, d, c)
	w := []float32{1, 2, 0, 0.5, 1, 3}
	for _, tc := range []struct {
		name    string
		peers   int
		co      Coefs
		targets bool
		w       []float32
	}{
		{"soft targets", 1, Coefs{SoftCE: 1}, true, nil},
		{"hard", 1, Coefs{HardCE: 1}, false, nil},
		{"kd τ=3", 1, Coefs{HardCE: 0.2, KD: 0.8, KDTemperature: 3}, false, nil},
		{"mutual, three peers", 3, Coefs{HardCE: 1, Mutual: 1}, false, nil},
		{"every term weighted, two peers", 2, Coefs{SoftCE: 0.5, HardCE: 0.2, KD: 0.6, KDTemperature: 2, Mutual: 0.7}, true, w},
		{"all weights zero", 2, Coefs{SoftCE: 1, Mutual: 1}, true, make([]float32, n)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var models []*Model
			var optims []*Optimizer
			for k := range tc.peers {
				m := newLinear(uint64(k + 1))
				defer m.Close()
				o, err := NewSGD(m, 0, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				defer o.Close()
				models, optims = append(models, m), append(optims, o)
			}
			before := make([]map[string][]float32, tc.peers)
			z := make([][][]float64, tc.peers)
			for k, m := range models {
				before[k] = stateFloats(t, m)
				z[k] = linearLogits(before[k]["fc.weight"], before[k]["fc.bias"], x, n, d, c)
			}
			step := &Step{Models: models, Optims: optims, Coefs: tc.co, LR: lr}
			if tc.targets {
				step.Targets = tt
			}
			if tc.co.KD != 0 {
				step.Teacher = teacher
			}
			res, err := trainStep(newEngine(t), step, Input{X: x, N: n, C: 1, H: 1, W: d, Y: y, Weights: tc.w})
			if err != nil {
				t.Fatal(err)
			}
			for k, m := range models {
				ref := lossref.Input{Logits: z[k], Labels: lossref.Labels(y), Weights: lossref.Float64s(tc.w), Coefs: refCoefs(tc.co)}
				if tc.targets {
					ref.Targets = lossref.Rows(T, c, c)
				}
				if tc.co.KD != 0 {
					ref.Teacher = tlogits
				}
				for j := range tc.peers {
					if j != k {
						ref.Peers = append(ref.Peers, z[j])
					}
				}
				want, g, err := lossref.Loss(ref)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(float64(res.Loss[k])-want) > 1e-5*math.Max(1, math.Abs(want)) {
					t.Errorf("peer %d: loss %.7f, want %.7f", k, res.Loss[k], want)
				}
				gW, gb := linearGrads(g, x, d)
				after := stateFloats(t, m)
				for _, p := range []struct {
					name string
					g    []float64
				}{{"fc.weight", gW}, {"fc.bias", gb}} {
					for i, v := range after[p.name] {
						want := float64(before[k][p.name][i]) - lr*p.g[i]
						if math.Abs(float64(v)-want) > 2e-6 {
							t.Fatalf("peer %d: %s[%d] = %.7f after the step, want %.7f", k, p.name, i, v, want)
						}
					}
				}
			}
		})
	}
}
