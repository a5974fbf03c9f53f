package strategy

import (
	"context"
	"math"
	"testing"

	"github.com/lcl-project/lcl/internal/lossref"
	"github.com/lcl-project/lcl/plugins/sdk"
)

var ln = math.Log

// Batch is what a loss sees for one model: logits (one row per example) and
// their labels.
type Batch struct {
	Logits [][]float64
	Labels []int
}

// planLoss is the loss (internal/lossref, the formula of docs/trainer.md)
// of one model's batch under a strategy's plan: the plan's coefficients and
// targets as the trainer applies them.
func planLoss(p *sdk.Plan, b Batch, teacher [][]float64, peers [][][]float64) (float64, error) {
	in := lossref.Input{Logits: b.Logits, Labels: b.Labels, Teacher: teacher, Peers: peers,
		Coefs: lossref.Coefs{SoftCE: p.Coefs.SoftCE, HardCE: p.Coefs.HardCE, KD: p.Coefs.KD, KDTemperature: p.Coefs.KDTemperature,
			Mutual: p.Coefs.Mutual}}
	if p.Targets != nil {
		for y := range p.Targets.Rows {
			row := make([]float64, p.Targets.Cols)
			for j, x := range p.Targets.Row(y) {
				row[j] = float64(x)
			}
			in.Targets = append(in.Targets, row)
		}
	}
	loss, _, err := lossref.Loss(in)
	return loss, err
}

// planFor runs a built-in strategy's Begin and returns its plan for (stage, 0).
func planFor(t *testing.T, name string, c, stage int, params map[string]string) *sdk.Plan {
	t.Helper()
	st, _ := New(name)
	ctx := context.Background()
	classes := make([]sdk.Class, c)
	for i := range classes {
		classes[i] = sdk.Class{Index: i, ID: string(rune('a' + i))}
	}
	if _, err := st.Begin(ctx, sdk.Run{Classes: classes, NumExamples: 2, Labels: []int{0, 1}, Epochs: 3, Params: params}); err != nil {
		t.Fatal(err)
	}
	p, err := st.Plan(ctx, sdk.PlanAt{Stage: stage})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBuiltinPlansGiveTheDocumentedLoss: each built-in strategy's plan,
// applied as the trainer applies it, gives the loss worked out by hand for
// that strategy (docs/plugins.md).
func TestBuiltinPlansGiveTheDocumentedLoss(t *testing.T) {
	// z = [0, ln2, ln3] → p = [1/6, 1/3, 1/2].
	z := []float64{0, ln(2), ln(3)}
	// Student at T=4: [0, 4ln2, 0] → softmax(z/4) = [1/4, 1/2, 1/4], softmax(z) = [1, 16, 1]/18.
	student := []float64{0, 4 * ln(2), 0}
	// Teacher [0, 0, 4ln2] → softmax(t/4) = [1/4, 1/4, 1/2].
	teacher := []float64{0, 0, 4 * ln(2)}
	uniform := []float64{0, 0, 0}

	tests := []struct {
		name     string
		strategy string
		params   map[string]string
		stage    int
		batch    Batch
		teacher  [][]float64
		peers    [][][]float64
		want     float64
	}{
		{
			name: "sl", strategy: "sl", batch: Batch{Logits: [][]float64{z}, Labels: []int{2}},
			want: ln(2), // −ln(1/2)
		},
		{
			// target (1−α)onehot + α/C = [1/30, 1/30, 28/30];
			// CE = (ln6 + ln3)/30 + 28/30·ln2.
			name: "ls α=0.1", strategy: "ls", batch: Batch{Logits: [][]float64{z}, Labels: []int{2}},
			want: (ln(6)+ln(3))/30 + 28*ln(2)/30,
		},
		{
			// (1−α)·CE(y=0) + α·T²·KL: CE = ln18; KL([¼,¼,½] ‖ [¼,½,¼]) = −¼ln2 + ½ln2 = ¼ln2.
			name: "kd α=0.9 T=4", strategy: "kd", stage: 1,
			batch: Batch{Logits: [][]float64{student}, Labels: []int{0}}, teacher: [][]float64{teacher},
			want: 0.1*ln(18) + 0.9*16*ln(2)/4,
		},
		{
			// two examples, batch mean. Ex. 1: self p = [1/6,1/3,1/2], peer uniform, y=1:
			// CE = ln3, KL(u ‖ p) = ⅓(ln2 + ln1 + ln(2/3)) = ⅓ln(4/3).
			// Ex. 2: self uniform, peer p, y=2: CE = ln3, KL(p ‖ u) = Σ p ln(3p) = ln3 − H(p),
			// H(p) = ⅙ln6 + ⅓ln3 + ½ln2.
			name: "dml", strategy: "dml",
			batch: Batch{Logits: [][]float64{z, uniform}, Labels: []int{1, 2}},
			peers: [][][]float64{{uniform, z}},
			want:  (ln(3) + ln(4./3)/3 + ln(3) + ln(3) - (ln(6)/6 + ln(3)/3 + ln(2)/2)) / 2,
		},
		{
			// kd's teacher stage is plain sl.
			name: "kd teacher", strategy: "kd", stage: 0, batch: Batch{Logits: [][]float64{z}, Labels: []int{0}},
			want: ln(6),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planFor(t, tt.strategy, 3, tt.stage, tt.params)
			if err := sdk.ValidatePlan(p, 3, 2, map[string]int{"dml": 2}[tt.strategy]+1); err != nil {
				t.Fatalf("plan invalid: %v", err)
			}
			got, err := planLoss(p, tt.batch, tt.teacher, tt.peers)
			if err != nil {
				t.Fatal(err)
			}
			// Targets are float32, as the trainer uses them: 1e-7.
			if math.Abs(got-tt.want) > 1e-7 {
				t.Fatalf("loss = %.15g, want %.15g", got, tt.want)
			}
		})
	}
}
