package trainer

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/suggest"
)

// Settings are the training settings lcl train's flags set (--lr,
// --ema-decay, --val-fraction, ...): the values given and which were given.
// A run takes the others from its preset (Preset.Apply). Each setting is a
// row of the table SettingsTable returns, which derives lcl train's flags,
// their help, --config, grids, the store key and the checkpoint identity.
type Settings struct {
	Optim
	ModelSelection
	// OptimParams are the optimizer's parameters --optim-param gives, by
	// name (Optim.Params holds --betas and --eps).
	OptimParams map[string]float64
	given       uint64 // bit i: row i of settingsTable was given
}

// ModelSelection is a run's validation split and what it picks the best
// epoch by (docs/trainer.md): ValFraction > 0 holds out a class-stratified,
// seeded part of the training set; every peer (and moving average) is
// evaluated on it every epoch, and in the last stage the weights with the
// best SelectMetric are kept (model-best.safetensors) and evaluated on the
// test set once, at the end (every epoch too with TestEveryEpoch).
// Patience > 0 stops the last stage after that many epochs without a
// better value.
type ModelSelection struct {
	ValFraction    float64
	SelectMetric   string // top1 (default), top5 or loss, on the validation split
	Patience       int
	TestEveryEpoch bool
	// TestEvery > 1 evaluates the test set only after every TestEvery-th
	// epoch and each stage's last (runs without a validation split): the
	// evaluation of a 10,000-image test set can cost more than a small
	// training set's epoch, and a grid wants the final figures.
	TestEvery int
}

// A Setting is one row of the settings table: a training setting, its
// flag (--Name) and help, the field it binds, its one check and how it
// enters a run's identity. A new setting is a row and its use.
type Setting struct {
	Name  string // the flag's name, without dashes
	Group string // the help's group: optimisation, learning rate, model selection
	Usage string // the flag's help (≤ 90 characters)
	Type  string // what the help calls its value: int, float, bool, string, ...
	// Def is what the help shows as its default while not given ("":
	// none); Repeat: each --Name adds to the value (NAME=VALUE).
	Def    string
	Repeat bool
	// Flagless: no flag of its own (a preset's value, in the identity).
	Flagless bool
	// Exec: how the run is observed, not what it trains (--test-every):
	// no part of a run's configuration or store key, like --threads.
	Exec bool

	set    func(s *Settings, v string) error // parses v into the field
	format func(s *Settings) string          // the field as the flag spells it
	check  func(s *Settings) error           // the one check: "want …"; nil none
	zero   func(s *Settings) bool            // the field is its zero value
	// needs, when set, is what the run must have for the setting to
	// apply (a schedule's own settings; model selection's).
	needs *need
	// apply copies the given value into a run's settings (nil: the
	// field); it may refuse it.
	apply func(run, given *Settings) error
	// id is how the setting enters the "optim" identity (nil: not at all).
	id *ident
}

// need is the condition a setting applies under: ok on the run's
// settings, what gives it (for the error) and what the run has instead.
type need struct {
	ok    func(s *Settings) bool
	what  string
	have  func(s *Settings) string
	fixed bool // also refused when not given but non-zero (momentum of adam)
}

// ident is a setting's part of the "optim" identity: key=value, or
// Key:value inside "schedule={…}"; optional ones appear only non-zero
// (identities older than them stay as they were written).
type ident struct {
	key      string
	schedule bool
	optional bool
	value    func(s *Settings) string // nil: the flag's spelling
}

// SettingsTable returns the rows, in the order of the help and of the
// identity.
func SettingsTable() []Setting { return slices.Clone(settingsTable) }

// settingIndex is the row of name, -1 for none.
func settingIndex(name string) int {
	return slices.IndexFunc(settingsTable, func(r Setting) bool { return r.Name == name })
}

// Given reports whether the setting name was given.
func (s *Settings) Given(name string) bool {
	i := settingIndex(name)
	return i >= 0 && s.given&(1<<i) != 0
}

// Set sets the setting name as --name v would (a repeatable one adds v).
func (s *Settings) Set(name, v string) error {
	i := settingIndex(name)
	if i < 0 || settingsTable[i].Flagless {
		return fmt.Errorf("no training setting --%s", name)
	}
	if err := settingsTable[i].set(s, v); err != nil {
		return err
	}
	s.given |= 1 << i
	return nil
}

// Unset forgets the setting name, as if not given (a repeatable one's
// values too).
func (s *Settings) Unset(name string) {
	if i := settingIndex(name); i >= 0 {
		s.given &^= 1 << i
	}
	if name == "optim-param" {
		s.OptimParams = nil
	}
}

// Value is the setting name as its flag spells it.
func (s *Settings) Value(name string) string {
	if i := settingIndex(name); i >= 0 {
		return settingsTable[i].format(s)
	}
	return ""
}

// Check refuses a given value outside what its row accepts, so that a run
// is refused before it reads its data. Each error names the flag, the
// value and what is accepted, in the one wording of the row.
func (s *Settings) Check() error {
	for i, r := range settingsTable {
		if s.given&(1<<i) != 0 {
			if err := r.checkValue(s); err != nil {
				return err
			}
		}
	}
	// Model selection's settings need no preset: checked whole.
	return s.validate(func(r Setting) bool { return r.Group == groupSelection })
}

// checkValue is the row's check of its value, worded "--NAME VALUE: want …".
func (r Setting) checkValue(s *Settings) error {
	if r.check == nil {
		return nil
	}
	if err := r.check(s); err != nil {
		return fmt.Errorf("--%s %s: %w", r.Name, r.format(s), err)
	}
	return nil
}

// validate checks a run's settings, given (bit set) or not: every row's
// check where the setting applies, and a given setting (or a fixed one
// set) where it does not is refused.
func (s *Settings) validate(rows func(Setting) bool) error {
	// First what does not apply, then the values of what does.
	for i, r := range settingsTable {
		if (rows != nil && !rows(r)) || r.needs == nil || r.needs.ok(s) {
			continue
		}
		// A fixed setting is refused when set (a momentum of 0 is
		// none), any other when given.
		if (r.needs.fixed && !r.zero(s)) || (!r.needs.fixed && s.given&(1<<i) != 0) {
			return fmt.Errorf("--%s %s applies to %s, and this run has %s: give %s, or drop --%s",
				r.Name, r.format(s), r.needs.what, r.needs.have(s), r.needs.what, r.Name)
		}
	}
	for _, r := range settingsTable {
		if (rows != nil && !rows(r)) || (r.needs != nil && !r.needs.ok(s)) {
			continue
		}
		if err := r.checkValue(s); err != nil {
			return err
		}
	}
	return nil
}

// Apply returns the preset's optimisation for a run of world data-parallel
// processes (see For) with the settings given, checked. Switching the
// schedule to step or multistep from another kind sets gamma to 0.1 unless
// --gamma is given; another optimizer than the preset's starts from its
// defaults.
func (p Preset) Apply(world int, s Settings) (Optim, error) {
	if err := s.Check(); err != nil {
		return Optim{}, err
	}
	run := Settings{Optim: p.For(world, s.Given("batch"), s.Batch, s.Given("lr")), given: s.given}
	for i, r := range settingsTable {
		if s.given&(1<<i) == 0 {
			continue
		}
		if err := r.apply(&run, &s); err != nil {
			return Optim{}, err
		}
	}
	if err := run.validate(func(r Setting) bool { return r.Group != groupSelection }); err != nil {
		return Optim{}, err
	}
	if err := run.Optim.Validate(); err != nil {
		return Optim{}, err
	}
	return run.Optim, nil
}

// Validate checks the optimisation: every setting's check, and the
// optimizer's own parameters (Optimizer).
func (o Optim) Validate() error {
	s := Settings{Optim: o}
	if err := s.validate(func(r Setting) bool { return r.Group != groupSelection }); err != nil {
		return err
	}
	k, err := OptimizerByName(o.Optimizer)
	if err != nil {
		return err
	}
	return k.validate(o)
}

// Validate checks the schedule's settings for its kind.
func (sc Schedule) Validate() error {
	s := Settings{Optim: Optim{Schedule: sc}}
	return s.validate(func(r Setting) bool { return r.Group == groupSchedule })
}

// Check checks the model selection's settings.
func (m ModelSelection) Check() error {
	s := Settings{ModelSelection: m}
	return s.validate(func(r Setting) bool { return r.Group == groupSelection })
}

// identity is the "optim" part of a run's identity, written from the
// rows: "epochs=E batch=B … schedule={Kind:K LR:L …} <optimizer> clip=C".
func (o Optim) identity() string {
	s := &Settings{Optim: o}
	var top, sched []string
	for _, r := range settingsTable {
		if r.id == nil || (r.id.optional && r.zero(s)) {
			continue
		}
		v := r.format(s)
		if r.id.value != nil {
			v = r.id.value(s)
		}
		if r.id.schedule {
			if sched == nil {
				top = append(top, "") // where the schedule goes
			}
			sched = append(sched, r.id.key+":"+v)
			continue
		}
		top = append(top, r.id.key+"="+v)
	}
	for i, f := range top {
		if f == "" {
			top[i] = "schedule={" + strings.Join(sched, " ") + "}"
		}
	}
	return strings.Replace(strings.Join(top, " "), " "+optimizerKey+"=", "", 1)
}

// optimizerKey marks the optimizer's part of the identity, which its row
// writes whole (Optimizer.identityOf: sgd's is empty).
const optimizerKey = "\x00optimizer"

// identityFlags maps the keys of the "optim" identity to the flags that
// set them; the optimizers' parameters are --optim-param's (beta1, beta2
// and eps also --betas and --eps).
func identityFlags() map[string]string {
	flags := map[string]string{"betas": "--betas", "eps": "--eps"}
	for _, r := range settingsTable {
		if r.id != nil && r.id.key != optimizerKey {
			flags[r.id.key] = "--" + r.Name
			if r.Flagless {
				flags[r.id.key] = "the preset's " + r.Usage
			}
		}
	}
	return flags
}

// The help's groups of the settings.
const (
	groupOptim     = "optimisation"
	groupSchedule  = "learning rate"
	groupSelection = "model selection"
)

// Row constructors: a field of type T, parsed, spelt and checked.
func row[T any](name, group, usage, typ string, p func(*Settings) *T, parse func(string) (T, error),
	format func(T) string, check func(T) error) Setting {
	r := Setting{Name: name, Group: group, Usage: usage, Type: typ,
		set: func(s *Settings, v string) error {
			x, err := parse(v)
			if err != nil {
				return err
			}
			*p(s) = x
			return nil
		},
		format: func(s *Settings) string { return format(*p(s)) },
		zero:   func(s *Settings) bool { return reflect.ValueOf(*p(s)).IsZero() },
		apply:  func(run, given *Settings) error { *p(run) = *p(given); return nil },
	}
	if check != nil {
		r.check = func(s *Settings) error { return check(*p(s)) }
	}
	return r
}

func intRow(name, group, usage string, p func(*Settings) *int, check func(int) error) Setting {
	return row(name, group, usage, "int", p, parseInt, strconv.Itoa, check)
}
func floatRow(name, group, usage string, p func(*Settings) *float64, check func(float64) error) Setting {
	r := row(name, group, usage, "float", p, parseFloat, formatFloat, check)
	r.Def = "0"
	return r
}
func boolRow(name, group, usage string, p func(*Settings) *bool) Setting {
	r := row(name, group, usage, "bool", p, parseBool, strconv.FormatBool, nil)
	r.Def = "false"
	return r
}
func stringRow(name, group, usage string, p func(*Settings) *string, check func(string) error) Setting {
	return row(name, group, usage, "string", p, func(v string) (string, error) { return v, nil }, func(v string) string { return v }, check)
}

func (r Setting) withID(key string) Setting {
	r.id = &ident{key: key}
	return r
}

// optional makes the row's identity field appear only when set, so that
// the identities written before the row stay as they were.
func (r Setting) optional() Setting {
	id := *r.id
	id.optional = true
	r.id = &id
	return r
}
func (r Setting) inSchedule(key string, value func(s *Settings) string) Setting {
	r.id = &ident{key: key, schedule: true, value: value}
	return r
}
func (r Setting) needing(n need) Setting { r.needs = &n; return r }

// The bounds of the whole-number settings: a run of more epochs, or a
// batch larger, is a typo, and their products (steps, elements) must not
// overflow.
const (
	MaxEpochs = 1_000_000
	MaxBatch  = 1 << 20
)

// The checks, one wording each.
func wantIf(ok bool, want string) error {
	if ok {
		return nil
	}
	return errors.New("want " + want)
}

// count accepts a whole number from lo to hi.
func count(lo, hi int, what string) func(int) error {
	return func(n int) error {
		return wantIf(n >= lo && n <= hi, fmt.Sprintf("a whole number from %d to %d%s", lo, hi, what))
	}
}

// nonNeg accepts a finite value ≥ 0.
func nonNeg(what string) func(float64) error {
	return func(v float64) error { return wantIf(v >= 0 && !math.IsInf(v, 1), "a finite value ≥ 0"+what) }
}

// finite accepts any finite value (the range is the optimizer's: it
// checks its parameters once it is known).
func finite(v float64) error {
	return wantIf(!math.IsNaN(v) && !math.IsInf(v, 0), "a finite number")
}

// scheduleNeed: a setting of the schedules kinds.
func scheduleNeed(kinds ...string) need {
	what := "--schedule " + strings.Join(kinds, " or ")
	return need{what: what, ok: func(s *Settings) bool { return slices.Contains(kinds, s.Schedule.Kind) },
		have: func(s *Settings) string { return "--schedule " + s.Schedule.Kind }}
}

// optimizerNeed: an optimizer parameter that is a field of Optim
// (momentum, nesterov); fixed: an optimizer without it refuses one set.
func optimizerNeed(param string) need {
	var with []string
	for _, k := range Optimizers() {
		if k.Has(param) {
			with = append(with, k.Name)
		}
	}
	return need{what: "--optimizer " + strings.Join(with, " or "), fixed: true,
		ok: func(s *Settings) bool { k, err := OptimizerByName(s.Optimizer); return err != nil || k.Has(param) },
		have: func(s *Settings) string {
			k, _ := OptimizerByName(s.Optimizer)
			return "--optimizer " + k.Name
		}}
}

var selectionNeed = need{what: "--val-fraction F", fixed: true, ok: func(s *Settings) bool { return s.ValFraction > 0 },
	have: func(*Settings) string { return "no validation split" }}

// settingsTable is every training setting lcl train's flags set, in the
// order of the help and of the identity (set by init: its rows refer to
// it).
var settingsTable []Setting

func init() { settingsTable = settingRows() }

func settingRows() []Setting {
	return []Setting{
		intRow("epochs", groupOptim, "epochs (overrides the preset)", func(s *Settings) *int { return &s.Epochs }, count(1, MaxEpochs, "")).withID("epochs"),
		intRow("batch", groupOptim, "batch size (overrides the preset)", func(s *Settings) *int { return &s.Batch }, count(1, MaxBatch, "")).withID("batch"),
		floatRow("momentum", groupOptim, "SGD momentum (overrides the preset)", func(s *Settings) *float64 { return &s.Momentum },
			nonNeg("")).withID("momentum").needing(optimizerNeed("momentum")),
		boolRow("nesterov", groupOptim, "Nesterov momentum (overrides the preset)", func(s *Settings) *bool { return &s.Nesterov }).
			withID("nesterov").needing(optimizerNeed("nesterov")),
		floatRow("weight-decay", groupOptim, "L2 weight decay (overrides the preset)", func(s *Settings) *float64 { return &s.WeightDecay },
			nonNeg("")).withID("wd"),
		scheduleRow(),
		floatRow("lr", groupSchedule, "base learning rate (overrides the preset)", func(s *Settings) *float64 { return &s.Schedule.LR },
			func(v float64) error { return wantIf(v > 0 && !math.IsInf(v, 1), "a finite value > 0") }).inSchedule("LR", nil),
		floatRow("gamma", groupSchedule, "step/multistep decay factor", func(s *Settings) *float64 { return &s.Schedule.Gamma },
			func(v float64) error {
				return wantIf(v > 0 && !math.IsInf(v, 1), "a finite value > 0 (the factor the learning rate is multiplied by at each step)")
			}).
			inSchedule("Gamma", nil).needing(scheduleNeed("step", "multistep")),
		intRow("step-size", groupSchedule, "step schedule: decay every N epochs", func(s *Settings) *int { return &s.Schedule.StepSize }, count(1, MaxEpochs, " epochs")).
			inSchedule("StepSize", nil).needing(scheduleNeed("step")),
		milestonesRow(),
		intRow("warmup", groupSchedule, "epochs of linear learning-rate warm-up", func(s *Settings) *int { return &s.Schedule.Warmup },
			count(0, MaxEpochs, " epochs (0: none)")).inSchedule("Warmup", nil),
		floatRow("warmup-start-lr", groupSchedule, "with --warmup: the learning rate the warm-up starts from (0: ≈0)",
			func(s *Settings) *float64 { return &s.Schedule.WarmupStart }, nonNeg(" (0: from LR/1000, ramping per step)")).
			inSchedule("WarmupStart", nil).optional().needing(need{what: "--warmup N", ok: func(s *Settings) bool { return s.Schedule.Warmup > 0 },
			have: func(*Settings) string { return "no warm-up" }}),
		minLRRow(),
		optimizerRow(),
		betasRow(),
		paramRow("eps", "the optimizer's epsilon (Adam family: 1e-8, rmsprop: 1)"),
		optimParamRow(),
		floatRow("clip-grad-norm", groupOptim, "scale each model's gradients to an L2 norm of at most this (0: none)",
			func(s *Settings) *float64 { return &s.ClipNorm }, nonNeg(" (0: no clipping)")).withID("clip").optional(),
		floatRow("ema-decay", groupOptim, "moving average of the weights e ← d·e + (1−d)·w per step (e.g. 0.9998; 0: none)",
			func(s *Settings) *float64 { return &s.EMADecay },
			func(v float64) error { return wantIf(v >= 0 && v < 1, "0 ≤ decay < 1 (0: none; e.g. 0.9998)") }).withID("ema").optional(),
		floatRow("val-fraction", groupSelection, "class-stratified part of the training set held out to pick the best epoch",
			func(s *Settings) *float64 { return &s.ValFraction },
			func(v float64) error { return wantIf(v >= 0 && v < 1, "0 ≤ fraction < 1 (0: no validation split)") }),
		selectRow(),
		intRow("patience", groupSelection, "with --val-fraction: stop after N epochs without a better metric (0: never)",
			func(s *Settings) *int { return &s.Patience },
			count(0, MaxEpochs, " epochs (0: no early stopping)")).needing(selectionNeed),
		boolRow("test-every-epoch", groupSelection, "with --val-fraction: evaluate the test set every epoch too",
			func(s *Settings) *bool { return &s.TestEveryEpoch }).needing(selectionNeed),
		testEveryRow(),
	}
}

// testEveryRow is --test-every: 0 and 1 both mean every epoch (the zero
// value keeps the settings of runs from before it).
func testEveryRow() Setting {
	r := intRow("test-every", groupSelection, "evaluate the test set after every N-th epoch and each stage's last (1: every epoch)",
		func(s *Settings) *int { return &s.TestEvery }, count(0, MaxEpochs, " epochs (0 or 1: every epoch)"))
	r.Def, r.Exec = "1", true
	return r
}

func scheduleRow() Setting {
	r := stringRow("schedule", groupSchedule, "learning-rate schedule: "+strings.Join(ScheduleKinds, ", ")+" (overrides the preset)",
		func(s *Settings) *string { return &s.Schedule.Kind },
		func(k string) error {
			return wantIf(slices.Contains(ScheduleKinds, k), strings.Join(ScheduleKinds, ", ")+suggest.DidYouMean(k, ScheduleKinds))
		}).inSchedule("Kind", nil)
	r.apply = func(run, given *Settings) error {
		if k := given.Schedule.Kind; k != run.Schedule.Kind && (k == "step" || k == "multistep") && !given.Given("gamma") {
			run.Schedule.Gamma = 0.1
		}
		run.Schedule.Kind = given.Schedule.Kind
		return nil
	}
	return r
}

func milestonesRow() Setting {
	r := row("milestones", groupSchedule, "multistep epochs, e.g. 60,120,160", "string",
		func(s *Settings) *[]int { return &s.Schedule.Milestones }, ParseMilestones, joinInts,
		func(m []int) error {
			return wantIf(len(m) > 0 && slices.IsSorted(m) && m[len(m)-1] <= MaxEpochs,
				fmt.Sprintf("increasing epochs up to %d (e.g. 60,120,160)", MaxEpochs))
		})
	r.zero = func(s *Settings) bool { return len(s.Schedule.Milestones) == 0 }
	r.apply = func(run, given *Settings) error {
		run.Schedule.Milestones = slices.Clone(given.Schedule.Milestones)
		return nil
	}
	r.id = &ident{key: "Milestones", schedule: true, value: func(s *Settings) string { return fmt.Sprint(s.Schedule.Milestones) }}
	return r.needing(scheduleNeed("multistep"))
}

// minLRRow is the cosine schedule's floor: a preset's value, no flag.
func minLRRow() Setting {
	r := floatRow("min-lr", groupSchedule, "final learning rate", func(s *Settings) *float64 { return &s.Schedule.MinLR }, nil).
		inSchedule("MinLR", nil)
	r.Flagless = true
	return r
}

func optimizerRow() Setting {
	r := stringRow("optimizer", groupOptim, OptimizerNames()+" (overrides the preset; see lcl models)",
		func(s *Settings) *string { return &s.Optimizer },
		func(name string) error {
			if _, err := OptimizerByName(name); err != nil {
				return fmt.Errorf("want %s%s", OptimizerNames(), suggest.DidYouMean(name, optimizerNames()))
			}
			return nil
		})
	r.format = func(s *Settings) string {
		if s.Optimizer == "" {
			return "sgd"
		}
		return s.Optimizer
	}
	r.apply = func(run, given *Settings) error {
		preset := run.Optimizer
		run.Optimizer = given.Optimizer
		if given.Optimizer == preset {
			return nil
		}
		// Another optimizer starts from its defaults (the preset's
		// parameters are its own optimizer's), and one without momentum
		// from none unless --momentum or --nesterov is given (which its
		// row then refuses).
		run.Params = nil
		k, err := OptimizerByName(run.Optimizer)
		if err != nil {
			return nil // its row's check refuses it
		}
		if !k.Has("momentum") && !given.Given("momentum") {
			run.Momentum = 0
		}
		if !k.Has("nesterov") && !given.Given("nesterov") {
			run.Nesterov = false
		}
		return nil
	}
	r.id = &ident{key: optimizerKey, value: func(s *Settings) string {
		k, err := OptimizerByName(s.Optimizer)
		if err != nil {
			return ""
		}
		return k.identityOf(s.Optim)
	}}
	return r
}

// setParam sets the optimizer parameter name of run, refusing one the
// optimizer does not have (flag: the flag that gives it).
func setParam(run *Settings, flag, name string, v float64) error {
	if ownParam(name) {
		return fmt.Errorf("%s: set %s with --%s", flag, name, strings.ReplaceAll(name, "_", "-"))
	}
	k, err := OptimizerByName(run.Optimizer)
	if err != nil {
		return err
	}
	if !k.Has(name) {
		return fmt.Errorf("%s: optimizer %s has no parameter %s (its parameters: %s)", flag, k.Name, name, strings.Join(k.ParamNames(), ", "))
	}
	run.Params = maps.Clone(run.Params)
	if run.Params == nil {
		run.Params = map[string]float64{}
	}
	run.Params[name] = v
	return nil
}

// paramRow is a flag of its own for the optimizer parameter name.
func paramRow(name, usage string) Setting {
	return Setting{Name: name, Group: groupOptim, Usage: usage, Type: "float", Def: "0",
		set: func(s *Settings, v string) error {
			x, err := parseFloat(v)
			if err == nil {
				s.Params = maps.Clone(s.Params)
				if s.Params == nil {
					s.Params = map[string]float64{}
				}
				s.Params[name] = x
			}
			return err
		},
		format: func(s *Settings) string { return formatFloat(s.Params[name]) },
		check:  func(s *Settings) error { return finite(s.Params[name]) },
		zero:   func(s *Settings) bool { _, ok := s.Params[name]; return !ok },
		apply:  func(run, given *Settings) error { return setParam(run, "--"+name, name, given.Params[name]) }}
}

func betasRow() Setting {
	return Setting{Name: "betas", Group: groupOptim, Usage: "the Adam family's moment decay rates B1,B2 (default 0.9,0.999)", Type: "string",
		set: func(s *Settings, v string) error {
			b, err := ParseBetas(v)
			if err == nil {
				s.Params = maps.Clone(s.Params)
				if s.Params == nil {
					s.Params = map[string]float64{}
				}
				s.Params["beta1"], s.Params["beta2"] = b[0], b[1]
			}
			return err
		},
		format: func(s *Settings) string {
			if _, ok := s.Params["beta1"]; !ok {
				return ""
			}
			return formatFloat(s.Params["beta1"]) + "," + formatFloat(s.Params["beta2"])
		},
		check: func(s *Settings) error {
			if err := finite(s.Params["beta1"]); err != nil {
				return err
			}
			return finite(s.Params["beta2"])
		},
		zero: func(s *Settings) bool { _, ok := s.Params["beta1"]; return !ok },
		apply: func(run, given *Settings) error {
			return errors.Join(setParam(run, "--betas", "beta1", given.Params["beta1"]), setParam(run, "--betas", "beta2", given.Params["beta2"]))
		}}
}

func optimParamRow() Setting {
	return Setting{Name: "optim-param", Group: groupOptim, Usage: "an optimizer parameter NAME=VALUE (repeatable), e.g. momentum_decay=0.004",
		Type: "stringArray", Repeat: true,
		set: func(s *Settings, v string) error {
			name, val, ok := strings.Cut(v, "=")
			x, err := parseFloat(val)
			if !ok || name == "" || err != nil {
				return fmt.Errorf("want NAME=VALUE, VALUE a number")
			}
			s.OptimParams = maps.Clone(s.OptimParams)
			if s.OptimParams == nil {
				s.OptimParams = map[string]float64{}
			}
			s.OptimParams[name] = x
			return nil
		},
		format: func(s *Settings) string {
			if len(s.OptimParams) == 0 {
				return ""
			}
			return "[" + strings.Join(s.optimParams(), ",") + "]"
		},
		check: func(s *Settings) error {
			for _, v := range s.OptimParams {
				if err := finite(v); err != nil {
					return err
				}
			}
			return nil
		},
		zero: func(s *Settings) bool { return len(s.OptimParams) == 0 },
		apply: func(run, given *Settings) error {
			var errs []error
			for _, name := range slices.Sorted(maps.Keys(given.OptimParams)) {
				errs = append(errs, setParam(run, "--optim-param "+name, name, given.OptimParams[name]))
			}
			return errors.Join(errs...)
		}}
}

// optimParams are --optim-param's NAME=VALUE, by name.
func (s *Settings) optimParams() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(s.OptimParams)) {
		out = append(out, k+"="+formatFloat(s.OptimParams[k]))
	}
	return out
}

// Values are the setting name's values as flags spell them: one per
// --name of a repeatable setting, else its value.
func (s *Settings) Values(name string) []string {
	if name == "optim-param" {
		return s.optimParams()
	}
	return []string{s.Value(name)}
}

var selectMetricNames = []string{"top1", "top5", "loss"}

func selectRow() Setting {
	r := stringRow("select", groupSelection, "with --val-fraction: the metric that picks the best epoch: top1, top5 or loss",
		func(s *Settings) *string { return &s.SelectMetric },
		func(m string) error {
			return wantIf(m == "" || slices.Contains(selectMetricNames, m), "top1, top5 or loss"+suggest.DidYouMean(m, selectMetricNames))
		}).needing(selectionNeed)
	r.Def = "top1"
	return r
}

func parseFloat(s string) (float64, error) { return numErr(strconv.ParseFloat(s, 64)) }
func parseInt(s string) (int, error)       { return numErr(strconv.Atoi(s)) }
func parseBool(s string) (bool, error)     { return numErr(strconv.ParseBool(s)) }
func formatFloat(f float64) string         { return strconv.FormatFloat(f, 'g', -1, 64) }

// numErr drops strconv's repetition of the input from its errors.
func numErr[T any](x T, err error) (T, error) {
	if ne, ok := err.(*strconv.NumError); ok {
		err = ne.Err
	}
	return x, err
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
