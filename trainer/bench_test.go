package trainer

import (
	"context"
	"math"
	"strings"
	"testing"
)

// The step benchmark trains (a finite loss near ln(classes) from random
// weights), counts images per wall and per CPU second, and its mean loss
// does not depend on how often the metrics are read: reads in the middle of
// the timed steps reset the engine's sums, and the benchmark adds them up.
func TestMeasureSteps(t *testing.T) {
	b := StepBench{Model: "cnn:channels=4x8,fc=16", C: 1, H: 28, W: 28, Classes: 10, Batch: 8, Steps: 4, Warmup: 1,
		Device: "cpu", Seed: 3}
	every := b
	every.MetricsEvery = 1
	once := b
	once.MetricsEvery = 100
	a, err := MeasureSteps(context.Background(), every)
	if err != nil {
		t.Fatal(err)
	}
	c, err := MeasureSteps(context.Background(), once)
	if err != nil {
		t.Fatal(err)
	}
	if !(a.ImgPerSec > 0 && a.ImgPerCPUSec > 0 && a.StepMS > 0) {
		t.Errorf("rates %+v", a)
	}
	if !(a.Loss > 1 && a.Loss < 4) {
		t.Errorf("mean loss %v, want about ln 10 (random weights)", a.Loss)
	}
	if math.Abs(a.Loss-c.Loss) > 1e-6*a.Loss {
		t.Errorf("mean loss %v reading every step, %v reading once", a.Loss, c.Loss)
	}
	if _, err := MeasureSteps(context.Background(), StepBench{Model: "cnn", C: 1, H: 28, W: 28, Classes: 10, Batch: 1, Steps: 1}); err == nil {
		t.Error("batch 1 accepted")
	}
	// With mixing (bench/trainer.sh times its cost), the steps train on
	// mixed batches and targets: another loss, still finite.
	mixed := every
	mixed.Mix = Mixing{Mixup: 0.8, CutMix: 1}
	m, err := MeasureSteps(context.Background(), mixed)
	if err != nil {
		t.Fatal(err)
	}
	if !(m.Loss > 1 && m.Loss < 4) || math.Abs(m.Loss-a.Loss) < 1e-4 {
		t.Errorf("mixed mean loss %v, unmixed %v: want another finite loss", m.Loss, a.Loss)
	}
	// Compared in one process: both rates, and the cost from them.
	cmp := mixed
	cmp.MixCompare, cmp.Steps = true, 12 // a block of 10 and one of 2 each
	c2, err := MeasureSteps(context.Background(), cmp)
	if err != nil {
		t.Fatal(err)
	}
	if !(c2.ImgPerSec > 0 && c2.UnmixedImgPerSec > 0 && c2.UnmixedImgPerCPUSec > 0 && c2.StepMS > 0) ||
		math.Abs(c2.MixCostPct-100*(c2.UnmixedImgPerSec/c2.ImgPerSec-1)) > 1e-9 {
		t.Errorf("mixed against unmixed: %+v", c2)
	}
	if !(c2.Loss > 1 && c2.Loss < 4) {
		t.Errorf("mixed and unmixed mean loss %v", c2.Loss)
	}
	cmp.Mix = Mixing{}
	if _, err := MeasureSteps(context.Background(), cmp); err == nil || !strings.Contains(err.Error(), "needs mixup or CutMix") {
		t.Errorf("comparing without mixing: %v", err)
	}
	mixed.Mix.Mixup = -1
	if _, err := MeasureSteps(context.Background(), mixed); err == nil {
		t.Error("--mixup -1 accepted")
	}
}
