package trainrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"time"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/runlog"
	"github.com/lcl-project/lcl/trainer/torch"
	"github.com/lcl-project/lcl/wordnet"
)

// Run is an assembled training run: what trainer.Run needs and what made it.
type Run struct {
	Spec experiment.TrainSpec
	// DataSpec is the data set spec (--data, or the kind --synsets names).
	DataSpec string
	Data     *data.RunData
	// Preset names the optimisation preset applied (given, or the model's).
	Preset string
	// PrecisionNote says what --precision auto chose and why ("" when the
	// precision was given): the command prints it.
	PrecisionNote string
	// Config is the trainer's run; Plan fills its Planner. Progress,
	// OnEpoch, Group and Resume are the caller's to set.
	Config  trainer.Config
	Planner *curriculum.Bridge
	close   func()
}

// Check validates spec without reading data or starting plugins (what a
// launcher checks before it starts workers): ranges, names, the data
// spec and its folders, the preset and the settings given over it
// (TrainSpec.Validate). It returns the data set spec.
func Check(spec *experiment.TrainSpec) (string, error) {
	if err := spec.Validate(); err != nil {
		return "", &UsageError{err}
	}
	ds, err := data.SpecFor(spec.Synsets, spec.Data)
	var se *data.SpecError
	if errors.As(err, &se) || errors.Is(err, fs.ErrNotExist) {
		// A folder that is not there is what was asked for, not a failure.
		return "", &UsageError{err}
	} else if err != nil {
		return "", err
	}
	if err := data.Check(ds); errors.Is(err, fs.ErrNotExist) {
		return "", usagef("--data %s: %w", ds, err)
	} else if err != nil {
		return "", fmt.Errorf("--data %s: %w", ds, err)
	}
	if f := spec.InitFile(); f != "" {
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			return "", usagef("--init %s: no such file (give lcl's model.safetensors of a run, or a state dict written as safetensors: docs/trainer.md)", f)
		}
	}
	// The strategy's name, not its parameters (those need it started).
	if _, err := (&plugins.Host{}).Resolve(plugins.KindStrategy, spec.Strategy); err != nil {
		return "", usagef("--strategy: %v", err)
	}
	if err := models.Builtin().Check(spec.Model); err != nil {
		return "", usagef("--model: %v", err)
	}
	return ds, nil
}

// Open checks spec, opens its data and resolves its optimisation for a
// run of world data-parallel processes (1 alone). The run directory
// defaults to trainer.DefaultRunDir.
func Open(spec experiment.TrainSpec, world int) (*Run, error) {
	ds, err := Check(&spec)
	if err != nil {
		return nil, err
	}
	// auto is resolved here, on the machine that runs: the choice is how the
	// run executes, recorded in result.json, while the run keeps the
	// identity "auto" wherever it runs.
	var prec torch.Precision
	var note string
	if spec.PrecisionName() == "auto" {
		var why string
		prec, why = torch.AutoPrecision(spec.Exec.Device)
		note = fmt.Sprintf("precision auto: %s (%s)", prec, why)
	} else if prec, err = torch.ParsePrecision(spec.PrecisionName()); err != nil {
		return nil, usagef("--precision: %v", err)
	} else if auto, why := torch.AutoPrecision(spec.Exec.Device); prec == torch.BF16 && auto != torch.BF16 {
		// Asked for by name, bf16 runs as asked; but without bf16 units
		// libtorch emulates it, and the user should know why the run is
		// slow: the mlp's bf16 runs took 15x (1.13) and 3.4x (2.6) its fp32
		// time on a Zen 3 EPYC (docs/trainer.md).
		note = fmt.Sprintf("precision bf16: %s, so libtorch emulates bf16, several times slower than fp32 (--precision auto picks fp32 here)", why)
	}
	d, err := data.OpenRun(ds, spec.Synsets, spec.Fraction, spec.Seed)
	if err != nil {
		return nil, err
	}
	preset := spec.PresetName()
	if preset == "" {
		c, h, w := d.Train.Shape()
		if preset, err = trainer.DefaultPreset(spec.Model, models.Input{C: c, H: h, W: w, NumClasses: d.Train.NumClasses()}); err != nil {
			return nil, usagef("--model: %v", err)
		}
	}
	p, err := trainer.PresetByName(preset)
	if err != nil {
		return nil, usagef("--preset: %v", err)
	}
	// A recipe preset's augmentation and mixing, where the run gives none:
	// on a copy, so that the run keeps the configuration it was asked as
	// (its store key; a grid's cell with the same preset is the same run).
	eff := spec
	if err := eff.ApplyPresetFlags(p); err != nil {
		return nil, usagef("--preset %s: %v", preset, err)
	}
	aug, err := eff.Augment()
	if err != nil {
		return nil, &UsageError{err}
	}
	if _, ok := d.Train.(data.U8Decoder); aug.Enabled() && !ok {
		return nil, usagef("--data %s: the %s data set has no pixels to augment (%s)", ds, data.Kind(ds), aug)
	}
	op, err := p.Apply(world, spec.Settings)
	if err != nil {
		return nil, usagef("%v", err)
	}
	e := spec.Exec
	if e.Out == "" {
		e.Out = trainer.DefaultRunDir(data.Kind(ds), spec.Model, spec.Strategy, spec.Seed)
		spec.Exec.Out = e.Out
	}
	cfg := trainer.Config{
		Out: e.Out, Model: spec.Model, Train: d.Train, Test: d.Test, TrainIndices: d.Indices,
		BatchSource: data.BatchSource(data.LoaderConfig{Workers: e.Workers, Augment: aug}),
		Augment:     aug.String(), // BatchSource's, for the identity and result.json
		Mix:         eff.Mixing(),
		Strategy:    spec.Strategy, Optim: op, Seed: spec.Seed, Threads: e.Threads, Device: e.Device,
		EvalBatch: e.EvalBatch, CheckpointEvery: e.CheckpointEvery,
		Init: spec.InitFile(), InitSkip: spec.InitSkip,
		Precision: prec, ChannelsLast: e.ChannelsLast, TF32: e.TF32, CUDNNBenchmark: e.CUDNNBenchmark,
		MetricsEvery: e.MetricsEvery,
		// TensorBoard event files and metrics.csv beside metrics.jsonl.
		Sink: &runlog.Log{Dir: e.Out, Every: e.LogEvery},
	}
	if e.TrustModel {
		cfg.Models = models.Builtin()
		cfg.Models.TrustScripts = true
	}
	if spec.Settings.ValFraction > 0 {
		cfg.ModelSelection = spec.Settings.ModelSelection
	}
	cfg.TestEvery = spec.Settings.TestEvery // applies without a split too
	return &Run{Spec: spec, DataSpec: ds, Data: d, Preset: preset, PrecisionNote: note, Config: cfg}, nil
}

// Plan starts the run's strategy as its planner (Config.Planner) and adds
// the run's identity: the data, the fraction and the strategy's. Close
// stops it.
func (r *Run) Plan(ctx context.Context, env Env) error {
	params, err := r.Spec.StrategyParams()
	if err != nil {
		return &UsageError{err}
	}
	sel := Selection{Strategy: r.Spec.Strategy, Params: params, EpsilonFlag: r.Spec.Epsilon != nil, Source: r.Spec.Source,
		File: r.Spec.Matrix, Key: r.Spec.SimilarityKey}
	pl, closePlanner, err := OpenPlanner(ctx, env, sel, r.Spec.Exec.PluginTimeout, r.Data.Set, r.Data.Train, r.Data.Indices,
		r.Config.Optim.Epochs, r.Config.Optim.Batch, r.Spec.Model)
	if err != nil {
		return err
	}
	r.Planner, r.close = pl, closePlanner
	r.Config.Planner = pl
	if h, why := Hierarchy(r.Data.Set, env.WordNet); h != nil {
		r.Config.Hierarchy = h
		env.logf("hierarchical metrics on the %s graph of %s (LCA heights up to %d)", h.Graph(), r.Data.Set.Name, h.MaxHeight())
	} else {
		env.logf("no hierarchical metrics: %s", why)
	}
	id := map[string]string{"data": r.DataSpec, "fraction": fmt.Sprint(r.Spec.Fraction)}
	maps.Copy(id, pl.Identity())
	r.Config.Identity = id
	return nil
}

// Close stops the run's strategy.
func (r *Run) Close() {
	if r.close != nil {
		r.close()
		r.close = nil
	}
}

// UsesSimilarity says whether the run's strategy was given a similarity.
func (r *Run) UsesSimilarity() bool {
	if r.Planner == nil {
		return false
	}
	_, ok := r.Planner.Identity()["similarity"]
	return ok
}

// OpenPlanner starts the strategy sel names for a training run over the
// examples trainIdx of train (nil = all) and returns it as the trainer's
// Planner, and a close function that stops the plugins.
func OpenPlanner(ctx context.Context, env Env, sel Selection, timeout time.Duration, set *labels.Set,
	train trainer.Examples, trainIdx []int, epochs, batch int, model string) (*curriculum.Bridge, func(), error) {
	host := env.Host(timeout)
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
	opened, err := OpenStrategy(ctx, env, host, sel, set, classes, epochs)
	if err != nil {
		return fail(err)
	}
	if opened.From != "" {
		env.logf("lcl train: strategy %s: similarity from %s", opened.Info.Name, opened.From)
	}
	labels := make([]int, train.Len())
	for i := range labels {
		labels[i] = train.Label(i)
	}
	n := len(trainIdx)
	if trainIdx == nil {
		n = train.Len()
	}
	b, err := curriculum.New(ctx, opened.Strategy, opened.Run(classes, labels, trainIdx, epochs, (n+batch-1)/max(batch, 1), model))
	if err != nil {
		return fail(err)
	}
	if err := b.Trainable(); err != nil {
		return fail(err)
	}
	return b, host.Close, nil
}

// datasetClasses returns the dataset's class names when it knows them.
func datasetClasses(ds trainer.Examples) []string {
	if c, ok := ds.(interface{ Classes() []string }); ok {
		return c.Classes()
	}
	return nil
}

// Runs is where finished runs are recorded (*simstore.Store).
type Runs interface {
	PutRun(ctx context.Context, r simstore.Run) error
}

// Record stores the finished run in its directory under the configuration
// its spec gives (TrainSpec.Config), read back from the folder as a
// grid's run is: a grid's cell and the same lcl train command line are
// one run.
func (r *Run) Record(ctx context.Context, st Runs) error {
	c, err := r.Spec.Config(r.UsesSimilarity())
	if err != nil {
		return err
	}
	run, err := experiment.ReadResult(c, r.Config.Out)
	if err != nil {
		return err
	}
	return st.PutRun(ctx, run)
}

// WordNetFunc opens WordNet with at least the synsets wnids and their
// ancestors: a label set's hypernym graph (wordnet.OpenAncestors).
type WordNetFunc func(wnids []string) (*wordnet.DB, error)

// Hierarchy is the label graph the hierarchical metrics of set are
// measured on (similarity.Hierarchy): the set's built-in hierarchy
// (NABirds, AwA2, CUB), else WordNet when every class has a wnid
// (ImageNet, CIFAR-100, Fashion-MNIST, ImageNet-21k). It is nil, with the
// reason, for a set with neither (or no set) or when WordNet cannot be
// opened: the run then reports no hierarchical metrics.
func Hierarchy(set *labels.Set, wn WordNetFunc) (*similarity.Hierarchy, string) {
	if set == nil {
		return nil, "the classes have no label set"
	}
	if len(set.Hierarchy) == 0 {
		for _, c := range set.Classes {
			if c.WNID == "" {
				return nil, fmt.Sprintf("label set %s has no hierarchy and class %s no wnid", set.Name, c.ID)
			}
		}
		if wn == nil {
			return nil, "WordNet is not available"
		}
	}
	var open similarity.WordNetFunc
	if wn != nil {
		open = func() (*wordnet.DB, error) { return wn(set.WNIDs()) }
	}
	h, err := similarity.NewHierarchy(set, "", open)
	if err != nil {
		return nil, err.Error()
	}
	return h, ""
}
