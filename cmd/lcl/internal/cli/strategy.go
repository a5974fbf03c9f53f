package cli

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/torch"
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

// sdkClasses converts a label set's classes.
func sdkClasses(set *labels.Set) []sdk.Class {
	out := make([]sdk.Class, len(set.Classes))
	for i, c := range set.Classes {
		out[i] = sdk.Class{Index: c.Index, ID: c.ID, Name: c.Name, WNID: c.WNID}
	}
	return out
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

// bridge runs a strategy for a training run whose training examples are a
// subset of a dataset: the plugin sees examples 0..n−1, which are the
// dataset indices train[0..n−1]; weights and subsets are mapped back to
// dataset indices. It also streams features to the plugin after a stage
// that asks for them — lazily, at the first plan of a later stage, so that
// a resumed run (a fresh plugin process) gets them again.
type bridge struct {
	st         *plugins.Strategy
	stages     []sdk.Stage
	train      []int // plugin example k = dataset index train[k]
	datasetLen int
	sent       map[int]bool // stages whose features the plugin has
}

// featureFunc returns the features of a finished stage's final model for
// the given dataset indices, one row per index.
type featureFunc func(ctx context.Context, stage string, indices []int) ([][]float32, error)

// featureChunk is how many examples go in one Features message.
const featureChunk = 2048

func newBridge(ctx context.Context, opened *openedStrategy, classes []sdk.Class, datasetLabels []int, train []int, epochs, stepsPerEpoch int, model string) (*bridge, error) {
	if train == nil {
		train = make([]int, len(datasetLabels))
		for i := range train {
			train[i] = i
		}
	}
	labels := make([]int, len(train))
	for k, i := range train {
		if i < 0 || i >= len(datasetLabels) {
			return nil, fmt.Errorf("training index %d outside the dataset (%d examples)", i, len(datasetLabels))
		}
		labels[k] = datasetLabels[i]
	}
	stages, err := opened.Begin(ctx, sdk.Run{Classes: classes, Similarity: opened.Sim, NumExamples: len(train), Labels: labels,
		Epochs: epochs, StepsPerEpoch: stepsPerEpoch, Model: model, Params: opened.Params})
	if err != nil {
		return nil, err
	}
	return &bridge{st: opened.Strategy, stages: stages, train: train, datasetLen: len(datasetLabels), sent: map[int]bool{}}, nil
}

// plan returns stage s, epoch e's plan with weights and subset in dataset
// indices (weights: one per dataset example, 0 outside the training set).
func (b *bridge) plan(ctx context.Context, s, e, step int, features featureFunc) (*sdk.Plan, error) {
	if s < 0 || s >= len(b.stages) {
		return nil, fmt.Errorf("stage %d: the strategy has %d stages", s, len(b.stages))
	}
	for prev := 0; prev < s; prev++ {
		if b.stages[prev].Features && !b.sent[prev] {
			if err := b.sendFeatures(ctx, prev, features); err != nil {
				return nil, err
			}
		}
	}
	p, err := b.st.Plan(ctx, sdk.PlanAt{Stage: s, Epoch: e, Step: step})
	if err != nil {
		return nil, err
	}
	if p.Weights != nil {
		w := make([]float64, b.datasetLen)
		for k, i := range b.train {
			w[i] = p.Weights[k]
		}
		p.Weights = w
	}
	if p.Subset != nil {
		sub := make([]int, len(p.Subset))
		for k, i := range p.Subset {
			sub[k] = b.train[i]
		}
		p.Subset = sub
	}
	return p, nil
}

func (b *bridge) sendFeatures(ctx context.Context, s int, features featureFunc) error {
	if features == nil {
		return fmt.Errorf("%s: stage %q needs the features of stage %q, which this host cannot provide", b.st.Label(), b.stages[s+1].Name, b.stages[s].Name)
	}
	st := &featureSource{ctx: ctx, b: b, stage: s, features: features}
	if err := b.st.Features(ctx, st); err != nil {
		return err
	}
	b.sent[s] = true
	return nil
}

// featureSource pulls features from the trainer chunk by chunk as the
// plugin stream consumes them, so they never all sit in memory twice.
type featureSource struct {
	ctx      context.Context
	b        *bridge
	stage    int
	features featureFunc
	next     int
}

func (f *featureSource) Next() (*sdk.FeatureChunk, error) {
	if f.next >= len(f.b.train) {
		return nil, io.EOF
	}
	hi := min(f.next+featureChunk, len(f.b.train))
	idx := f.b.train[f.next:hi]
	rows, err := f.features(f.ctx, f.b.stages[f.stage].Name, idx)
	if err != nil {
		return nil, err
	}
	if len(rows) != len(idx) {
		return nil, fmt.Errorf("features: %d rows for %d examples", len(rows), len(idx))
	}
	c := &sdk.FeatureChunk{Stage: f.stage, Indices: make([]int, len(idx))}
	for k := range idx {
		c.Indices[k] = f.next + k
		if k == 0 {
			c.Dim = len(rows[0])
			c.Data = make([]float32, 0, len(idx)*c.Dim)
		}
		if len(rows[k]) != c.Dim {
			return nil, fmt.Errorf("features: rows of %d and %d values", c.Dim, len(rows[k]))
		}
		c.Data = append(c.Data, rows[k]...)
	}
	f.next = hi
	return c, nil
}

// planner adapts a strategy plugin to trainer.Planner.
type planner struct {
	b      *bridge
	stages []trainer.Stage
	// observeErr is the first failed Observe (OnEpoch cannot fail); the next
	// Plan returns it so a crashed plugin stops the run.
	observeErr error
}

var _ trainer.Planner = (*planner)(nil)

// openPlanner starts the strategy named by o for a training run over the
// examples trainIdx of train (nil = all) and returns it as the trainer's
// Planner, the identity entries a resumed run must share (strategy
// parameters and the similarity matrix's digest), and a close function
// that stops the plugins.
func openPlanner(ctx context.Context, f *Factory, o *strategyOptions, fs *pflag.FlagSet, set *labels.Set,
	train trainer.Dataset, trainIdx []int, epochs, batch int, model string) (*planner, map[string]string, func(), error) {
	host := newHost(f, o.Timeout)
	fail := func(err error) (*planner, map[string]string, func(), error) {
		host.Close()
		return nil, nil, nil, err
	}
	var classes []sdk.Class
	if set != nil {
		classes = sdkClasses(set)
	} else {
		names := datasetClasses(train)
		for i := 0; i < train.NumClasses(); i++ {
			c := sdk.Class{Index: i, ID: strconv.Itoa(i), Name: strconv.Itoa(i)}
			if i < len(names) {
				c.ID, c.Name = names[i], names[i]
			}
			classes = append(classes, c)
		}
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
	b, err := newBridge(ctx, opened, classes, labels, trainIdx, epochs, (n+batch-1)/max(batch, 1), model)
	if err != nil {
		return fail(err)
	}
	p := &planner{b: b}
	for i, s := range b.stages {
		if !s.Fresh && i > 0 {
			return fail(fmt.Errorf("%s: stage %q continues the previous stage's model, which the trainer does not support (each stage starts fresh)", opened.Label(), s.Name))
		}
		ts := trainer.Stage{Name: s.Name, Epochs: s.Epochs, Peers: s.Models, Model: s.Model, PerStep: s.PerStep}
		if s.Teacher >= 0 {
			ts.Teacher = b.stages[s.Teacher].Name
		}
		p.stages = append(p.stages, ts)
	}
	// Effective parameters (defaults filled in), so that spelling a default
	// out on --resume is not a different run.
	id := map[string]string{"strategy_version": opened.Info.Version}
	for _, p := range opened.Info.Params {
		id["param "+p.Name] = p.Default
	}
	for k, v := range opened.Params {
		id["param "+k] = v
	}
	if opened.Sim != nil {
		id["similarity"] = matrixDigest(opened.Sim)
	}
	return p, id, host.Close, nil
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

// matrixDigest is a short digest of a similarity matrix: a resumed run must
// use the same one.
func matrixDigest(m *sdk.Matrix) string {
	h := sha256.New()
	var buf [8]byte
	for _, v := range m.Data {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
		h.Write(buf[:])
	}
	return fmt.Sprintf("%d×%d:%x", m.Rows, m.Cols, h.Sum(nil)[:8])
}

func (p *planner) Stages() []trainer.Stage { return p.stages }

func (p *planner) Plan(ctx context.Context, pc trainer.PlanContext) (trainer.Plan, error) {
	if p.observeErr != nil {
		return trainer.Plan{}, p.observeErr
	}
	sp, err := p.b.plan(ctx, pc.StageIndex, pc.Epoch, pc.Step, pc.Features)
	if err != nil {
		return trainer.Plan{}, err
	}
	out := trainer.Plan{Subset: sp.Subset, Coefs: torch.Coefs{Soft: float32(sp.Coef.SoftCE), Hard: float32(sp.Coef.HardCE),
		KD: float32(sp.Coef.KD), KDTemp: float32(sp.Coef.Temperature), Mutual: float32(sp.Coef.Mutual)}}
	if sp.Targets != nil {
		out.Targets = toFloat32(sp.Targets.Data)
	}
	if sp.Weights != nil {
		out.Weights = toFloat32(sp.Weights)
	}
	return out, nil
}

// Observe passes an epoch's metrics to the strategy; use it as (part of)
// trainer.Config.OnEpoch.
func (p *planner) Observe(ctx context.Context, m trainer.EpochMetrics) {
	if p.observeErr != nil {
		return
	}
	peers := m.Peers
	if len(peers) == 0 {
		peers = []trainer.PeerMetrics{m.PeerMetrics}
	}
	for k, pm := range peers {
		err := p.b.st.Observe(ctx, sdk.Metrics{Stage: m.StageIndex, Epoch: m.Epoch - 1, Model: k, Values: map[string]float64{
			"train_loss": pm.TrainLoss, "train_top1": pm.TrainTop1, "test_top1": pm.TestTop1, "test_top5": pm.TestTop5,
			"test_loss": pm.TestLoss, "lr": m.LR}})
		if err != nil {
			p.observeErr = err
			return
		}
	}
}

func toFloat32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}
