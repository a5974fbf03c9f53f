package trainer

import (
	"fmt"
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
	Optimizer                        *string   // sgd, rmsprop, adam or adamw
	Betas                            []float64 // adam, adamw: beta1, beta2
	Eps                              *float64  // adam, adamw: epsilon
	ClipGradNorm, EMADecay           *float64
}

// Optimizers are the names --optimizer takes.
var Optimizers = []string{"sgd", "rmsprop", "adam", "adamw"}

// Check refuses the overrides that are wrong whatever the preset they are
// applied to, so that a run is refused before it reads its data: a count
// below 1, a negative rate, an optimizer lcl does not have, a setting the
// optimizer given does not have. Each error names the flag, the value
// and what is accepted.
func (o Overrides) Check() error {
	for _, c := range []struct {
		name string
		v    *int
	}{{"epochs", o.Epochs}, {"batch", o.Batch}} {
		if c.v != nil && *c.v <= 0 {
			return fmt.Errorf("--%s %d: want a whole number ≥ 1", c.name, *c.v)
		}
	}
	for _, c := range []struct {
		name string
		v    *float64
	}{{"momentum", o.Momentum}, {"weight-decay", o.WeightDecay}} {
		if c.v != nil && !(*c.v >= 0) {
			return fmt.Errorf("--%s %g: want ≥ 0", c.name, *c.v)
		}
	}
	if o.Optimizer == nil {
		return nil
	}
	name := *o.Optimizer
	if err := checkOptimizer(name); err != nil {
		return err
	}
	if name == "adam" || name == "adamw" {
		if o.Momentum != nil && *o.Momentum != 0 {
			return fmt.Errorf("--optimizer %s has no --momentum (given %g): its moments decay at --betas B1,B2 (default 0.9,0.999); drop --momentum, or use --optimizer sgd", name, *o.Momentum)
		}
		if o.Nesterov != nil && *o.Nesterov {
			return fmt.Errorf("--optimizer %s has no --nesterov momentum: drop --nesterov, or use --optimizer sgd", name)
		}
	}
	return nil
}

// checkOptimizer refuses a name --optimizer does not take, with the
// nearest ones.
func checkOptimizer(name string) error {
	for _, o := range Optimizers {
		if o == name {
			return nil
		}
	}
	return fmt.Errorf("--optimizer %s: want sgd, rmsprop, adam or adamw%s", name, suggest.DidYouMean(name, Optimizers))
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
		if op.adam() {
			// The preset's momentum is SGD's: Adam has its betas instead
			// (a --momentum or --nesterov given with adam is refused below).
			if o.Momentum == nil {
				op.Momentum = 0
			}
			if o.Nesterov == nil {
				op.Nesterov = false
			}
		}
	}
	if o.Betas != nil {
		op.Beta1, op.Beta2 = o.Betas[0], o.Betas[1]
	}
	setF(&op.AdamEps, o.Eps)
	setF(&op.ClipNorm, o.ClipGradNorm)
	setF(&op.EMADecay, o.EMADecay)
	if err := o.Check(); err != nil {
		return Optim{}, err
	}
	if (o.Betas != nil || o.Eps != nil) && !op.adam() {
		return Optim{}, fmt.Errorf("--betas and --eps are settings of --optimizer adam or adamw")
	}
	if op.Epochs <= 0 || op.Batch <= 0 {
		return Optim{}, fmt.Errorf("--epochs %d, --batch %d: want both ≥ 1", op.Epochs, op.Batch)
	}
	if op.Momentum < 0 || op.WeightDecay < 0 || (op.Nesterov && op.Momentum == 0 && !op.adam()) {
		return Optim{}, fmt.Errorf("--momentum and --weight-decay must be ≥ 0, and --nesterov needs a momentum")
	}
	if err := op.Validate(); err != nil {
		return Optim{}, err
	}
	return op, nil
}

// OverrideFlags are the names Overrides are given by (lcl train's flags, a
// grid's args), in the order lcl train documents them.
func OverrideFlags() []string {
	return []string{"epochs", "batch", "lr", "momentum", "nesterov", "weight-decay", "schedule", "milestones", "gamma", "step-size", "warmup", "optimizer",
		"betas", "eps", "clip-grad-norm", "ema-decay"}
}

// ParseOverrides reads the overrides given by name (OverrideFlags) as
// command-line values: "--epochs 3" is {"epochs": "3"}. Names not given
// keep the preset's settings; a name Overrides does not know is an error.
func ParseOverrides(given map[string]string) (Overrides, error) {
	var o Overrides
	ints := map[string]**int{"epochs": &o.Epochs, "batch": &o.Batch, "step-size": &o.StepSize, "warmup": &o.Warmup}
	floats := map[string]**float64{"lr": &o.LR, "momentum": &o.Momentum, "weight-decay": &o.WeightDecay, "gamma": &o.Gamma,
		"eps": &o.Eps, "clip-grad-norm": &o.ClipGradNorm, "ema-decay": &o.EMADecay}
	for name, v := range given {
		var err error
		switch {
		case ints[name] != nil:
			var n int
			n, err = strconv.Atoi(v)
			*ints[name] = &n
		case floats[name] != nil:
			var x float64
			x, err = strconv.ParseFloat(v, 64)
			*floats[name] = &x
		case name == "nesterov":
			var b bool
			b, err = strconv.ParseBool(v)
			o.Nesterov = &b
		case name == "schedule":
			o.Schedule = &v
		case name == "optimizer":
			o.Optimizer = &v
		case name == "milestones":
			o.Milestones, err = ParseMilestones(v)
		case name == "betas":
			o.Betas, err = parseBetas(v)
		default:
			return Overrides{}, fmt.Errorf("--%s: not a setting of a preset (those are: %v)", name, OverrideFlags())
		}
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok {
				err = ne.Err
			}
			return Overrides{}, fmt.Errorf("--%s: %w", name, err)
		}
	}
	return o, nil
}

// parseBetas parses Adam's "0.9,0.999".
func parseBetas(s string) ([]float64, error) {
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
