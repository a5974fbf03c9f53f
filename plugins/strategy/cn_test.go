package strategy

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// Two classes in 8-D, each: a dense core of 75 points (σ = 0.05 around the
// class centre), a small second cluster of 20 points (same spread, 5 away),
// and 5 outliers scattered far (radius 8–12 in random directions).
// Within-cluster pairs are 60.25% of the n² distances, so d_c falls at the
// top of the within-cluster distances: core points have ρ ≈ 74, the second
// cluster ρ ≈ 19, outliers ρ = 0. Expected: core → clean, second cluster →
// noisy, outliers → very noisy.
func syntheticFeatures(r *rand.Rand) (x []float32, labels, truth []int, dim int) {
	dim = 8
	groups := []struct {
		n    int
		kind int
	}{{75, Clean}, {20, Noisy}, {5, VeryNoisy}}
	for class := 0; class < 2; class++ {
		centre := make([]float64, dim)
		for k := range centre {
			centre[k] = float64(20*class) + r.NormFloat64()
		}
		second := append([]float64(nil), centre...)
		second[0] += 5
		for _, g := range groups {
			for i := 0; i < g.n; i++ {
				dir := make([]float64, dim)
				norm := 0.0
				for k := range dir {
					dir[k] = r.NormFloat64()
					norm += dir[k] * dir[k]
				}
				norm = math.Sqrt(norm)
				var radius float64
				switch g.kind {
				case Clean:
					radius = 0.05 * norm
				case Noisy:
					radius = 0.05 * norm
				default:
					radius = 8 + 4*r.Float64()
				}
				c := centre
				if g.kind == Noisy {
					c = second
				}
				for k := range dir {
					x = append(x, float32(c[k]+radius*dir[k]/norm))
				}
				labels = append(labels, class)
				truth = append(truth, g.kind)
			}
		}
	}
	// Shuffle so subsets are not contiguous.
	n := len(labels)
	for i := n - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		labels[i], labels[j] = labels[j], labels[i]
		truth[i], truth[j] = truth[j], truth[i]
		for k := 0; k < dim; k++ {
			x[i*dim+k], x[j*dim+k] = x[j*dim+k], x[i*dim+k]
		}
	}
	return x, labels, truth, dim
}

func TestCNSplitsCoreHaloOutliers(t *testing.T) {
	x, labels, truth, dim := syntheticFeatures(rand.New(rand.NewPCG(7, 7)))
	ranks := SplitByDensity(x, dim, labels, 2, 0.6)
	for i, r := range ranks {
		if r != truth[i] {
			t.Fatalf("example %d (class %d): subset %d, want %d", i, labels[i], r, truth[i])
		}
	}
}

func TestDensitiesByHand(t *testing.T) {
	// Points on a line at 0, 1, 3: distances (row-major, 9 values)
	// 0 1 3 / 1 0 2 / 3 2 0 → sorted 0 0 0 1 1 2 2 3 3; ⌊0.6·9⌋ = 5 → d_c = 2.
	// ρ = #{d < 2} − 1: point 0: {0,1} → 1; point 1: {1,0} → 1; point 2: {0} → 0.
	rho, dc := Densities([]float32{0, 1, 3}, 3, 1, 0.6)
	if dc != 2 || rho[0] != 1 || rho[1] != 1 || rho[2] != 0 {
		t.Fatalf("ρ = %v, d_c = %g; want [1 1 0], 2", rho, dc)
	}
}

func TestDensitySubsetsFewValues(t *testing.T) {
	tests := []struct {
		rho  []int
		want []int
	}{
		{[]int{4, 4, 4}, []int{0, 0, 0}},
		{[]int{5, 1, 5}, []int{0, 1, 0}},
		{[]int{9, 8, 9, 1, 0, 5, 5, 4}, []int{0, 0, 0, 2, 2, 1, 1, 1}},
	}
	for _, tt := range tests {
		got := DensitySubsets(tt.rho, 3)
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("DensitySubsets(%v) = %v, want %v", tt.rho, got, tt.want)
				break
			}
		}
	}
}

func TestCNCurriculum(t *testing.T) {
	x, labels, truth, dim := syntheticFeatures(rand.New(rand.NewPCG(7, 7)))
	n := len(labels)
	ctx := context.Background()
	cn := &CN{}
	stages, err := cn.Begin(ctx, sdk.Run{Classes: []sdk.Class{{ID: "a"}, {Index: 1, ID: "b"}}, NumExamples: n, Labels: labels, Epochs: 9})
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 || !stages[0].Features || stages[1].Epochs != 9 {
		t.Fatalf("stages = %+v", stages)
	}
	if _, err := cn.Plan(ctx, sdk.PlanAt{Stage: 1}); err == nil {
		t.Fatal("curriculum plan without features: no error")
	}
	// Stream in uneven chunks.
	var chunks sdk.ChunkSlice
	for lo := 0; lo < n; lo += 37 {
		hi := min(lo+37, n)
		c := &sdk.FeatureChunk{Dim: dim, Data: x[lo*dim : hi*dim]}
		for i := lo; i < hi; i++ {
			c.Indices = append(c.Indices, i)
		}
		chunks = append(chunks, c)
	}
	if err := cn.Features(ctx, &chunks); err != nil {
		t.Fatal(err)
	}
	for epoch := 0; epoch < 9; epoch++ {
		p, err := cn.Plan(ctx, sdk.PlanAt{Stage: 1, Epoch: epoch})
		if err != nil {
			t.Fatal(err)
		}
		if err := sdk.ValidatePlan(p, 2, n, 1); err != nil {
			t.Fatal(err)
		}
		phase := epoch / 3
		in := map[int]bool{}
		for _, i := range p.Subset {
			in[i] = true
		}
		for i := 0; i < n; i++ {
			wantIn := truth[i] <= phase
			wantW := map[bool]float64{true: 1, false: 0.5}[truth[i] == Clean]
			if !wantIn {
				wantW = 0
			}
			if in[i] != wantIn || p.Weights[i] != wantW {
				t.Fatalf("epoch %d example %d (subset %d): in=%v weight=%g, want in=%v weight=%g", epoch, i, truth[i], in[i], p.Weights[i], wantIn, wantW)
			}
		}
	}
}
