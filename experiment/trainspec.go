package experiment

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/internal/digest"
	"github.com/lcl-project/lcl/internal/suggest"
	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
)

// TrainSpec is one training run, typed: what `lcl train`'s flags bind to
// (BindTrainFlags), what a grid's cell expands to (Run.Spec) and what
// `lcl train --config FILE` reads (LoadTrainSpec). Its configuration
// (Config) keys the run in the store; Exec says where and how it runs.
//
// Fields that override a default only when given are pointers (nil: not
// given), so that a run's configuration names what was asked for, as
// spelt: `--precision fp32` given is part of a run's key, absent is not.
type TrainSpec struct {
	Synsets  string // label set (--synsets)
	Data     string // data set spec or folder (--data)
	Model    string // architecture (--model)
	Strategy string // --strategy
	// Params are the strategy's parameters (--param NAME=VALUE, repeatable);
	// Epsilon is --epsilon, shorthand for Params["epsilon"] (StrategyParams
	// merges them).
	Params  map[string]string
	Epsilon *float64
	// The similarity matrix of a strategy that needs one: the latest store
	// matrix of kind Source (or the similarity plugin of that name), else a
	// C×C .npy file (Matrix), else a store key (SimilarityKey).
	Source, Matrix, SimilarityKey string
	Fraction                      float64 // part of the training set, class-stratified
	Seed                          int64
	Preset                        *string  // nil: the model's default preset
	Init                          *string  // weights to start from (safetensors)
	InitSkip                      []string // with Init: module prefixes kept at their initialisation
	Precision                     *string  // fp32 (nil), bf16, fp16 or auto (bf16 where the hardware has bf16 units)
	// Settings are the training settings given (--epochs, --lr,
	// --ema-decay, --val-fraction, ...): the rows of the trainer's
	// settings table (trainer.SettingsTable), which are flags here. A new
	// setting of the trainer is a row there and its use.
	Settings trainer.Settings
	// Training augmentation on top of the data set's crop and flip
	// (docs/data.md; nil: none): RandAugment's N,M, TrivialAugmentWide,
	// random erasing's probability.
	RandAugment    *string
	TrivialAugment *bool
	RandomErasing  *float64
	// Mixup and CutMix's α, the probability a batch is mixed and that a
	// mixed batch uses CutMix when both are on (nil: none, timm's 1 and ½;
	// trainer.Mixing).
	Mixup, CutMix, MixProb, MixSwitchProb *float64

	Exec TrainExec
}

// TrainExec are the settings of a run that say where and how it executes,
// not what it computes: no part of its configuration, so moving a run to
// a GPU or another folder does not make it another run.
type TrainExec struct {
	Out             string // run directory (default runs/DATA-MODEL-STRATEGY-sSEED)
	Resume          bool
	NoStore         bool
	Device          string
	Threads         int // libtorch threads, 0: its default
	Workers         int // data decoding goroutines, 0: the CPUs
	EvalBatch       int
	CheckpointEvery int
	MetricsEvery    int
	LogEvery        int // TensorBoard step scalars every N steps (0: each epoch only)
	ChannelsLast    bool
	TF32            bool
	CUDNNBenchmark  bool
	NProc           int
	DistTimeout     time.Duration
	DistBackend     string
	DistBind        string
	PluginTimeout   time.Duration
	// TrustModel lets a TorchScript model call operators that reach the
	// file system, the network or the terminal (--trust-model).
	TrustModel bool
}

// NewTrainSpec is a TrainSpec holding lcl train's defaults.
func NewTrainSpec() TrainSpec {
	return TrainSpec{Model: "cnn", Strategy: "sl", Source: "semantic", Fraction: 1, Seed: 1,
		Exec: TrainExec{Device: "cpu", EvalBatch: 256, CheckpointEvery: 1, LogEvery: 10, TF32: true, CUDNNBenchmark: true,
			NProc: 1, DistTimeout: 10 * time.Minute, DistBackend: "gloo"}}
}

// StrategyParams merges Params and Epsilon (--param and --epsilon).
func (s *TrainSpec) StrategyParams() (map[string]string, error) {
	out := maps.Clone(s.Params)
	if out == nil {
		out = map[string]string{}
	}
	if s.Epsilon != nil {
		e := formatFloat(*s.Epsilon)
		if v, ok := out["epsilon"]; ok && v != e {
			return nil, fmt.Errorf("--epsilon %s and --param epsilon=%s disagree", e, v)
		}
		out["epsilon"] = e
	}
	return out, nil
}

// PrecisionName is the forward passes' precision (fp32 unless given).
func (s *TrainSpec) PrecisionName() string {
	if s.Precision == nil {
		return "fp32"
	}
	return *s.Precision
}

// InitFile is the weights file the run starts from ("" for none).
func (s *TrainSpec) InitFile() string {
	if s.Init == nil {
		return ""
	}
	return *s.Init
}

// Augment is the training augmentation asked for (--randaugment,
// --trivialaugment, --random-erasing), checked.
func (s *TrainSpec) Augment() (data.Augment, error) {
	var a data.Augment
	if s.RandAugment != nil {
		n, m, err := data.ParseRandAugment(*s.RandAugment)
		if err != nil {
			return a, fmt.Errorf("--randaugment %s: %w", *s.RandAugment, err)
		}
		a.RandAugmentN, a.RandAugmentM = n, m
	}
	if s.TrivialAugment != nil {
		a.TrivialAugment = *s.TrivialAugment
	}
	if s.RandomErasing != nil {
		a.Erasing = *s.RandomErasing
	}
	return a, a.Check()
}

// Mixing is the mixup and CutMix asked for (--mixup, --cutmix).
func (s *TrainSpec) Mixing() trainer.Mixing {
	var m trainer.Mixing
	if s.Mixup != nil {
		m.Mixup = *s.Mixup
	}
	if s.CutMix != nil {
		m.CutMix = *s.CutMix
	}
	if s.MixProb != nil {
		m.Prob = *s.MixProb
	}
	if s.MixSwitchProb != nil {
		m.Switch = *s.MixSwitchProb
	}
	return m
}

// checkMixing is Mixing's Check, with a probability given as 0 refused
// (Mixing reads 0 as timm's default).
func (s *TrainSpec) checkMixing() error {
	for _, p := range []struct {
		name string
		v    *float64
	}{{"--mix-prob", s.MixProb}, {"--mix-switch-prob", s.MixSwitchProb}} {
		if p.v != nil && *p.v == 0 {
			return fmt.Errorf("%s 0: want a probability 0 < P ≤ 1 (leave out --mixup and --cutmix for no mixing)", p.name)
		}
	}
	return s.Mixing().Check()
}

// PresetName is the preset given, "" for the model's default.
func (s *TrainSpec) PresetName() string {
	if s.Preset == nil {
		return ""
	}
	return *s.Preset
}

// Config is the run's configuration, keyed as a grid's run of the same
// settings is: the settings that change the result, as given. similarity
// says whether the strategy used a similarity matrix: only then do
// --source, --matrix and --similarity-key belong to the run.
func (s *TrainSpec) Config(similarity bool) (simstore.RunConfig, error) {
	params, err := s.StrategyParams()
	if err != nil {
		return simstore.RunConfig{}, err
	}
	c := simstore.RunConfig{Labels: s.Synsets, Data: s.Data, Model: s.Model, Strategy: s.Strategy,
		Fraction: s.Fraction, Seed: int(s.Seed), Params: params, Preset: s.PresetName()}
	if s.Settings.Given("epochs") {
		c.Epochs = s.Settings.Epochs
	}
	if similarity && s.Matrix == "" && s.SimilarityKey == "" {
		c.Source = s.Source
	}
	for _, f := range trainFlags {
		switch {
		case f.exec || f.own:
			continue
		case f.name == "matrix" || f.name == "similarity-key":
			if v := f.bind(s).String(); similarity && v != "" {
				c.Args = setArg(c.Args, f.name, v)
			}
		case isGiven(f.bind(s)):
			c.Args = setArg(c.Args, f.name, f.bind(s).String())
		}
	}
	if similarity {
		if c.Targets, err = TargetsDigest(s.Strategy, s.Matrix); err != nil {
			return simstore.RunConfig{}, err
		}
	}
	return c, nil
}

// TargetsDigest is RunConfig.Targets for a run of strategy with --matrix
// file: the file's SHA-256 when the strategy trains on the matrix as its
// targets (soft), else "".
func TargetsDigest(strategyName, file string) (string, error) {
	if file == "" || !strategy.MatrixIsTargets(strategyName) {
		return "", nil
	}
	d, err := digest.File(file)
	if err != nil {
		return "", fmt.Errorf("--matrix: %w", err)
	}
	return d, nil
}

func setArg(args map[string]string, k, v string) map[string]string {
	if args == nil {
		args = map[string]string{}
	}
	args[k] = v
	return args
}

// Validate checks what needs no file: each flag's range and names (the
// check of its row of trainFlags, and the trainer's settings table), then
// what flags say together (the data, model, strategy and similarity are
// checked when the run is assembled). It names the flag.
func (s *TrainSpec) Validate() error {
	for _, f := range trainFlags {
		if f.check != nil {
			if err := f.check(s); err != nil {
				return err
			}
		}
	}
	if s.PrecisionName() == "fp16" && s.Exec.Device == "cpu" {
		// Refused here, not by the engine: by then the run directory exists.
		return fmt.Errorf("--precision fp16 needs a CUDA device (--device cuda); on the CPU use --precision bf16 (or auto, or fp32)")
	}
	if s.Matrix != "" && s.SimilarityKey != "" {
		return fmt.Errorf("--matrix %s and --similarity-key %s both name the similarity matrix: give one of them", s.Matrix, s.SimilarityKey)
	}
	if err := s.Settings.Check(); err != nil {
		return err
	}
	if _, err := s.StrategyParams(); err != nil {
		return err
	}
	if _, err := s.Augment(); err != nil {
		return err
	}
	return s.checkMixing()
}

// MaxProcs bounds the processes, threads and goroutines one flag asks for
// (--nproc, --threads, --workers): more is a typo, and each costs memory.
const MaxProcs = 1024

// The checks of trainFlags' rows, worded "--NAME VALUE: want …" as the
// trainer's settings table words its own.
func wholeIn(name string, lo, hi int, note string, p func(s *TrainSpec) int) func(s *TrainSpec) error {
	return func(s *TrainSpec) error {
		if v := p(s); v < lo || v > hi {
			return fmt.Errorf("--%s %d: want a whole number from %d to %d%s", name, v, lo, hi, note)
		}
		return nil
	}
}

func wholeFrom(name string, lo int, note string, p func(s *TrainSpec) int) func(s *TrainSpec) error {
	return func(s *TrainSpec) error {
		if v := p(s); v < lo {
			return fmt.Errorf("--%s %d: want a whole number ≥ %d%s", name, v, lo, note)
		}
		return nil
	}
}

func durationFrom(name string, positive bool, note string, p func(s *TrainSpec) time.Duration) func(s *TrainSpec) error {
	return func(s *TrainSpec) error {
		if v := p(s); v < 0 || (positive && v == 0) {
			want := "≥ 0"
			if positive {
				want = "> 0"
			}
			return fmt.Errorf("--%s %s: want a duration %s%s", name, v, want, note)
		}
		return nil
	}
}

// nameIn accepts one of names (the value is quoted: it may be anything).
func nameIn(name, want string, names []string, p func(s *TrainSpec) string) func(s *TrainSpec) error {
	return func(s *TrainSpec) error {
		if v := p(s); !slices.Contains(names, v) {
			return fmt.Errorf("--%s %q: want %s%s", name, v, want, suggest.DidYouMean(v, names))
		}
		return nil
	}
}

func checkFraction(s *TrainSpec) error {
	if !(s.Fraction > 0 && s.Fraction <= 1) {
		return fmt.Errorf("--fraction %v: want 0 < fraction ≤ 1", s.Fraction)
	}
	return nil
}

func checkInitSkip(s *TrainSpec) error {
	if len(s.InitSkip) > 0 && s.InitFile() == "" {
		return fmt.Errorf("--init-skip %s keeps those modules of --init's weights at their initialisation: give --init FILE.safetensors too, or drop --init-skip",
			strings.Join(s.InitSkip, ","))
	}
	return nil
}

func checkPreset(s *TrainSpec) error {
	if p := s.PresetName(); p != "" {
		if _, err := trainer.PresetByName(p); err != nil {
			return fmt.Errorf("--preset %s: %w", p, err)
		}
	}
	return nil
}

// BindTrainFlags adds lcl train's flags to fs, bound to the fields of s:
// parsing a command line fills s. s's current values are the defaults
// the help shows (NewTrainSpec's for lcl train).
func BindTrainFlags(fs *pflag.FlagSet, s *TrainSpec) {
	for _, f := range trainFlags {
		fl := fs.VarPF(f.bind(s), f.name, "", f.usage)
		if f.bind(s).Type() == "bool" {
			fl.NoOptDefVal = "true"
		}
		fl.Annotations = map[string][]string{FlagGroup: {f.group}}
	}
}

// FlagGroup is the annotation of lcl train's flags that names the help's
// group each is listed under (data, model, ..., the trainer's settings'
// own groups), in the order of the table.
const FlagGroup = "lcl_group"

// Args is the lcl train command line (after "train") that parses back
// into s, written from the flag table in its order: a setting that is
// optional appears when given (a default given stays part of the run's
// key), any other when it differs from lcl train's default; --param once
// per parameter, by name.
func (s *TrainSpec) Args() []string {
	def := NewTrainSpec()
	var args []string
	for _, f := range trainFlags {
		v := f.bind(s)
		switch l := v.(type) {
		case paramsValue, repeatedSetting:
			for _, p := range l.(interface{ GetSlice() []string }).GetSlice() {
				args = append(args, "--"+f.name, p)
			}
			continue
		case stringList:
			if l.Given() {
				args = append(args, "--"+f.name, strings.Join(l.GetSlice(), ","))
			}
			continue
		}
		if g, ok := v.(interface{ Given() bool }); ok {
			if !g.Given() {
				continue
			}
		} else if v.String() == f.bind(&def).String() {
			continue
		}
		switch {
		case v.Type() == "bool" && v.String() == "true":
			args = append(args, "--"+f.name)
		case v.Type() == "bool":
			// A bool flag takes no separate value: "--tf32 false"
			// would read "false" as an argument.
			args = append(args, "--"+f.name+"="+v.String())
		default:
			args = append(args, "--"+f.name, v.String())
		}
	}
	return args
}

// SetTrainFlag sets the flag name of s as the command line --name value
// would, e.g. a grid's args entry; an unknown name is an error. A list
// flag (--init-skip) takes values as its whole list, --param adds each
// NAME=VALUE, any other flag takes the last value.
func (s *TrainSpec) SetTrainFlag(name string, values ...string) error {
	for _, f := range trainFlags {
		if f.name != name {
			continue
		}
		v := f.bind(s)
		if l, ok := v.(stringList); ok {
			return l.Replace(values)
		}
		for _, x := range values {
			if err := v.Set(x); err != nil {
				return fmt.Errorf("--%s %q: %w", name, x, err)
			}
		}
		return nil
	}
	return fmt.Errorf("lcl train has no flag --%s%s", name, suggestFlag(name))
}

// IsTrainFlag reports whether lcl train has the flag name (without dashes).
func IsTrainFlag(name string) bool {
	for _, f := range trainFlags {
		if f.name == name {
			return true
		}
	}
	return false
}

// suggestFlag is "; did you mean --X?" for the train flags close to name.
func suggestFlag(name string) string {
	names := make([]string, len(trainFlags))
	for i, f := range trainFlags {
		names[i] = "--" + f.name
	}
	return suggest.DidYouMean("--"+name, names)
}

// trainFlag is one flag of lcl train, bound to a field of a TrainSpec.
type trainFlag struct {
	name, usage string
	// group is the help's heading the flag is listed under.
	group string
	// exec: how or where the run executes, no part of its configuration.
	exec bool
	// own: a field of the configuration of its own (synsets, model, ...),
	// not an entry of its Args.
	own  bool
	bind func(s *TrainSpec) pflag.Value
	// check is the flag's one check of its value (nil: none, or another
	// table's: the trainer's settings, the augmentation's, the mixing's,
	// the strategy's parameters).
	check func(s *TrainSpec) error
}

// The help's groups of lcl train's flags, in its order; the trainer's
// settings (trainer.SettingsTable) bring their own between preset and run.
const (
	groupData     = "data"
	groupModel    = "model"
	groupStrategy = "strategy"
	groupAugment  = "augmentation"
	groupRun      = "run"
	groupDevice   = "device"
)

// trainFlags are lcl train's flags in the order its help lists them: this
// package's and, after --preset, a flag for each of the trainer's
// settings.
var trainFlags = slices.Concat(specFlags, settingFlags(), runFlags)

// settingFlags are the flags of the trainer's settings table, in its order
// (--epochs is a field of the run's configuration of its own).
func settingFlags() []trainFlag {
	var out []trainFlag
	for _, r := range trainer.SettingsTable() {
		if r.Flagless {
			continue
		}
		out = append(out, trainFlag{name: r.Name, usage: r.Usage, group: r.Group, own: r.Name == "epochs", exec: r.Exec,
			bind: func(s *TrainSpec) pflag.Value { return bindSetting(&s.Settings, r) }})
	}
	return out
}

var specFlags = []trainFlag{
	{name: "synsets", own: true, group: groupData, usage: "label set (fashion-mnist, cifar100, ...): the data's kind when --data is a folder",
		bind: func(s *TrainSpec) pflag.Value { return str(&s.Synsets) }},
	{name: "data", own: true, group: groupData, usage: "data set KIND[:DIR][?opts] or a folder (default: the --synsets kind at its place)",
		bind: func(s *TrainSpec) pflag.Value { return str(&s.Data) }},
	{name: "fraction", own: true, group: groupData, usage: "part of the training set to use, class-stratified (0 < f ≤ 1)",
		bind: func(s *TrainSpec) pflag.Value { return float(&s.Fraction) }, check: checkFraction},
	{name: "seed", own: true, group: groupData, usage: "seed of the subset, initialisation, order, augmentation and dropout",
		bind: func(s *TrainSpec) pflag.Value { return int64v(&s.Seed) }},
	{name: "model", own: true, group: groupModel, usage: "architecture NAME[:key=value,...] (lcl models), or torchscript:FILE.pt[@sha256:HEX]",
		bind: func(s *TrainSpec) pflag.Value { return str(&s.Model) }},
	{name: "trust-model", exec: true, group: groupModel, usage: "let a TorchScript model call operators that reach files, the network or the terminal",
		bind: func(s *TrainSpec) pflag.Value { return boolv(&s.Exec.TrustModel) }},
	{name: "init", group: groupModel, usage: "start from a safetensors file's weights (lcl's, torchvision's or timm's)",
		bind: func(s *TrainSpec) pflag.Value { return optString(&s.Init, "") }},
	{name: "init-skip", group: groupModel, usage: "with --init: module prefixes kept at their initialisation (e.g. fc)",
		bind: func(s *TrainSpec) pflag.Value { return stringList{&s.InitSkip} }, check: checkInitSkip},
	{name: "strategy", own: true, group: groupStrategy, usage: "strategy: " + strings.Join(strategy.Names(), ", ") + ", or a plugin",
		bind: func(s *TrainSpec) pflag.Value { return str(&s.Strategy) }},
	{name: "param", own: true, group: groupStrategy, usage: "strategy parameter NAME=VALUE (repeatable); see lcl plugins list",
		bind: func(s *TrainSpec) pflag.Value { return paramsValue{&s.Params} }},
	{name: "epsilon", own: true, group: groupStrategy, usage: "lcl's decay ε (--param epsilon=ε; paper: 0.9, 0.99, 0.999)",
		bind: func(s *TrainSpec) pflag.Value { return optFloat(&s.Epsilon, "0") }},
	{name: "source", own: true, group: groupStrategy, usage: "similarity: the store's latest matrix of this kind, else that similarity plugin",
		bind: func(s *TrainSpec) pflag.Value { return str(&s.Source) }},
	{name: "matrix", group: groupStrategy, usage: "C×C similarity (soft: target) matrix file, .npy, CSV or text in class order; not --source",
		bind: func(s *TrainSpec) pflag.Value { return str(&s.Matrix) }},
	{name: "similarity-key", group: groupStrategy, usage: "similarity matrix by its store key (lcl store ls), instead of --source",
		bind: func(s *TrainSpec) pflag.Value { return str(&s.SimilarityKey) }},
	{name: "plugin-timeout", exec: true, group: groupStrategy, usage: "longest wait for one plugin call (default $LCL_PLUGIN_TIMEOUT, else 1m)",
		bind:  func(s *TrainSpec) pflag.Value { return duration(&s.Exec.PluginTimeout) },
		check: durationFrom("plugin-timeout", false, " (0: $LCL_PLUGIN_TIMEOUT, else 1m)", func(s *TrainSpec) time.Duration { return s.Exec.PluginTimeout })},
	{name: "randaugment", group: groupAugment, usage: "RandAugment N,M: N of torchvision's 14 ops at magnitude M of 31 (e.g. 2,9)",
		bind: func(s *TrainSpec) pflag.Value {
			return optional[string]{&s.RandAugment, parseRandAugment, func(v string) string { return v }, "N,M", ""}
		}},
	{name: "trivialaugment", group: groupAugment, usage: "TrivialAugmentWide: one op, magnitude and sign drawn per image (torchvision's)",
		bind: func(s *TrainSpec) pflag.Value { return optBool(&s.TrivialAugment) }},
	{name: "random-erasing", group: groupAugment, usage: "random erasing with probability P: a box of 2–33 % of the image set to the mean",
		bind: func(s *TrainSpec) pflag.Value { return optFloat(&s.RandomErasing, "0") }},
	{name: "mixup", group: groupAugment, usage: "mixup α: each batch mixed with its mirror, λ ~ Beta(α, α) (timm's; e.g. 0.8)",
		bind: func(s *TrainSpec) pflag.Value { return optFloat(&s.Mixup, "0") }},
	{name: "cutmix", group: groupAugment, usage: "CutMix α: a box of 1−λ of the image from the mirrored example (timm's; e.g. 1.0)",
		bind: func(s *TrainSpec) pflag.Value { return optFloat(&s.CutMix, "0") }},
	{name: "mix-prob", group: groupAugment, usage: "with --mixup or --cutmix: the probability that a batch is mixed",
		bind: func(s *TrainSpec) pflag.Value { return optFloat(&s.MixProb, "1") }},
	{name: "mix-switch-prob", group: groupAugment, usage: "with --mixup and --cutmix: the probability that a mixed batch uses CutMix",
		bind: func(s *TrainSpec) pflag.Value { return optFloat(&s.MixSwitchProb, "0.5") }},
	{name: "preset", own: true, group: "optimisation", usage: "optimisation preset (default: the model's; the list: above, and lcl models)",
		bind: func(s *TrainSpec) pflag.Value { return optString(&s.Preset, "") }, check: checkPreset},
}

var runFlags = []trainFlag{
	{name: "out", exec: true, group: groupRun, usage: "run directory (default runs/DATA-MODEL-STRATEGY-sSEED)",
		bind: func(s *TrainSpec) pflag.Value { return str(&s.Exec.Out) }},
	{name: "resume", exec: true, group: groupRun, usage: "continue the run in --out from its checkpoint",
		bind: func(s *TrainSpec) pflag.Value { return boolv(&s.Exec.Resume) }},
	{name: "checkpoint-every", exec: true, group: groupRun, usage: "write a checkpoint every N epochs (0: only at the end and on Ctrl-C)",
		bind:  func(s *TrainSpec) pflag.Value { return intv(&s.Exec.CheckpointEvery) },
		check: wholeFrom("checkpoint-every", 0, " (0: only at the end and on Ctrl-C)", func(s *TrainSpec) int { return s.Exec.CheckpointEvery })},
	{name: "no-store", exec: true, group: groupRun, usage: "do not record the run in the store",
		bind: func(s *TrainSpec) pflag.Value { return boolv(&s.Exec.NoStore) }},
	{name: "eval-batch", exec: true, group: groupRun, usage: "evaluation batch size",
		bind:  func(s *TrainSpec) pflag.Value { return intv(&s.Exec.EvalBatch) },
		check: wholeIn("eval-batch", 1, trainer.MaxBatch, "", func(s *TrainSpec) int { return s.Exec.EvalBatch })},
	{name: "metrics-every", exec: true, group: groupRun, usage: "read the training loss and accuracy every N steps (0: CPU 1, CUDA 50)",
		bind:  func(s *TrainSpec) pflag.Value { return intv(&s.Exec.MetricsEvery) },
		check: wholeFrom("metrics-every", 0, " (0: CPU 1, CUDA 50)", func(s *TrainSpec) int { return s.Exec.MetricsEvery })},
	{name: "log-every", exec: true, group: groupRun, usage: "TensorBoard: the training scalars every N optimiser steps (0: once per epoch)",
		bind:  func(s *TrainSpec) pflag.Value { return intv(&s.Exec.LogEvery) },
		check: wholeFrom("log-every", 0, " (0: once per epoch)", func(s *TrainSpec) int { return s.Exec.LogEvery })},
	{name: "device", exec: true, group: groupDevice, usage: "cpu, cuda or cuda:N",
		bind: func(s *TrainSpec) pflag.Value { return str(&s.Exec.Device) }, check: func(s *TrainSpec) error { return trainer.CheckDevice(s.Exec.Device) }},
	{name: "precision", group: groupDevice, usage: "forward passes: fp32, bf16, fp16 (CUDA) or auto (bf16 where the hardware has it)",
		bind:  func(s *TrainSpec) pflag.Value { return optString(&s.Precision, "fp32") },
		check: nameIn("precision", "fp32, bf16, fp16 or auto", []string{"fp32", "bf16", "fp16", "auto"}, (*TrainSpec).PrecisionName)},
	{name: "threads", exec: true, group: groupDevice, usage: "libtorch threads (0 = libtorch's default)",
		bind:  func(s *TrainSpec) pflag.Value { return intv(&s.Exec.Threads) },
		check: wholeIn("threads", 0, MaxProcs, " (0: libtorch's default)", func(s *TrainSpec) int { return s.Exec.Threads })},
	{name: "workers", exec: true, group: groupDevice, usage: "data decoding goroutines (0 = number of CPUs)",
		bind:  func(s *TrainSpec) pflag.Value { return intv(&s.Exec.Workers) },
		check: wholeIn("workers", 0, MaxProcs, " (0: the number of CPUs)", func(s *TrainSpec) int { return s.Exec.Workers })},
	{name: "channels-last", exec: true, group: groupDevice, usage: "channels-last (NHWC) memory format for models and inputs (CPU too)",
		bind: func(s *TrainSpec) pflag.Value { return boolv(&s.Exec.ChannelsLast) }},
	{name: "tf32", exec: true, group: groupDevice, usage: "allow TF32 in float32 matmuls and convolutions (CUDA)",
		bind: func(s *TrainSpec) pflag.Value { return boolv(&s.Exec.TF32) }},
	{name: "cudnn-benchmark", exec: true, group: groupDevice, usage: "cuDNN autotuning of convolution algorithms (CUDA)",
		bind: func(s *TrainSpec) pflag.Value { return boolv(&s.Exec.CUDNNBenchmark) }},
	{name: "nproc", exec: true, group: groupDevice, usage: "data-parallel processes on this machine (Gloo over loopback); --batch is global",
		bind:  func(s *TrainSpec) pflag.Value { return intv(&s.Exec.NProc) },
		check: wholeIn("nproc", 1, MaxProcs, "", func(s *TrainSpec) int { return s.Exec.NProc })},
	{name: "dist-timeout", exec: true, group: groupDevice, usage: "data-parallel: how long a rank waits for a stalled peer before failing",
		bind:  func(s *TrainSpec) pflag.Value { return duration(&s.Exec.DistTimeout) },
		check: durationFrom("dist-timeout", true, "", func(s *TrainSpec) time.Duration { return s.Exec.DistTimeout })},
	{name: "dist-backend", exec: true, group: groupDevice, usage: "data-parallel collectives: gloo (CPU) or nccl (CUDA builds)",
		bind:  func(s *TrainSpec) pflag.Value { return str(&s.Exec.DistBackend) },
		check: nameIn("dist-backend", "gloo (CPU) or nccl (CUDA)", []string{"gloo", "nccl"}, func(s *TrainSpec) string { return s.Exec.DistBackend })},
	{name: "dist-bind", exec: true, group: groupDevice, usage: "rank 0's rendezvous address (default MASTER_ADDR; any: every interface)",
		bind: func(s *TrainSpec) pflag.Value { return str(&s.Exec.DistBind) }},
}

// ApplyPresetFlags sets the flags a recipe preset bundles (trainer.Preset's
// Flags: augmentation, mixing) that s does not give. The two augmentation
// policies exclude each other, so a run that gives either keeps the
// preset's from both; the mixing α are taken as a pair likewise.
func (s *TrainSpec) ApplyPresetFlags(p trainer.Preset) error {
	groups := [][]string{{"randaugment", "trivialaugment"}, {"mixup", "cutmix"}}
	// Which to set is decided before any is: setting one of a group
	// would otherwise count as the command line giving the group.
	var apply []string
	for _, name := range slices.Sorted(maps.Keys(p.Flags)) {
		group := []string{name}
		for _, g := range groups {
			if slices.Contains(g, name) {
				group = g
			}
		}
		if !slices.ContainsFunc(group, s.given) {
			apply = append(apply, name)
		}
	}
	for _, name := range apply {
		if err := s.SetTrainFlag(name, p.Flags[name]); err != nil {
			return fmt.Errorf("preset %s: %w", p.Name, err)
		}
	}
	return s.Validate()
}

// given reports whether the command line gave lcl train's flag name.
func (s *TrainSpec) given(name string) bool {
	for _, f := range trainFlags {
		if f.name == name {
			return isGiven(f.bind(s))
		}
	}
	return false
}
