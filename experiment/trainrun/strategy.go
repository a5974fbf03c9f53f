// Package trainrun assembles a training run from its experiment.TrainSpec:
// the data (spec, label set, class-stratified fraction), the optimisation
// (a preset and the settings given over it), the strategy as the trainer's
// planner with its similarity matrix (found in a fixed order), the
// trainer's Config, and the run's record in the store. lcl train (alone,
// as a grid's run or as a data-parallel worker) and lcl plan build their
// runs with it; the caller owns processes, printing and the store handle
// (Env).
package trainrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/internal/suggest"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/simstore"
)

// UsageError is an error in what the run was asked for (a flag's value,
// a missing flag), as opposed to a failure while running it: lcl exits
// with its usage code.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, a ...any) error { return &UsageError{fmt.Errorf(format, a...)} }

// Env is what assembling a run needs from its caller, opened on demand.
type Env struct {
	// Store opens the store for reading (similarity matrices).
	Store func() (similarity.MatrixStore, error)
	// StoreDir names the store in messages.
	StoreDir string
	// Release closes the caller's store handle: a similarity plugin runs
	// in a process of its own, which opens the store itself.
	Release func() error
	// Host makes the plugin host (the caller closes it); timeout bounds
	// one plugin call (0: the host's default).
	Host func(timeout time.Duration) *plugins.Host
	// Logf, when set, receives one line per note ("similarity from ...").
	Logf func(format string, a ...any)
	// WordNet opens WordNet for the hierarchical metrics of a label set
	// without a hierarchy of its own: at least the synsets wnids and their
	// ancestors (nil: none).
	WordNet WordNetFunc
	// Prepare, when set, runs before the similarity plugin source computes
	// set's matrix (the store holds none of that kind): it may store what
	// the plugin reads (lcl embeds a label set's missing class vectors
	// for the semantic source) and says so through Logf.
	Prepare func(ctx context.Context, source string, set *labels.Set) error
}

func (e Env) logf(format string, a ...any) {
	if e.Logf != nil {
		e.Logf(format, a...)
	}
}

// Selection chooses a strategy and, for one that needs it, its similarity
// matrix: File (a C×C .npy), else Key (a store key), else the latest
// store matrix of kind Source for the label set, else what the similarity
// plugin named Source computes.
type Selection struct {
	Strategy string
	Params   map[string]string
	// EpsilonFlag says Params["epsilon"] was given as --epsilon (not
	// --param epsilon=): errors name the flag the user wrote.
	EpsilonFlag bool
	Source      string
	File        string
	Key         string
}

// Strategy is a started strategy with what its Begin needs.
type Strategy struct {
	*plugins.Strategy
	Info   sdk.StrategyInfo
	Params map[string]string
	Sim    *sdk.Matrix
	From   string // where the similarity came from, "" when none
}

// Run describes a run of the strategy for curriculum.New.
func (s *Strategy) Run(classes []sdk.Class, labels, train []int, epochs, steps int, model string) curriculum.Run {
	return curriculum.Run{Info: s.Info, Params: s.Params, Classes: classes, Similarity: s.Sim, Labels: labels,
		Train: train, Epochs: epochs, StepsPerEpoch: steps, Model: model}
}

// OpenStrategy starts the strategy sel names on host and finds its
// similarity matrix when it needs one. Its parameters are checked first
// (checkParams), so that a bad value is a usage error before any matrix
// is looked for or computed. The caller closes the host.
func OpenStrategy(ctx context.Context, env Env, host *plugins.Host, sel Selection, set *labels.Set, classes []sdk.Class, epochs int) (*Strategy, error) {
	if _, err := host.Resolve(plugins.KindStrategy, sel.Strategy); err != nil {
		return nil, usagef("--strategy: %v", err)
	}
	st, err := host.Strategy(sel.Strategy)
	if err != nil {
		return nil, err
	}
	info, err := st.Describe(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	// The trial Begin needs a second instance: st's Begin is the run's.
	second := func() (*plugins.Strategy, func(), error) {
		p, err := host.Strategy(sel.Strategy)
		if err != nil {
			return nil, nil, err
		}
		return p, p.Close, nil
	}
	if err := checkParams(ctx, second, sel, info, classes, epochs); err != nil {
		st.Close()
		return nil, err
	}
	out := &Strategy{Strategy: st, Info: info, Params: sel.Params}
	if !info.NeedsSimilarity {
		return out, nil
	}
	if out.Sim, out.From, err = Similarity(ctx, env, host, sel, set, len(classes)); err != nil {
		st.Close()
		return nil, err
	}
	return out, nil
}

// CheckStrategy starts the strategy sel names on host, checks its
// parameters as a run does before it starts (checkParams) and stops it:
// what lcl experiment run checks for every run of a grid before the first
// starts. classes are the run's classes, epochs its epochs.
func CheckStrategy(ctx context.Context, host *plugins.Host, sel Selection, classes []sdk.Class, epochs int) error {
	if _, err := host.Resolve(plugins.KindStrategy, sel.Strategy); err != nil {
		return usagef("--strategy: %v", err)
	}
	st, err := host.Strategy(sel.Strategy)
	if err != nil {
		return err
	}
	defer st.Close()
	info, err := st.Describe(ctx)
	if err != nil {
		return err
	}
	// The instance is stopped after the check: its own Begin is the trial
	// (one plugin process per check, not two: a grid checks every
	// parameter set, and a process costs its start-up).
	same := func() (*plugins.Strategy, func(), error) { return st, func() {}, nil }
	return checkParams(ctx, same, sel, info, classes, epochs)
}

// checkParams checks the parameters given against what the strategy
// declares (info: their names and types, a number finite), then, when
// any is given, their values by a trial Begin (trialBegin), so that a bad
// value (ε = 1.5, ols's smoothing = 2) is a usage error before any matrix
// is looked for or anything is written.
func checkParams(ctx context.Context, probe prober, sel Selection, info sdk.StrategyInfo, classes []sdk.Class, epochs int) error {
	if _, err := sdk.ParseParams(info.Params, sel.Params); err != nil {
		var ue *sdk.UnknownParamError
		if errors.As(err, &ue) {
			return unknownParam(sel, info.Name, ue)
		}
		return usagef("%sstrategy %s: %v", paramFlag(sel, info.Params), info.Name, err)
	}
	if len(sel.Params) == 0 {
		return nil
	}
	return trialBegin(ctx, probe, sel, info, classes, epochs)
}

// paramFlag is "--param NAME=VALUE: " (or "--epsilon VALUE: ") for the
// first parameter given whose value does not parse, "" for none.
func paramFlag(sel Selection, specs []sdk.Param) string {
	for _, k := range slices.Sorted(maps.Keys(sel.Params)) {
		if _, err := sdk.ParseParams(specs, map[string]string{k: sel.Params[k]}); err != nil {
			if k == "epsilon" && sel.EpsilonFlag {
				return "--epsilon " + sel.Params[k] + ": "
			}
			return "--param " + k + "=" + sel.Params[k] + ": "
		}
	}
	return ""
}

// unknownParam is the usage error of a parameter the strategy does not
// take: the flag as given, what the strategy takes (the nearest first),
// and else the built-in strategies that take it.
func unknownParam(sel Selection, strategy string, e *sdk.UnknownParamError) error {
	flag := fmt.Sprintf("--param %s=%s", e.Name, e.Value)
	if e.Name == "epsilon" && sel.EpsilonFlag {
		flag = "--epsilon " + e.Value
	}
	if len(e.Known) == 0 {
		flag += fmt.Sprintf(": strategy %s takes no parameters", strategy)
	} else {
		flag += fmt.Sprintf(": strategy %s takes %s", strategy, strings.Join(e.Known, ", "))
		if hint := suggest.DidYouMean(e.Name, e.Known); hint != "" {
			return usagef("%s%s", flag, hint)
		}
	}
	if others := slices.DeleteFunc(plugins.BuiltinStrategiesTaking(e.Name), func(s string) bool { return s == strategy }); len(others) > 0 {
		flag += fmt.Sprintf(" (%s is a parameter of --strategy %s)", e.Name, strings.Join(others, " or "))
	}
	return usagef("%s", flag)
}

// prober gives an instance of the strategy whose Begin may be a trial, and
// what releases it.
type prober func() (*plugins.Strategy, func(), error)

// trialBegin begins an instance of the strategy that runs nothing after
// (on the identity similarity when it needs one; one example per class)
// and releases it: what the strategy refuses then, it refuses because of
// its parameters.
func trialBegin(ctx context.Context, instance prober, sel Selection, info sdk.StrategyInfo, classes []sdk.Class, epochs int) error {
	probe, release, err := instance()
	if err != nil {
		return err
	}
	defer release()
	c := len(classes)
	var id *sdk.Matrix
	if info.NeedsSimilarity {
		// Rows made as they are sent: 21,843 classes' identity is 1.9 GB.
		id = sdk.NewRowMatrix(c, c, func(i int, row []float32) {
			clear(row)
			row[i] = 1
		})
	}
	nominal := make([]int, c)
	for i := range c {
		nominal[i] = i
	}
	_, err = probe.Begin(ctx, sdk.Run{Classes: classes, Similarity: id, NumExamples: c, Labels: nominal,
		Epochs: max(epochs, 1), StepsPerEpoch: 1, Params: sel.Params})
	if err != nil && ctx.Err() == nil {
		var given []string
		for _, k := range slices.Sorted(maps.Keys(sel.Params)) {
			given = append(given, k+"="+sel.Params[k])
		}
		return usagef("strategy %s refuses its parameters (%s): %v", info.Name, strings.Join(given, ", "), err)
	}
	return err
}

// Similarity finds the C×C matrix of sel for the label set (nil with a
// file): File, else Key, else the latest stored matrix of kind Source,
// else what the similarity plugin Source computes (checked and normalised
// as lcl similarity does; not stored). It returns the matrix in the run's
// class order and where it came from.
func Similarity(ctx context.Context, env Env, host *plugins.Host, sel Selection, set *labels.Set, classes int) (*sdk.Matrix, string, error) {
	ref := similarity.Ref{File: sel.File, Key: sel.Key, Source: sel.Source, Set: set}
	var st similarity.MatrixStore
	switch {
	case sel.File != "" && strategy.MatrixIsTargets(sel.Strategy):
		return targetFile(sel, set, classes)
	case sel.Key == "" && strategy.MatrixIsTargets(sel.Strategy):
		// Not the latest --source matrix: a similarity is no target matrix.
		return nil, "", usagef("--strategy %s trains on a C×C target matrix: give it as --matrix FILE (CSV, text or .npy), or --similarity-key KEY", sel.Strategy)
	case sel.File != "":
		ref.Key, ref.Source = "", ""
	case sel.Key == "" && sel.Source == "matrix":
		// The matrix source reads a file: lcl train and plan name it --matrix.
		return nil, "", usagef("--source matrix reads a matrix file: give it as --matrix FILE.npy (or CSV/text)")
	case set == nil:
		return nil, "", usagef("give --synsets (with --source) or --matrix FILE.npy")
	default:
		if sel.Key != "" {
			ref.Source = ""
		}
		s, err := env.Store()
		if err != nil {
			return nil, "", err
		}
		st = s
	}
	m, err := similarity.Resolve(ctx, st, ref)
	if ref.Source != "" && errors.Is(err, simstore.ErrNotFound) {
		return pluginSimilarity(ctx, env, host, sel.Source, set)
	}
	if err != nil {
		return nil, "", err
	}
	if st != nil && env.Release != nil {
		// The matrix is read: release the store, and with it the value-log
		// pages the read mapped (1.9 GB for ImageNet-21k), for the run.
		if err := env.Release(); err != nil {
			return nil, "", err
		}
	}
	if m.N() != classes {
		return nil, "", fmt.Errorf("%s is %d×%d, the run has %d classes", m.Label, m.N(), m.N(), classes)
	}
	return &sdk.Matrix{Rows: m.N(), Cols: m.N(), Data: m.Data}, m.From, nil
}

// targetFile reads and checks the target matrix file of a strategy that
// trains on its matrix as the targets (soft): its shape for the run, its
// values and its row sums, each error naming the file's line.
func targetFile(sel Selection, set *labels.Set, classes int) (*sdk.Matrix, string, error) {
	// ParseParams accepted the value already (OpenStrategy).
	normalize, _ := strconv.ParseBool(sel.Params["normalize"])
	data, c, err := similarity.ReadTargets(sel.File, similarity.TargetOptions{Set: set, Classes: classes,
		Tolerance: strategy.TargetSumTolerance, Normalize: normalize})
	if err != nil {
		return nil, "", usagef("--matrix: %v", err)
	}
	return &sdk.Matrix{Rows: c, Cols: c, Data: data}, sel.File, nil
}

// pluginSimilarity computes the matrix with the similarity plugin source.
func pluginSimilarity(ctx context.Context, env Env, host *plugins.Host, source string, set *labels.Set) (*sdk.Matrix, string, error) {
	if _, err := host.Resolve(plugins.KindSimilarity, source); err != nil {
		return nil, "", fmt.Errorf("no %q similarity matrix for %s in the store (%s), and no similarity plugin of that name (%v): make one with `lcl similarity`, or pass --matrix FILE.npy",
			source, set.Name, env.StoreDir, err)
	}
	if source == "visual" && len(set.Attributes) == 0 {
		// lcl similarity takes the attributes of other sets as a flag;
		// a run finds the matrix that made.
		return nil, "", fmt.Errorf("label set %s has no built-in attributes: make its visual similarity with `lcl similarity --synsets %s --source visual --attributes FILE` first (a run then finds it in the store), or pass --matrix FILE.npy",
			set.Name, set.Name)
	}
	if env.Prepare != nil {
		if err := env.Prepare(ctx, source, set); err != nil {
			return nil, "", err
		}
	}
	if env.Release != nil {
		if err := env.Release(); err != nil {
			return nil, "", err
		}
	}
	src, err := host.SimilaritySource(ctx, source)
	if err != nil {
		return nil, "", err
	}
	defer src.Close()
	res, err := similarity.Compute(ctx, src, set, nil)
	if err != nil {
		return nil, "", err
	}
	return &sdk.Matrix{Rows: res.N(), Cols: res.N(), Data: res.Data}, src.Label(), nil
}
