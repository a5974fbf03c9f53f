package trainer

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/suggest"
)

// Overrides replace settings of a preset (lcl train's --epochs, --lr, …);
// a nil field keeps the preset's.
type Overrides struct {
	Epochs, Batch, StepSize, Warmup  *int
	LR, Momentum, WeightDecay, Gamma *float64
	Nesterov                         *bool
	Schedule                         *string
	Milestones                       []int     // nil keeps the preset's
	Optimizer                        *string   // one of Optimizers
	Betas                            []float64 // the optimizer's beta1, beta2
	Eps                              *float64  // the optimizer's eps
	// OptimParams are the optimizer's parameters by name, as given
	// (--optim-param NAME=VALUE).
	OptimParams            map[string]string
	ClipGradNorm, EMADecay *float64
}

// Check refuses the overrides that are wrong whatever the preset they are
// applied to, so that a run is refused before it reads its data: a count
// below 1, a negative rate, an optimizer lcl does not have, a momentum the
// optimizer given does not have. Each error names the flag, the value and
// what is accepted.
func (o Overrides) Check() error {
	for _, c := range []struct {
		name string
		v    *int
	}{{"epochs", o.Epochs}, {"batch", o.Batch}, {"step-size", o.StepSize}} {
		if c.v != nil && *c.v <= 0 {
			return fmt.Errorf("--%s %d: want a whole number ≥ 1", c.name, *c.v)
		}
	}
	if o.Warmup != nil && *o.Warmup < 0 {
		return fmt.Errorf("--warmup %d: want ≥ 0 epochs (0: none)", *o.Warmup)
	}
	if o.Gamma != nil && !(*o.Gamma > 0) {
		return fmt.Errorf("--gamma %g: want > 0 (the factor the learning rate is multiplied by at each step)", *o.Gamma)
	}
	for _, c := range []struct {
		name string
		v    *float64
	}{{"momentum", o.Momentum}, {"weight-decay", o.WeightDecay}, {"clip-grad-norm", o.ClipGradNorm}} {
		if c.v != nil && !(*c.v >= 0) {
			return fmt.Errorf("--%s %g: want ≥ 0", c.name, *c.v)
		}
	}
	if o.LR != nil && !(*o.LR > 0) {
		return fmt.Errorf("--lr %g: want > 0", *o.LR)
	}
	if o.EMADecay != nil && !(*o.EMADecay >= 0 && *o.EMADecay < 1) {
		return fmt.Errorf("--ema-decay %g: want 0 ≤ decay < 1 (0: none; e.g. 0.9998)", *o.EMADecay)
	}
	if o.Schedule != nil && !slices.Contains(ScheduleKinds, *o.Schedule) {
		return fmt.Errorf("--schedule %q: want %s%s", *o.Schedule, strings.Join(ScheduleKinds, ", "), suggest.DidYouMean(*o.Schedule, ScheduleKinds))
	}
	if o.Milestones != nil && !slices.IsSorted(o.Milestones) {
		return fmt.Errorf("--milestones %s: want increasing epochs (e.g. 60,120,160)", joinInts(o.Milestones))
	}
	if o.Optimizer == nil {
		return nil
	}
	k, err := optimizerFlag(*o.Optimizer)
	if err != nil {
		return err
	}
	alt := ""
	if k.Has("beta1") {
		alt = ": its moments decay at --betas B1,B2 (default 0.9,0.999)"
	}
	if o.Momentum != nil && *o.Momentum != 0 && !k.Has("momentum") {
		return fmt.Errorf("--optimizer %s has no --momentum (given %g)%s; drop --momentum, or use --optimizer sgd", k.Name, *o.Momentum, alt)
	}
	if o.Nesterov != nil && *o.Nesterov && !k.Has("nesterov") {
		return fmt.Errorf("--optimizer %s has no --nesterov momentum: drop --nesterov, or use --optimizer sgd", k.Name)
	}
	return nil
}

// optimizerFlag is the optimizer --optimizer names; the error names the
// choices and the nearest ones.
func optimizerFlag(name string) (Optimizer, error) {
	k, err := OptimizerByName(name)
	if err == nil {
		return k, nil
	}
	return Optimizer{}, fmt.Errorf("--optimizer %s: want %s%s", name, OptimizerNames(), suggest.DidYouMean(name, optimizerNames()))
}

// Apply returns the preset's optimisation for a run of world data-parallel
// processes (see For) with the overrides, checked. Switching the schedule to
// step or multistep from another kind sets gamma to 0.1 unless Gamma is given.
func (p Preset) Apply(world int, o Overrides) (Optim, error) {
	batch := 0
	if o.Batch != nil {
		batch = *o.Batch
	}
	op := p.For(world, o.Batch != nil, batch, o.LR != nil)
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	setF := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&op.Epochs, o.Epochs)
	setF(&op.Schedule.LR, o.LR)
	setF(&op.Momentum, o.Momentum)
	setF(&op.WeightDecay, o.WeightDecay)
	if o.Nesterov != nil {
		op.Nesterov = *o.Nesterov
	}
	if o.Schedule != nil {
		op.Schedule.Kind = *o.Schedule
		if *o.Schedule != p.Schedule.Kind && (*o.Schedule == "step" || *o.Schedule == "multistep") && o.Gamma == nil {
			op.Schedule.Gamma = 0.1
		}
	}
	if o.Milestones != nil {
		op.Schedule.Milestones = o.Milestones
	}
	setF(&op.Schedule.Gamma, o.Gamma)
	set(&op.Schedule.StepSize, o.StepSize)
	set(&op.Schedule.Warmup, o.Warmup)
	setF(&op.ClipNorm, o.ClipGradNorm)
	setF(&op.EMADecay, o.EMADecay)
	if err := o.Check(); err != nil {
		return Optim{}, err
	}
	// A schedule's own settings given for another schedule would be
	// ignored: refused, naming the schedule the run has.
	kind := op.Schedule.Kind
	whose := "--schedule " + kind
	if o.Schedule == nil {
		whose = "the preset's schedule, " + kind
	}
	switch {
	case o.Milestones != nil && kind != "multistep":
		return Optim{}, fmt.Errorf("--milestones %s applies to --schedule multistep, and this run has %s: add --schedule multistep, or drop --milestones", joinInts(o.Milestones), whose)
	case o.StepSize != nil && kind != "step":
		return Optim{}, fmt.Errorf("--step-size %d applies to --schedule step, and this run has %s: add --schedule step, or drop --step-size", *o.StepSize, whose)
	case o.Gamma != nil && kind != "step" && kind != "multistep":
		return Optim{}, fmt.Errorf("--gamma %g applies to --schedule step or multistep, and this run has %s: add one of them, or drop --gamma", *o.Gamma, whose)
	}
	if err := o.applyOptimizer(p.Optimizer, &op); err != nil {
		return Optim{}, err
	}
	if op.Epochs <= 0 || op.Batch <= 0 {
		return Optim{}, fmt.Errorf("--epochs %d, --batch %d: want both ≥ 1", op.Epochs, op.Batch)
	}
	if op.Momentum < 0 || op.WeightDecay < 0 {
		return Optim{}, fmt.Errorf("--momentum and --weight-decay must be ≥ 0")
	}
	if err := op.Validate(); err != nil {
		return Optim{}, err
	}
	return op, nil
}

// applyOptimizer sets op's optimizer and its parameters: another optimizer
// than the preset's (presetKind) starts from its defaults (the preset's
// parameters are its own optimizer's), and one without momentum from no
// momentum unless --momentum or --nesterov is given (which it then refuses).
func (o Overrides) applyOptimizer(presetKind string, op *Optim) error {
	if o.Optimizer != nil {
		op.Optimizer = *o.Optimizer
	}
	k, err := OptimizerByName(op.Optimizer)
	if err != nil {
		return err
	}
	if o.Optimizer != nil && *o.Optimizer != presetKind {
		op.Params = nil
		if !k.Has("momentum") && o.Momentum == nil {
			op.Momentum = 0
		}
		if !k.Has("nesterov") && o.Nesterov == nil {
			op.Nesterov = false
		}
	}
	set := func(flag, name string, v float64) error {
		if ownParam(name) {
			return fmt.Errorf("%s: set %s with --%s", flag, name, strings.ReplaceAll(name, "_", "-"))
		}
		if !k.Has(name) {
			return fmt.Errorf("%s: optimizer %s has no parameter %s (its parameters: %s)", flag, k.Name, name,
				strings.Join(k.ParamNames(), ", "))
		}
		if op.Params == nil {
			op.Params = map[string]float64{}
		}
		op.Params[name] = v
		return nil
	}
	var errs []error
	if o.Betas != nil {
		errs = append(errs, set("--betas", "beta1", o.Betas[0]), set("--betas", "beta2", o.Betas[1]))
	}
	if o.Eps != nil {
		errs = append(errs, set("--eps", "eps", *o.Eps))
	}
	for _, name := range slices.Sorted(maps.Keys(o.OptimParams)) {
		v, err := strconv.ParseFloat(o.OptimParams[name], 64)
		if err != nil {
			return fmt.Errorf("--optim-param %s=%s: want a number", name, o.OptimParams[name])
		}
		errs = append(errs, set("--optim-param "+name, name, v))
	}
	return errors.Join(errs...)
}

// ParseBetas parses Adam's "0.9,0.999" (--betas).
func ParseBetas(s string) ([]float64, error) {
	f := strings.Split(s, ",")
	if len(f) == 2 {
		b1, err1 := strconv.ParseFloat(strings.TrimSpace(f[0]), 64)
		b2, err2 := strconv.ParseFloat(strings.TrimSpace(f[1]), 64)
		if err1 == nil && err2 == nil {
			return []float64{b1, b2}, nil
		}
	}
	return nil, fmt.Errorf("%q: want two numbers like 0.9,0.999", s)
}

// joinInts is "60,120,160".
func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
