package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/trainer"
)

// strategyOptions are the flags that choose a strategy and its similarity
// matrix; lcl plan and lcl train share them.
type strategyOptions struct {
	Strategy string
	Params   []string // --param NAME=VALUE, repeatable
	Epsilon  float64  // --epsilon, shorthand for --param epsilon=
	Source   string   // similarity: a store matrix kind, or a similarity plugin
	Matrix   string   // similarity: an .npy file
	Key      string   // similarity: a store matrix key
	Timeout  time.Duration
}

func (o *strategyOptions) addFlags(fs *pflag.FlagSet, defaultStrategy string) {
	fs.StringVar(&o.Strategy, "strategy", defaultStrategy, "training strategy: a built-in (sl, ls, lcl, kd, dml, cn) or a plugin; see lcl plugins list")
	o.addParamFlags(fs)
}

// addParamFlags adds every strategy flag but --strategy.
func (o *strategyOptions) addParamFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.Params, "param", nil, "strategy parameter NAME=VALUE (repeatable); see lcl plugins list")
	fs.Float64Var(&o.Epsilon, "epsilon", 0, "lcl's decay ε (shorthand for --param epsilon=ε; paper: 0.9, 0.99, 0.999)")
	fs.StringVar(&o.Source, "source", "semantic", "similarity matrix: the latest matrix of this kind in the store, else a similarity plugin of this name")
	fs.StringVar(&o.Matrix, "matrix", "", "similarity matrix from a C×C .npy file (class order), instead of --source")
	fs.StringVar(&o.Key, "similarity-key", "", "similarity matrix by its store key (lcl store ls), instead of --source")
	fs.DurationVar(&o.Timeout, "plugin-timeout", 0, "longest wait for one plugin call (default $LCL_PLUGIN_TIMEOUT, else 1m)")
}

// params merges --param and --epsilon.
func (o *strategyOptions) params(fs *pflag.FlagSet) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range o.Params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usagef("--param %q: want NAME=VALUE", p)
		}
		out[k] = v
	}
	if fs.Changed("epsilon") {
		if v, ok := out["epsilon"]; ok && v != strconv.FormatFloat(o.Epsilon, 'g', -1, 64) {
			return nil, usagef("--epsilon %g and --param epsilon=%s disagree", o.Epsilon, v)
		}
		out["epsilon"] = strconv.FormatFloat(o.Epsilon, 'g', -1, 64)
	}
	return out, nil
}

// similarity finds the C×C matrix a strategy needs: --matrix FILE, else
// --similarity-key, else the latest store matrix of kind --source for the
// label set, else what the similarity plugin named --source computes. It
// returns the matrix in the run's class order and where it came from.
func (o *strategyOptions) similarity(ctx context.Context, f *Factory, set *labels.Set, classes []sdk.Class) (*sdk.Matrix, string, error) {
	ref := similarity.Ref{File: o.Matrix, Key: o.Key, Source: o.Source, Set: set}
	var st similarity.MatrixStore
	switch {
	case o.Matrix != "":
		ref.Key, ref.Source = "", ""
	case set == nil:
		return nil, "", usagef("give --synsets (with --source) or --matrix FILE.npy")
	default:
		if o.Key != "" {
			ref.Source = ""
		}
		s, err := f.ReadStore()
		if err != nil {
			return nil, "", err
		}
		st = s
	}
	m, err := similarity.Resolve(ctx, st, ref)
	if ref.Source != "" && errors.Is(err, simstore.ErrNotFound) {
		return o.pluginSimilarity(ctx, f, set)
	}
	if err != nil {
		return nil, "", err
	}
	if st != nil {
		// The matrix is read: release the store (it reopens on demand), and
		// with it the value-log pages the read mapped (1.9 GB for
		// ImageNet-21k) for the rest of the run.
		if err := f.Close(); err != nil {
			return nil, "", err
		}
	}
	if m.N() != len(classes) {
		return nil, "", fmt.Errorf("%s is %d×%d, the run has %d classes", m.Label, m.N(), m.N(), len(classes))
	}
	return &sdk.Matrix{Rows: m.N(), Cols: m.N(), Data: m.Data}, m.From, nil
}

// pluginSimilarity computes the matrix with the similarity plugin --source
// (checked and normalised as lcl similarity does; not stored).
func (o *strategyOptions) pluginSimilarity(ctx context.Context, f *Factory, set *labels.Set) (*sdk.Matrix, string, error) {
	host := newHost(f, o.Timeout)
	defer host.Close()
	if _, err := host.Resolve(plugins.KindSimilarity, o.Source); err != nil {
		return nil, "", fmt.Errorf("no %q similarity matrix for %s in the store (%s), and no similarity plugin of that name: make one with `lcl similarity`, or pass --matrix FILE.npy",
			o.Source, set.Name, f.storeDir())
	}
	// The source runs in another process, which may need to open the store
	// read-only: release ours (it reopens on demand).
	if err := f.Close(); err != nil {
		return nil, "", err
	}
	src, err := host.SimilaritySource(ctx, o.Source)
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

// openedStrategy is a started strategy with what Begin needs.
type openedStrategy struct {
	*plugins.Strategy
	Info   sdk.StrategyInfo
	Params map[string]string
	Sim    *sdk.Matrix
	From   string // where the similarity came from, "" when none
}

// run describes a run of the opened strategy for curriculum.New.
func (o *openedStrategy) run(classes []sdk.Class, labels, train []int, epochs, steps int, model string) curriculum.Run {
	return curriculum.Run{Info: o.Info, Params: o.Params, Classes: classes, Similarity: o.Sim, Labels: labels,
		Train: train, Epochs: epochs, StepsPerEpoch: steps, Model: model}
}

// openStrategy starts the strategy named by o and finds its similarity
// matrix when it needs one. The caller closes the host.
func openStrategy(ctx context.Context, f *Factory, host *plugins.Host, o *strategyOptions, fs *pflag.FlagSet, set *labels.Set, classes []sdk.Class) (*openedStrategy, error) {
	params, err := o.params(fs)
	if err != nil {
		return nil, err
	}
	if _, err := host.Resolve(plugins.KindStrategy, o.Strategy); err != nil {
		return nil, usagef("--strategy: %v", err)
	}
	st, err := host.Strategy(o.Strategy)
	if err != nil {
		return nil, err
	}
	info, err := st.Describe(ctx)
	if err != nil {
		return nil, err
	}
	out := &openedStrategy{Strategy: st, Info: info, Params: params}
	if info.NeedsSimilarity {
		out.Sim, out.From, err = o.similarity(ctx, f, set, classes)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// openPlanner starts the strategy named by o for a training run over the
// examples trainIdx of train (nil = all) and returns it as the trainer's
// Planner, and a close function that stops the plugins.
func openPlanner(ctx context.Context, f *Factory, o *strategyOptions, fs *pflag.FlagSet, set *labels.Set,
	train trainer.Dataset, trainIdx []int, epochs, batch int, model string) (*curriculum.Bridge, func(), error) {
	host := newHost(f, o.Timeout)
	fail := func(err error) (*curriculum.Bridge, func(), error) {
		host.Close()
		return nil, nil, err
	}
	var classes []sdk.Class
	if set != nil {
		classes = curriculum.Classes(set)
	} else {
		classes = curriculum.NumberedClasses(train.NumClasses(), datasetClasses(train))
	}
	if len(classes) != train.NumClasses() {
		return fail(fmt.Errorf("label set has %d classes, the data %d", len(classes), train.NumClasses()))
	}
	opened, err := openStrategy(ctx, f, host, o, fs, set, classes)
	if err != nil {
		return fail(err)
	}
	if opened.From != "" {
		f.Logf("lcl train: %s similarity from %s", opened.Info.Name, opened.From)
	}
	labels := make([]int, train.Len())
	for i := range labels {
		labels[i] = train.Label(i)
	}
	n := len(trainIdx)
	if trainIdx == nil {
		n = train.Len()
	}
	b, err := curriculum.New(ctx, opened.Strategy, opened.run(classes, labels, trainIdx, epochs, (n+batch-1)/max(batch, 1), model))
	if err != nil {
		return fail(err)
	}
	if err := b.Trainable(); err != nil {
		return fail(err)
	}
	return b, host.Close, nil
}

// datasetClasses returns the dataset's class names when it knows them.
func datasetClasses(ds trainer.Dataset) []string {
	if c, ok := ds.(interface{ Classes() []string }); ok {
		return c.Classes()
	}
	return nil
}
