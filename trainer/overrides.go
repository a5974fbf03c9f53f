package trainer

import "fmt"

// Overrides replace settings of a preset (lcl train's --epochs, --lr, …);
// a nil field keeps the preset's.
type Overrides struct {
	Epochs, Batch, StepSize, Warmup  *int
	LR, Momentum, WeightDecay, Gamma *float64
	Nesterov                         *bool
	Schedule                         *string
	Milestones                       []int   // nil keeps the preset's
	Optimizer                        *string // sgd or rmsprop
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
	if o.Optimizer != nil {
		op.Optimizer = *o.Optimizer
	}
	if op.Epochs <= 0 || op.Batch <= 0 {
		return Optim{}, fmt.Errorf("--epochs and --batch must be > 0")
	}
	if op.Momentum < 0 || op.WeightDecay < 0 || (op.Nesterov && op.Momentum == 0) {
		return Optim{}, fmt.Errorf("--momentum and --weight-decay must be ≥ 0, and --nesterov needs a momentum")
	}
	if err := op.Validate(); err != nil {
		return Optim{}, err
	}
	return op, nil
}
