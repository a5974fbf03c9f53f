package strategy

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lcl-project/lcl/plugins/sdk"
)

func matrix(rows [][]float64) *Matrix64 {
	m := &Matrix64{N: len(rows)}
	for _, r := range rows {
		m.Data = append(m.Data, r...)
	}
	return m
}

// simMatrix is rows as a float32 sdk matrix.
func simMatrix(rows [][]float64) *sdk.Matrix {
	m := sdk.NewMatrix(len(rows), len(rows[0]))
	for i, r := range rows {
		for j, x := range r {
			m.Set(i, j, float32(x))
		}
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// The worked example: ε = 0.5 and three classes, computed by hand with
// fractions (see the comments: v(0) = s/Σs, then the update three times).
func TestLCLWorkedExample(t *testing.T) {
	s := matrix([][]float64{
		{1, 0.5, 0.5}, // Σ=2    → v0 = [1/2, 1/4, 1/4]
		{0.2, 1, 0.6}, // Σ=1.8  → v0 = [1/9, 5/9, 1/3]
		{0, 0.25, 1},  // Σ=1.25 → v0 = [0, 1/5, 4/5]
	})
	want := [][][]float64{
		{{1. / 2, 1. / 4, 1. / 4}, {1. / 9, 5. / 9, 1. / 3}, {0, 1. / 5, 4. / 5}},
		// row 0: rest 1/2, den 1+½·½ = 5/4 → [4/5, 1/10, 1/10]
		// row 1: rest 4/9, den 11/9 → [1/22, 9/11, 3/22]
		// row 2: rest 1/5, den 11/10 → [0, 1/11, 10/11]
		{{4. / 5, 1. / 10, 1. / 10}, {1. / 22, 9. / 11, 3. / 22}, {0, 1. / 11, 10. / 11}},
		// row 0: rest 1/5, den 11/10 → [10/11, 1/22, 1/22]
		// row 1: rest 2/11, den 12/11 → [1/48, 11/12, 1/16]
		// row 2: rest 1/11, den 23/22 → [0, 1/23, 22/23]
		{{10. / 11, 1. / 22, 1. / 22}, {1. / 48, 11. / 12, 1. / 16}, {0, 1. / 23, 22. / 23}},
		// row 0: rest 1/11, den 23/22 → [22/23, 1/46, 1/46]
		// row 1: rest 1/12, den 25/24 → [1/100, 24/25, 3/100]
		// row 2: rest 1/23, den 47/46 → [0, 1/47, 46/47]
		{{22. / 23, 1. / 46, 1. / 46}, {1. / 100, 24. / 25, 3. / 100}, {0, 1. / 47, 46. / 47}},
	}
	v0 := LCLInitial(s)
	iter := v0.Clone()
	for tt, w := range want {
		if tt > 0 {
			LCLStep(iter, 0.5)
		}
		closed := LCLTargets(v0, 0.5, tt)
		for i := range w {
			for j := range w[i] {
				if !near(iter.At(i, j), w[i][j]) || !near(closed.At(i, j), w[i][j]) {
					t.Fatalf("epoch %d v[%d][%d]: step %.15g, closed form %.15g, hand %.15g", tt, i, j, iter.At(i, j), closed.At(i, j), w[i][j])
				}
			}
		}
	}
}

func randomSimilarity(r *rand.Rand, c int) *Matrix64 {
	s := &Matrix64{N: c, Data: make([]float64, c*c)}
	for i := 0; i < c; i++ {
		for j := 0; j < c; j++ {
			if i == j {
				s.Data[i*c+j] = 1
			} else {
				s.Data[i*c+j] = 0.01 + 0.98*r.Float64() // in (0,1): s(c,c)=1 is the strict row maximum
			}
		}
	}
	return s
}

func TestLCLProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 60; trial++ {
		c := 2 + r.IntN(40)
		eps := []float64{0.9, 0.99, 0.999, 1, 0.05 + 0.94*r.Float64()}[trial%5]
		v0 := LCLInitial(randomSimilarity(r, c))
		prevH := make([]float64, c)
		iter := v0.Clone()
		for tt := 0; tt <= 100; tt++ {
			if tt > 0 {
				LCLStep(iter, eps)
			}
			v := LCLTargets(v0, eps, tt)
			for i := 0; i < c; i++ {
				row := v.Row(i)
				sum, arg := 0.0, 0
				for j, x := range row {
					if x < 0 {
						t.Fatalf("C=%d ε=%g t=%d: v[%d][%d] = %g < 0", c, eps, tt, i, j, x)
					}
					if math.Abs(x-iter.At(i, j)) > 1e-12 {
						t.Fatalf("C=%d ε=%g t=%d: closed form %g != iterated %g", c, eps, tt, x, iter.At(i, j))
					}
					sum += x
					if x > row[arg] {
						arg = j
					}
				}
				if math.Abs(sum-1) > 1e-12 {
					t.Fatalf("C=%d ε=%g t=%d: row %d sums to %.15g", c, eps, tt, i, sum)
				}
				if arg != i {
					t.Fatalf("C=%d ε=%g t=%d: row %d argmax %d", c, eps, tt, i, arg)
				}
				for j, x := range row {
					if j != i && x >= row[i] {
						t.Fatalf("C=%d ε=%g t=%d: row %d: v[%d]=%g ties the true class", c, eps, tt, i, j, x)
					}
				}
				h := Entropy(row)
				if tt > 0 && !(h < prevH[i]) {
					t.Fatalf("C=%d ε=%g t=%d: row %d entropy %.15g not below %.15g", c, eps, tt, i, h, prevH[i])
				}
				prevH[i] = h
			}
		}
		// Convergence to one-hot: the off-target mass goes to 0 (like 1/t for ε=1).
		for _, tt := range []int{1000, 100000, 10000000} {
			v := LCLTargets(v0, eps, tt)
			bound := 2.0 / float64(tt) // R(t) ≤ 1/(u0 + t) < 1/t for every ε ≤ 1
			for i := 0; i < c; i++ {
				if 1-v.At(i, i) > bound {
					t.Fatalf("C=%d ε=%g t=%d: true-class mass %g, want ≥ 1−%g", c, eps, tt, v.At(i, i), bound)
				}
			}
		}
	}
}

func TestLCLManyClassesJump(t *testing.T) {
	// method-notes: with many classes v_c(0) is tiny and after the first update ≈ 1/(1+ε).
	c := 1000
	s := &Matrix64{N: c, Data: make([]float64, c*c)}
	for i := range s.Data {
		s.Data[i] = 0.3
	}
	for i := 0; i < c; i++ {
		s.Data[i*c+i] = 1
	}
	v := LCLTargets(LCLInitial(s), 0.99, 1)
	if got, want := v.At(0, 0), 1/(1+0.99*(1-1/(1+0.3*999))); math.Abs(got-want) > 1e-12 || got < 0.49 || got > 0.51 {
		t.Fatalf("v_c(1) = %g, want %g ≈ 1/(1+ε)", got, want)
	}
}

func TestSmoothed(t *testing.T) {
	m := Smoothed(4, 0.1)
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			want := 0.025
			if i == j {
				want = 0.925
			}
			if float32(want) != m.At(i, j) {
				t.Fatalf("ls[%d][%d] = %g, want %g", i, j, m.At(i, j), want)
			}
		}
	}
}

func TestCheckSimilarity(t *testing.T) {
	tests := []struct {
		name string
		s    *sdk.Matrix
		ok   bool
	}{
		{"fine", simMatrix([][]float64{{1, 0.2}, {0.2, 1}}), true},
		{"negative", simMatrix([][]float64{{1, -0.2}, {0.2, 1}}), false},
		{"zero row", simMatrix([][]float64{{0, 0}, {0.2, 1}}), false},
		{"nan", simMatrix([][]float64{{1, math.NaN()}, {0.2, 1}}), false},
		{"shape", simMatrix([][]float64{{1, 0.2, 0}, {0.2, 1, 0}}), false},
	}
	for _, tt := range tests {
		if err := CheckSimilarity(tt.s, 2); (err == nil) != tt.ok {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
}

// The LCL strategy's plans are LCLTargets(LCLInitial(s)) rounded once, bit
// for bit, for epochs of either form of lclRest and with negatives clipped.
func TestLCLPlansAreTheClosedFormRounded(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const c = 37
	sim := sdk.NewMatrix(c, c)
	for i := range sim.Data {
		sim.Data[i] = r.Float32()
	}
	sim.Data[5] = -0.25 // clipped
	for i := 0; i < c; i++ {
		sim.Set(i, i, 1)
	}
	clipped := Float64(sim)
	for i, x := range clipped.Data {
		clipped.Data[i] = max(x, 0)
	}
	v0 := LCLInitial(clipped)
	classes := make([]sdk.Class, c)
	for i := range classes {
		classes[i] = sdk.Class{Index: i}
	}
	ctx := context.Background()
	st := &LCL{}
	if _, err := st.Begin(ctx, sdk.Run{Classes: classes, Similarity: sim, Epochs: 200, Params: map[string]string{"epsilon": "0.9", "clip-negative": "true"}}); err != nil {
		t.Fatal(err)
	}
	if sim.Data[5] != -0.25 {
		t.Fatal("Begin changed the run's matrix")
	}
	for _, e := range []int{0, 1, 2, 30, 64, 65, 199} {
		p, err := st.Plan(ctx, sdk.PlanAt{Epoch: e})
		if err != nil {
			t.Fatal(err)
		}
		if p.Targets.Data != nil {
			t.Fatalf("epoch %d: targets held whole, want rows computed as sent", e)
		}
		want := LCLTargets(v0, 0.9, e)
		got := p.Targets.Dense()
		for k, x := range want.Data {
			if got.Data[k] != float32(x) {
				t.Fatalf("epoch %d (%d,%d): %v, closed form %v", e, k/c, k%c, got.Data[k], float32(x))
			}
		}
		if err := sdk.ValidatePlan(p, c, 0, 1); err != nil {
			t.Fatalf("epoch %d: %v", e, err)
		}
	}
}
