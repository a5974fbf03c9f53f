package trainer

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/lcl-project/lcl/trainer/torch"
)

// An Optimizer is one kind of update rule a run trains with (Optim's
// Optimizer, lcl train's --optimizer): its parameters with their defaults,
// how it enters a run's identity, and its rule in the shim (optim.hpp). A
// new optimizer is a row of Optimizers and its rule in optim.hpp.
type Optimizer struct {
	Name string // --optimizer's value, and the rule's name in optim.hpp
	Doc  string // one line, for lcl models and the docs
	// Rule is the rule's number in optim.hpp (lts::Kind): the shim checks
	// it against Name.
	Rule int32
	// Params are what the rule takes, in its order (optim.hpp).
	Params []OptimParam
	// check, when set, refuses a combination of values (by name) that
	// each pass their own check.
	check func(v map[string]float64) error
	// identity is what the optimizer adds to a run's identity (the fields
	// of Optim every kind has are already there); nil: its name and every
	// other parameter as name=value. Kinds older than their identity keep
	// the form their checkpoints were written with.
	identity func(v map[string]float64) string
}

// An OptimParam is one parameter of an optimizer.
type OptimParam struct {
	// Name is the parameter's key: momentum, weight_decay and nesterov are
	// Optim's own fields (--momentum, --weight-decay, --nesterov); every
	// other one is Optim.Params[Name] (--optim-param NAME=VALUE; beta1,
	// beta2 and eps also --betas and --eps).
	Name    string
	Default float64
	Doc     string
	want    string // what ok accepts, for errors
	ok      func(float64) bool
}

// The kinds of values a parameter takes.
func unitParam(name string, def float64, doc string) OptimParam {
	return OptimParam{name, def, doc, "0 ≤ value < 1", func(v float64) bool { return v >= 0 && v < 1 }}
}
func nonNegParam(name string, def float64, doc string) OptimParam {
	return OptimParam{name, def, doc, "a finite value ≥ 0", func(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }}
}
func positiveParam(name string, def float64, doc string) OptimParam {
	return OptimParam{name, def, doc, "a finite value > 0", func(v float64) bool { return v > 0 && !math.IsInf(v, 1) }}
}

// ownParam says whether Optim has a field for the parameter: every
// optimizer has weight_decay; those without momentum refuse a momentum.
func ownParam(name string) bool {
	return name == "momentum" || name == "weight_decay" || name == "nesterov"
}

// Optimizers are the optimizers lcl trains with, by rule number.
func Optimizers() []Optimizer {
	momentum := nonNegParam("momentum", 0, "momentum (--momentum)")
	wd := nonNegParam("weight_decay", 0, "L2 weight decay, added to the gradient (--weight-decay)")
	adam := func(wdDoc string) []OptimParam {
		return []OptimParam{
			unitParam("beta1", 0.9, "decay rate of the first moment (--betas B1,B2)"),
			unitParam("beta2", 0.999, "decay rate of the second moment"),
			positiveParam("eps", 1e-8, "added to the denominator (--eps)"),
			nonNegParam("weight_decay", 0, wdDoc),
		}
	}
	return []Optimizer{
		{Name: "sgd", Rule: 0, Doc: "torch.optim.SGD (dampening 0): momentum, Nesterov, L2 weight decay",
			Params: []OptimParam{momentum, wd,
				{"nesterov", 0, "Nesterov momentum, 0 or 1 (--nesterov)", "0 or 1", func(v float64) bool { return v == 0 || v == 1 }}},
			check:    checkNesterov,
			identity: func(map[string]float64) string { return "" }}, // the identity of checkpoints older than the optimizers
		{Name: "rmsprop", Rule: 1, Doc: "TensorFlow's RMSProp (the Inception papers'): mean squares start at 1, ε inside the root",
			Params: []OptimParam{unitParam("decay", 0.9, "decay rate of the mean squares"),
				positiveParam("eps", 1, "added to the mean squares (--eps)"), momentum, wd},
			identity: func(v map[string]float64) string {
				return fmt.Sprintf(" rmsprop decay=%g eps=%g", v["decay"], v["eps"])
			}},
		{Name: "adam", Rule: 2, Doc: "torch.optim.Adam (amsgrad off): weight decay added to the gradient",
			Params: adam("L2 weight decay, added to the gradient (--weight-decay)"), identity: adamIdentity("adam")},
		{Name: "adamw", Rule: 3, Doc: "torch.optim.AdamW (amsgrad off): decoupled weight decay",
			Params: adam("decoupled weight decay: the weights shrink by lr·weight_decay (--weight-decay)"), identity: adamIdentity("adamw")},
		{Name: "radam", Rule: 4, Doc: "torch.optim.RAdam (Liu et al. 2020): Adam with the variance rectified; L2 weight decay",
			Params: adam("L2 weight decay, added to the gradient (--weight-decay)")},
		{Name: "nadam", Rule: 5, Doc: "torch.optim.NAdam (Dozat 2016): Adam with Nesterov momentum; L2 weight decay",
			Params: append(adam("L2 weight decay, added to the gradient (--weight-decay)"),
				nonNegParam("momentum_decay", 4e-3, "decay of the momentum schedule μ_t = β1(1 − 0.96^(t·momentum_decay)/2)"))},
	}
}

func checkNesterov(v map[string]float64) error {
	if v["nesterov"] != 0 && v["momentum"] <= 0 {
		return fmt.Errorf("nesterov needs a momentum > 0")
	}
	return nil
}

// adamIdentity is the identity form of the runs of Adam and AdamW written
// before the registry: a run resumes from those checkpoints.
func adamIdentity(name string) func(v map[string]float64) string {
	return func(v map[string]float64) string {
		return fmt.Sprintf(" %s betas=%g,%g eps=%g", name, v["beta1"], v["beta2"], v["eps"])
	}
}

// OptimizerByName finds an optimizer ("" is sgd); the error names the
// choices.
func OptimizerByName(name string) (Optimizer, error) {
	if name == "" {
		name = "sgd"
	}
	all := Optimizers()
	for _, k := range all {
		if k.Name == name {
			return k, nil
		}
	}
	return Optimizer{}, fmt.Errorf("optimizer %q: want %s", name, OptimizerNames())
}

// optimizerNames are the optimizers' names in the registry's order.
func optimizerNames() []string {
	var names []string
	for _, k := range Optimizers() {
		names = append(names, k.Name)
	}
	return names
}

// OptimizerNames lists the optimizers for a message: "sgd, …, or nadam".
func OptimizerNames() string {
	names := optimizerNames()
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Has reports whether the optimizer takes the parameter name.
func (k Optimizer) Has(name string) bool {
	return slices.ContainsFunc(k.Params, func(p OptimParam) bool { return p.Name == name })
}

// ParamNames lists the optimizer's parameters in its order.
func (k Optimizer) ParamNames() []string {
	names := make([]string, len(k.Params))
	for i, p := range k.Params {
		names[i] = p.Name
	}
	return names
}

// values are o's parameters for optimizer k by name: Optim's own fields,
// then o.Params, then the defaults.
func (k Optimizer) values(o Optim) map[string]float64 {
	v := make(map[string]float64, len(k.Params))
	for _, p := range k.Params {
		switch x, given := o.Params[p.Name]; {
		case p.Name == "momentum":
			v[p.Name] = o.Momentum
		case p.Name == "weight_decay":
			v[p.Name] = o.WeightDecay
		case p.Name == "nesterov":
			v[p.Name] = 0
			if o.Nesterov {
				v[p.Name] = 1
			}
		case given:
			v[p.Name] = x
		default:
			v[p.Name] = p.Default
		}
	}
	return v
}

// validate checks o's settings for optimizer k.
func (k Optimizer) validate(o Optim) error {
	for _, name := range slices.Sorted(maps.Keys(o.Params)) {
		if ownParam(name) {
			return fmt.Errorf("--optim-param %s: set %s with --%s", name, name, strings.ReplaceAll(name, "_", "-"))
		}
		if !k.Has(name) {
			return fmt.Errorf("--optim-param %s: optimizer %s has no parameter %s (its parameters: %s)", name, k.Name, name, strings.Join(k.ParamNames(), ", "))
		}
	}
	// (Momentum and Nesterov of an optimizer without them: their rows
	// of the settings table.)
	v := k.values(o)
	for _, p := range k.Params {
		if !p.ok(v[p.Name]) {
			return fmt.Errorf("%s %s %v: want %s", k.Name, p.Name, v[p.Name], p.want)
		}
	}
	if k.check != nil {
		return k.check(v)
	}
	return nil
}

// identityOf is what o, an optimizer of kind k, adds to a run's identity.
func (k Optimizer) identityOf(o Optim) string {
	v := k.values(o)
	if k.identity != nil {
		return k.identity(v)
	}
	s := " " + k.Name
	for _, p := range k.Params {
		if !ownParam(p.Name) {
			s += fmt.Sprintf(" %s=%g", p.Name, v[p.Name])
		}
	}
	return s
}

// newOptimizer creates o's optimizer (kind k) for model m.
func (k Optimizer) newOptimizer(m *torch.Model, o Optim) (*torch.Optimizer, error) {
	v := k.values(o)
	args := make([]float64, len(k.Params))
	for i, p := range k.Params {
		args[i] = v[p.Name]
	}
	return torch.NewOptimizer(m, torch.Rule{Kind: k.Rule, Name: k.Name}, args)
}
