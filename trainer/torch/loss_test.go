//go:build cgo

package torch

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lcl-project/lcl/internal/lossref"
)

// The loss that trains (step.hpp) is held against internal/lossref, a plain
// float64 computation derived by hand from docs/trainer.md, for every term,
// both through lt_loss (value and gradient) and through real training steps
// (each peer's reported loss and its parameter update).

func rows64(v []float32, n, c int) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, c)
		for j := range c {
			out[i][j] = float64(v[i*c+j])
		}
	}
	return out
}

func labels(y []int64) []int {
	out := make([]int, len(y))
	for i, v := range y {
		out[i] = int(v)
	}
	return out
}

func floats64(v []float32) []float64 {
	if v == nil {
		return nil
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func refCoefs(c Coefs) lossref.Coefs {
	return lossref.Coefs{Soft: float64(c.Soft), Hard: float64(c.Hard), KD: float64(c.KD), Temp: float64(c.KDTemp),
		Mutual: float64(c.Mutual)}
}

// similarityTargets is a row-stochastic C×C matrix with mass on nearby
// classes (and one zero entry).
func similarityTargets(c int) []float32 {
	T := make([]float32, c*c)
	for i := range c {
		s := 0.0
		for j := range c {
			s += 1 / (1 + math.Abs(float64(i-j)))
		}
		for j := range c {
			T[i*c+j] = float32(1 / (1 + math.Abs(float64(i-j))) / s)
		}
	}
	T[c+c-1] = 0
	return T
}

func TestLossMatchesReference(t *testing.T) {
	const n, c = 5, 4
	r := rand.New(rand.NewPCG(1, 2))
	z, tl := randn(r, n*c), randn(r, n*c)
	peers := [][]float32{randn(r, n*c), randn(r, n*c)}
	y := []int64{0, 3, 1, 1, 2}
	T := similarityTargets(c)
	tt, err := NewTensor(T, []int64{c, c}, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer tt.Close()
	w := []float32{1, 0.5, 2, 0, 1}
	for _, tc := range []struct {
		name    string
		co      Coefs
		w       []float32
		teacher bool
		peers   int
	}{
		{"soft", Coefs{Soft: 1}, nil, false, 0},
		{"soft weighted", Coefs{Soft: 1}, w, false, 0},
		{"hard", Coefs{Hard: 1}, nil, false, 0},
		{"soft+hard", Coefs{Soft: 0.7, Hard: 0.3}, nil, false, 0},
		{"kd τ=4", Coefs{Hard: 0.1, KD: 0.9, KDTemp: 4}, nil, true, 0},
		{"kd τ=2 weighted", Coefs{Soft: 0.5, KD: 0.5, KDTemp: 2}, w, true, 0},
		{"mutual, one peer", Coefs{Hard: 1, Mutual: 1}, nil, false, 1},
		{"mutual, two peers", Coefs{Hard: 1, Mutual: 0.6}, nil, false, 2},
		{"every term weighted", Coefs{Soft: 0.4, Hard: 0.3, KD: 0.7, KDTemp: 3, Mutual: 0.5}, w, true, 2},
		{"all weights zero", Coefs{Soft: 1, Mutual: 1}, make([]float32, n), false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := LossInput{Logits: z, N: n, C: c, Y: y, Targets: tt, Weights: tc.w, Coefs: tc.co, Peers: peers[:tc.peers]}
			ref := lossref.Input{Logits: rows64(z, n, c), Labels: labels(y), Targets: rows64(T, c, c),
				Weights: floats64(tc.w), Coefs: refCoefs(tc.co)}
			if tc.teacher {
				in.Teacher, ref.Teacher = tl, rows64(tl, n, c)
			}
			for _, p := range peers[:tc.peers] {
				ref.Peers = append(ref.Peers, rows64(p, n, c))
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
	T := similarityTargets(c)
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
		{"soft targets", 1, Coefs{Soft: 1}, true, nil},
		{"hard", 1, Coefs{Hard: 1}, false, nil},
		{"kd τ=3", 1, Coefs{Hard: 0.2, KD: 0.8, KDTemp: 3}, false, nil},
		{"mutual, three peers", 3, Coefs{Hard: 1, Mutual: 1}, false, nil},
		{"every term weighted, two peers", 2, Coefs{Soft: 0.5, Hard: 0.2, KD: 0.6, KDTemp: 2, Mutual: 0.7}, true, w},
		{"all weights zero", 2, Coefs{Soft: 1, Mutual: 1}, true, make([]float32, n)},
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
			step := &Step{Models: models, Optims: optims, X: x, N: n, C: 1, H: 1, W: d, Y: y, Weights: tc.w,
				Coefs: tc.co, LR: lr}
			if tc.targets {
				step.Targets = tt
			}
			if tc.co.KD != 0 {
				step.Teacher = teacher
			}
			res, err := TrainStep(step)
			if err != nil {
				t.Fatal(err)
			}
			for k, m := range models {
				ref := lossref.Input{Logits: z[k], Labels: labels(y), Weights: floats64(tc.w), Coefs: refCoefs(tc.co)}
				if tc.targets {
					ref.Targets = rows64(T, c, c)
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
