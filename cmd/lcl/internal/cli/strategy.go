package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/plugins/sdk"
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

// sdkAttributes converts a label set's attribute tables, sorted by name.
func sdkAttributes(set *labels.Set) []sdk.Attributes {
	var names []string
	for n := range set.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []sdk.Attributes
	for _, n := range names {
		a := set.Attributes[n]
		m := sdk.NewMatrix(len(a.Values), len(a.Names))
		for i, row := range a.Values {
			copy(m.Row(i), row)
		}
		out = append(out, sdk.Attributes{Name: n, Names: a.Names, Values: m})
	}
	return out
}

// similarity finds the C×C matrix a strategy needs: --matrix FILE, else the
// latest store matrix of kind --source for the label set, else a similarity
// plugin named --source. It returns the matrix and where it came from.
func (o *strategyOptions) similarity(ctx context.Context, f *Factory, host *plugins.Host, set *labels.Set, classes []sdk.Class) (*sdk.Matrix, string, error) {
	c := len(classes)
	if o.Matrix != "" {
		r, cols, data, err := npy.ReadFile(o.Matrix)
		if err != nil {
			return nil, "", err
		}
		if c > 0 && (r != c || cols != c) {
			return nil, "", fmt.Errorf("--matrix %s is %d×%d, the run has %d classes", o.Matrix, r, cols, c)
		}
		if r != cols {
			return nil, "", fmt.Errorf("--matrix %s is %d×%d, want a square matrix", o.Matrix, r, cols)
		}
		return &sdk.Matrix{Rows: r, Cols: cols, Data: data}, o.Matrix, nil
	}
	if set == nil {
		return nil, "", usagef("give --synsets (with --source) or --matrix FILE.npy")
	}
	st, err := f.ReadStore()
	if err != nil {
		return nil, "", err
	}
	if o.Key != "" {
		m, err := st.GetMatrixByKey(ctx, o.Key)
		if err != nil {
			return nil, "", fmt.Errorf("--similarity-key %s: %w", o.Key, err)
		}
		if m.LabelSet != set.Name {
			return nil, "", fmt.Errorf("--similarity-key %s is a matrix of label set %s, the run's is %s", o.Key, m.LabelSet, set.Name)
		}
		return storeMatrix(m, set)
	}
	m, err := st.LatestMatrix(ctx, set.Name, o.Source)
	switch {
	case err == nil:
		return storeMatrix(m, set)
	case !errors.Is(err, simstore.ErrNotFound):
		return nil, "", err
	}
	if _, rerr := host.Resolve(plugins.KindSimilarity, o.Source); rerr != nil {
		return nil, "", fmt.Errorf("no %q similarity matrix for %s in the store (%s), and no similarity plugin of that name: make one with `lcl similarity`, or pass --matrix FILE.npy",
			o.Source, set.Name, st.Dir())
	}
	// The source runs in another process, which may need to open the store
	// read-only: release ours (it reopens on demand).
	if err := f.Close(); err != nil {
		return nil, "", err
	}
	src, err := host.Source(o.Source)
	if err != nil {
		return nil, "", err
	}
	defer src.Close()
	var hier []sdk.Node
	for _, n := range set.Hierarchy {
		hier = append(hier, sdk.Node{ID: n.ID, Name: n.Name, Parent: n.Parent})
	}
	sim, err := src.Compute(ctx, sdk.SimilarityRequest{LabelSet: set.Name, Classes: classes, Attributes: sdkAttributes(set), Hierarchy: hier})
	if err != nil {
		return nil, "", err
	}
	return sim, src.Label(), nil
}

// storeMatrix puts a stored matrix into the label set's class order.
func storeMatrix(m *simstore.Matrix, set *labels.Set) (*sdk.Matrix, string, error) {
	c := len(set.Classes)
	pos := make(map[string]int, m.N())
	for i, id := range m.Classes {
		pos[id] = i
	}
	out := sdk.NewMatrix(c, c)
	for i, a := range set.Classes {
		pa, ok := pos[a.ID]
		if !ok {
			return nil, "", fmt.Errorf("stored %s matrix for %s has no class %q; recompute it", m.Kind, set.Name, a.ID)
		}
		for j, b := range set.Classes {
			out.Set(i, j, float64(m.At(pa, pos[b.ID])))
		}
	}
	return out, fmt.Sprintf("store %s/%s (%s)", m.LabelSet, m.Kind, m.Provenance.CreatedAt.Format(time.RFC3339)), nil
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
		out.Sim, out.From, err = o.similarity(ctx, f, host, set, classes)
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

// trainLabelSet is the label set of a training run: --synsets, else the
// built-in set named by the data spec's kind (fashion-mnist:DIR → fashion-mnist),
// else nil.
func trainLabelSet(synsets, spec string) *labels.Set {
	if synsets != "" {
		if set, err := labels.Load(synsets); err == nil {
			return set
		}
		return nil
	}
	kind, _, _ := strings.Cut(spec, ":")
	kind, _, _ = strings.Cut(kind, "?")
	if set, err := labels.Builtin(kind); err == nil {
		return set
	}
	return nil
}

// datasetClasses returns the dataset's class names when it knows them.
func datasetClasses(ds trainer.Dataset) []string {
	if c, ok := ds.(interface{ Classes() []string }); ok {
		return c.Classes()
	}
	return nil
}
