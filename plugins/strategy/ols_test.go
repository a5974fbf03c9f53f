package strategy

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// OLS by hand on 3 classes: epoch 0 is label smoothing's smoothing/(C−1)
// off the diagonal; epoch t's row y is the mean of the softmax rows the
// trainer summed for class y (sums / count), one-hot for a class it counted
// nothing for; the loss is α·hard + (1−α)·soft; its stage asks for the
// class probabilities.
func TestOLSByHand(t *testing.T) {
	ctx := context.Background()
	classes := []sdk.Class{{ID: "a"}, {Index: 1, ID: "b"}, {Index: 2, ID: "c"}}
	st, _ := New("ols")
	stages, err := st.Begin(ctx, sdk.Run{Classes: classes, NumExamples: 3, Labels: []int{0, 1, 2}, Epochs: 3,
		Params: map[string]string{"alpha": "0.3", "smoothing": "0.2"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 1 || !stages[0].ClassProbs {
		t.Fatalf("stages %+v: want one asking for class probabilities", stages)
	}
	p, err := st.Plan(ctx, sdk.PlanAt{})
	if err != nil {
		t.Fatal(err)
	}
	want0 := [][]float64{{0.8, 0.1, 0.1}, {0.1, 0.8, 0.1}, {0.1, 0.1, 0.8}}
	check := func(p *sdk.Plan, want [][]float64) {
		t.Helper()
		if math.Abs(p.Coefs.HardCE-0.3) > 1e-12 || math.Abs(p.Coefs.SoftCE-0.7) > 1e-12 {
			t.Errorf("coefficients %+v, want hard 0.3 soft 0.7", p.Coefs)
		}
		d := p.Targets.Dense()
		for i, row := range want {
			for j, v := range row {
				if math.Abs(float64(d.At(i, j))-v) > 1e-6 {
					t.Errorf("target[%d][%d] = %v, want %v", i, j, d.At(i, j), v)
				}
			}
		}
	}
	check(p, want0)
	// Class a: two correct examples with softmax (0.7,0.2,0.1) and
	// (0.5,0.3,0.2); class b: one, (0.1,0.6,0.3); class c: none.
	sums := []float64{1.2, 0.5, 0.3, 0.1, 0.6, 0.3, 0, 0, 0}
	counts := []int64{2, 1, 0}
	p, err = st.Plan(ctx, sdk.PlanAt{Epoch: 1, ClassProbSums: sums, ClassCounts: counts})
	if err != nil {
		t.Fatal(err)
	}
	check(p, [][]float64{{0.6, 0.25, 0.15}, {0.1, 0.6, 0.3}, {0, 0, 1}})
	for _, at := range []sdk.PlanAt{
		{Epoch: 2}, // no statistics after epoch 0
		{Epoch: 1, ClassProbSums: sums[:4], ClassCounts: counts}, // wrong size
	} {
		if _, err := st.Plan(ctx, at); err == nil || !strings.Contains(err.Error(), "epoch") {
			t.Errorf("%+v: error %v", at, err)
		}
	}
	for _, params := range []map[string]string{{"alpha": "1.5"}, {"smoothing": "1"}} {
		st, _ := New("ols")
		if _, err := st.Begin(ctx, sdk.Run{Classes: classes, NumExamples: 3, Labels: []int{0, 1, 2}, Epochs: 3, Params: params}); err == nil {
			t.Errorf("%v: no error", params)
		}
	}
}
