package lossref

import (
	"math"
	"math/rand/v2"
	"testing"
)

var ln = math.Log

// TestHandValues: logits chosen so every softmax is a simple fraction; the
// wanted values are worked out by hand in the comments.
func TestHandValues(t *testing.T) {
	// z = [0, ln2, ln3] → p = [1/6, 1/3, 1/2].
	z := []float64{0, ln(2), ln(3)}
	// At τ = 4: student [0, 4ln2, 0] → softmax(s/4) = [1/4, 1/2, 1/4];
	// teacher [0, 0, 4ln2] → softmax(t/4) = [1/4, 1/4, 1/2].
	student, teacher := []float64{0, 4 * ln(2), 0}, []float64{0, 0, 4 * ln(2)}
	uniform := []float64{0, 0, 0}
	T := [][]float64{{0.8, 0.1, 0.1}, {0.1, 0.8, 0.1}, {0, 0.25, 0.75}}
	tests := []struct {
		name string
		in   Input
		want float64
	}{
		{"hard", Input{Logits: [][]float64{z}, Labels: []int{2}, Coefs: Coefs{HardCE: 1}}, ln(2)},
		{"soft one-hot", Input{Logits: [][]float64{z}, Labels: []int{0}, Coefs: Coefs{SoftCE: 1}}, ln(6)},
		// −(¼·ln(1/3) + ¾·ln(1/2)) = ¼ln3 + ¾ln2.
		{"soft targets", Input{Logits: [][]float64{z}, Labels: []int{2}, Targets: T, Coefs: Coefs{SoftCE: 1}},
			ln(3)/4 + 3*ln(2)/4},
		// 0.1·CE(y=0) + 0.9·16·KL([¼,¼,½] ‖ [¼,½,¼]); softmax(s) = [1,16,1]/18 → CE = ln18;
		// KL = ¼ln(½) + ½ln2 = ¼ln2.
		{"kd τ=4", Input{Logits: [][]float64{student}, Labels: []int{0}, Teacher: [][]float64{teacher},
			Coefs: Coefs{HardCE: 0.1, KD: 0.9, KDTemperature: 4}}, 0.1*ln(18) + 0.9*16*ln(2)/4},
		// Peers uniform and p itself: KL(u ‖ p) = ⅓(ln2 + 0 + ln(2/3)) = ⅓ln(4/3), KL(p ‖ p) = 0; mean of 2.
		{"mutual", Input{Logits: [][]float64{z}, Labels: []int{0}, Peers: [][][]float64{{uniform}, {z}},
			Coefs: Coefs{Mutual: 1}}, ln(4./3) / 6},
		// Σ w·l / Σ w: (1·ln2 + ½·ln6) / 1.5.
		{"weights", Input{Logits: [][]float64{z, z}, Labels: []int{2, 0}, Weights: []float64{1, 0.5},
			Coefs: Coefs{SoftCE: 1}}, (ln(2) + 0.5*ln(6)) / 1.5},
		{"weights all zero", Input{Logits: [][]float64{z, z}, Labels: []int{2, 0}, Weights: []float64{0, 0},
			Coefs: Coefs{SoftCE: 1}}, 0},
	}
	for _, tt := range tests {
		got, _, err := Loss(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: loss %.15g, want %.15g", tt.name, got, tt.want)
		}
	}
}

// TestGradientMatchesFiniteDifferences: the hand-derived gradient of every
// term, alone and together, with weights, equals central differences of the
// loss.
func TestGradientMatchesFiniteDifferences(t *testing.T) {
	const n, c = 4, 5
	r := rand.New(rand.NewPCG(1, 2))
	rows := func(k int, scale float64) [][]float64 {
		out := make([][]float64, k)
		for i := range out {
			out[i] = make([]float64, c)
			for j := range out[i] {
				out[i][j] = r.NormFloat64() * scale
			}
		}
		return out
	}
	T := rows(c, 1)
	for _, row := range T { // a row-stochastic matrix with one zero
		s := 0.0
		for j := range row {
			row[j] = math.Abs(row[j])
			s += row[j]
		}
		for j := range row {
			row[j] /= s
		}
	}
	T[1][3] = 0
	base := Input{Logits: rows(n, 2), Labels: []int{0, 3, 1, 4}, Targets: T, Teacher: rows(n, 3),
		Peers: [][][]float64{rows(n, 1), rows(n, 1)}}
	for _, tc := range []struct {
		name string
		co   Coefs
		w    []float64
	}{
		{"soft", Coefs{SoftCE: 1}, nil},
		{"hard", Coefs{HardCE: 1}, nil},
		{"kd", Coefs{KD: 1, KDTemperature: 3}, nil},
		{"mutual", Coefs{Mutual: 1}, nil},
		{"all, weighted", Coefs{SoftCE: 0.4, HardCE: 0.3, KD: 0.7, KDTemperature: 2, Mutual: 0.5}, []float64{1, 0, 2.5, 0.5}},
	} {
		in := base
		in.Coefs, in.Weights = tc.co, tc.w
		_, grad, err := Loss(in)
		if err != nil {
			t.Fatal(err)
		}
		const h = 1e-6
		for i := range n {
			for j := range c {
				z := in.Logits[i][j]
				in.Logits[i][j] = z + h
				up, _, _ := Loss(in)
				in.Logits[i][j] = z - h
				down, _, _ := Loss(in)
				in.Logits[i][j] = z
				if fd := (up - down) / (2 * h); math.Abs(fd-grad[i][j]) > 1e-7 {
					t.Errorf("%s: d/dz[%d][%d] = %.9f, finite difference %.9f", tc.name, i, j, grad[i][j], fd)
				}
			}
		}
	}
}
