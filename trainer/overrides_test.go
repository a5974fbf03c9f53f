package trainer

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestPresetApply(t *testing.T) {
	fm, err := PresetByName("fmnist-cnn") // 20 epochs, batch 128, cosine from 0.05
	if err != nil {
		t.Fatal(err)
	}
	pi := func(v int) *int { return &v }
	pf := func(v float64) *float64 { return &v }
	ps := func(v string) *string { return &v }

	op, err := fm.Apply(1, Overrides{})
	if err != nil || op.Epochs != fm.Epochs || op.Batch != fm.Batch || op.Schedule.LR != fm.Schedule.LR || op.Schedule.Kind != fm.Schedule.Kind {
		t.Fatalf("no overrides: %+v %v", op, err)
	}
	// To step from cosine: gamma 0.1 unless given.
	op, err = fm.Apply(1, Overrides{Schedule: ps("step"), StepSize: pi(5), Epochs: pi(3)})
	if err != nil || op.Schedule.Kind != "step" || op.Schedule.Gamma != 0.1 || op.Schedule.StepSize != 5 || op.Epochs != 3 {
		t.Fatalf("step: %+v %v", op, err)
	}
	op, err = fm.Apply(1, Overrides{Schedule: ps("multistep"), Milestones: []int{2, 4}, Gamma: pf(0.5)})
	if err != nil || op.Schedule.Gamma != 0.5 || len(op.Schedule.Milestones) != 2 {
		t.Fatalf("multistep: %+v %v", op, err)
	}
	// goyal scales the learning rate with the global batch unless it is given.
	g, err := PresetByName("goyal")
	if err != nil {
		t.Fatal(err)
	}
	scaled, err := g.Apply(4, Overrides{})
	given, err2 := g.Apply(4, Overrides{LR: pf(0.3)})
	if err != nil || err2 != nil || scaled.Batch != 4*g.WorkerBatch || scaled.Schedule.LR != g.Schedule.LR*float64(scaled.Batch)/float64(g.RefBatch) || given.Schedule.LR != 0.3 {
		t.Fatalf("goyal: %+v %+v %v %v", scaled, given, err, err2)
	}
	for _, tt := range []struct {
		o    Overrides
		want string
	}{
		{Overrides{Batch: pi(0)}, "--batch 0: want a whole number ≥ 1"},
		{Overrides{Epochs: pi(-1)}, "--epochs -1: want a whole number ≥ 1"},
		{Overrides{Optimizer: ps("adamx")}, "--optimizer adamx: want sgd, rmsprop, adam, adamw, radam or nadam; did you mean adam"},
		{Overrides{Optimizer: ps("adam"), Momentum: pf(0.9)}, "--optimizer adam has no --momentum (given 0.9): its moments decay at --betas B1,B2 (default 0.9,0.999); drop --momentum, or use --optimizer sgd"},
		{Overrides{Optimizer: ps("adam"), Nesterov: new(true)}, "--optimizer adam has no --nesterov momentum"},
		{Overrides{Momentum: pf(0), Nesterov: new(true)}, "nesterov needs a momentum"},
		{Overrides{Schedule: ps("poly")}, `--schedule "poly": want constant, step, multistep, cosine`},
		{Overrides{Schedule: ps("cosin")}, `--schedule "cosin": want constant, step, multistep, cosine; did you mean cosine?`},
		{Overrides{LR: pf(-1)}, "--lr -1: want > 0"},
		{Overrides{Warmup: pi(-1)}, "--warmup -1: want ≥ 0 epochs"},
		{Overrides{Schedule: ps("step"), StepSize: pi(0)}, "--step-size 0: want a whole number ≥ 1"},
		{Overrides{Schedule: ps("step"), Gamma: pf(0)}, "--gamma 0: want > 0"},
		{Overrides{Milestones: []int{5, 3}}, "--milestones 5,3: want increasing epochs"},
		// A schedule's own setting for another schedule (fm's preset: cosine).
		{Overrides{Milestones: []int{3, 5}}, "--milestones 3,5 applies to --schedule multistep, and this run has the preset's schedule, cosine"},
		{Overrides{Schedule: ps("step"), Milestones: []int{3, 5}}, "--milestones 3,5 applies to --schedule multistep, and this run has --schedule step"},
		{Overrides{StepSize: pi(3)}, "--step-size 3 applies to --schedule step"},
		{Overrides{Gamma: pf(0.5), Schedule: ps("constant")}, "--gamma 0.5 applies to --schedule step or multistep, and this run has --schedule constant"},
		{Overrides{Optimizer: ps("adamw"), Momentum: pf(0.9)}, "--optimizer adamw has no --momentum"},
		{Overrides{Betas: []float64{0.9, 0.99}}, "--betas: optimizer sgd has no parameter beta1 (its parameters: momentum, weight_decay, nesterov)"},
		{Overrides{Optimizer: ps("adam"), Betas: []float64{0.9, 1}}, "adam beta2 1: want 0 ≤ value < 1"},
		{Overrides{Optimizer: ps("radam"), OptimParams: map[string]string{"momentum_decay": "0.1"}}, "--optim-param momentum_decay: optimizer radam has no parameter momentum_decay"},
		{Overrides{Optimizer: ps("nadam"), OptimParams: map[string]string{"momentum_decay": "x"}}, "--optim-param momentum_decay=x: want a number"},
		{Overrides{OptimParams: map[string]string{"weight_decay": "0.1"}}, "--optim-param weight_decay: set weight_decay with --weight-decay"},
		{Overrides{Optimizer: ps("lamb")}, "--optimizer lamb: want sgd, rmsprop, adam, adamw, "},
		{Overrides{ClipGradNorm: pf(-1)}, "--clip-grad-norm -1: want ≥ 0"},
		{Overrides{EMADecay: pf(1)}, "--ema-decay 1: want 0 ≤ decay < 1"},
	} {
		if _, err := fm.Apply(1, tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.o, err, tt.want)
		}
	}
}

// Adam's settings: the preset's SGD momentum does not carry over, betas and
// epsilon are set or default, clipping and the moving average are kept.
func TestPresetApplyAdam(t *testing.T) {
	fm, err := PresetByName("fmnist-cnn") // SGD, momentum 0.9, Nesterov
	if err != nil {
		t.Fatal(err)
	}
	ps := func(s string) *string { return &s }
	pf := func(v float64) *float64 { return &v }
	o := Overrides{Optimizer: ps("adamw"), LR: pf(1e-3), ClipGradNorm: pf(1), EMADecay: pf(0.999)}
	op, err := fm.Apply(1, o)
	if err != nil || op.Momentum != 0 || op.Nesterov || op.ClipNorm != 1 || op.EMADecay != 0.999 || op.Optimizer != "adamw" || op.Params != nil {
		t.Fatalf("adamw: %+v %v", op, err)
	}
	o = Overrides{Optimizer: ps("adam"), Betas: []float64{0.8, 0.99}, Eps: pf(1e-6)}
	op, err = fm.Apply(1, o)
	if err != nil || !maps.Equal(op.Params, map[string]float64{"beta1": 0.8, "beta2": 0.99, "eps": 1e-6}) {
		t.Fatalf("adam: %+v %v", op, err)
	}
	// Any parameter by name; the preset's own (rmsprop's decay and
	// epsilon) are dropped with its optimizer.
	inc, err := PresetByName("inception-resnet-v2")
	if err != nil {
		t.Fatal(err)
	}
	o = Overrides{Optimizer: ps("nadam"), OptimParams: map[string]string{"momentum_decay": "0.01"}}
	op, err = inc.Apply(1, o)
	if err != nil || op.Momentum != 0 || !maps.Equal(op.Params, map[string]float64{"momentum_decay": 0.01}) {
		t.Fatalf("nadam: %+v %v", op, err)
	}
	o = Overrides{Eps: pf(0.5)}
	op, err = inc.Apply(1, o)
	if err != nil || !maps.Equal(op.Params, map[string]float64{"decay": 0.9, "eps": 0.5}) || op.Momentum != 0.9 {
		t.Fatalf("rmsprop: %+v %v", op, err)
	}
}

// ParseBetas reads --betas: two numbers, spaces allowed.
func TestParseBetas(t *testing.T) {
	if b, err := ParseBetas("0.8, 0.99"); err != nil || !slices.Equal(b, []float64{0.8, 0.99}) {
		t.Errorf("0.8, 0.99: %v %v", b, err)
	}
	for _, bad := range []string{"0.9", "0.9,x", "0.9,0.99,0.999", ""} {
		if _, err := ParseBetas(bad); err == nil || !strings.Contains(err.Error(), "want two numbers like 0.9,0.999") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
