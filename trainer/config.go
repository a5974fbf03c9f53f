package trainer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/internal/digest"
	"github.com/lcl-project/lcl/internal/suggest"
	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/torch"
)

// Config is one training run.
type Config struct {
	// Out is the run directory (metrics.jsonl, checkpoint.safetensors,
	// model.safetensors, result.json); "" keeps everything in memory.
	Out string
	// Model names an architecture of Models ("cnn", "resnet18:stem=cifar").
	Model       string
	Models      *models.Registry // nil = models.Builtin()
	Train       Examples
	Test        Examples
	BatchSource BatchSource
	// TrainIndices is the run's training set (e.g. a class-stratified
	// fraction); nil = every example of Train.
	TrainIndices []int
	Planner      Planner
	Strategy     string // the planner's name, recorded and checked on resume
	Optim        Optim
	Seed         int64
	Threads      int    // libtorch threads; 0 keeps libtorch's default
	Device       string // "cpu" (default), "cuda", "cuda:1"
	EvalBatch    int    // 0 = 256
	// Hierarchy, when set, adds the hierarchical metrics (mistake
	// severity, hierarchical distance@1/5/20) to every test evaluation.
	Hierarchy Hierarchy
	// GPU path (docs/trainer.md): the forward passes' precision (autocast;
	// fp16 with a GradScaler), channels-last memory format, TF32 in
	// float32 matmuls and convolutions, cuDNN autotuning.
	Precision      torch.Precision
	ChannelsLast   bool
	TF32           bool
	CUDNNBenchmark bool
	// MetricsEvery is how many steps pass between reads of the training
	// loss and accuracy from the device (each read waits for it); 0 = every
	// step on the CPU (free there), every 50 on CUDA. Progress is called
	// after each read.
	MetricsEvery int
	// CheckpointEvery writes a checkpoint every that many epochs; the end of
	// every stage, the end of the run and a cancellation always write one.
	CheckpointEvery int
	// NoCheckpoint disables checkpoints (benchmarks, tests).
	NoCheckpoint bool
	// Resume continues from Out/checkpoint.safetensors.
	Resume bool
	// Init is a safetensors file of weights every model of the run's
	// architecture starts from (stages with an architecture of their own
	// start from their initialisation): loaded strictly, except the
	// tensors under the module prefixes of InitSkip (e.g. "fc"), which
	// keep the seeded initialisation — a classifier for other classes.
	// InitSkip applies with Init only (lcl train refuses --init-skip
	// without --init: TrainSpec.Validate).
	Init     string
	InitSkip []string
	// Identity holds further settings a resumed run must share with the
	// checkpoint (dataset, fraction, ...).
	Identity map[string]string
	// Augment names the training augmentation BatchSource applies on top
	// of the data set's crop and flip (trainer/data's Augment, e.g.
	// "randaugment=2,9 erasing=0.25"; "" none): part of the run's identity
	// and recorded in result.json.
	Augment string
	// Mix is the run's mixup and CutMix (Mixing; zero: none): part of the
	// run's identity and recorded in result.json.
	Mix Mixing
	// Progress, when set, is called after every read of the metrics
	// (MetricsEvery).
	Progress func(Progress)
	// OnEpoch, when set, is called with each epoch's metrics.
	OnEpoch func(EpochMetrics)
	// OnResume, when set, is told where a resumed run continues, once its
	// checkpoint is read.
	OnResume func(Resumed)
	// Sink, when set, receives the figures the run logs (TensorBoard
	// event files, a CSV: trainer/runlog) on the process that writes Out.
	Sink MetricsSink
	// ModelSelection is the run's validation split and early stopping
	// (zero: none).
	ModelSelection
	// Group, when set, makes the run data-parallel over its ranks (one
	// process each): every rank runs Run with the same Config, the models
	// start from rank 0's weights, each rank loads and steps on its slice
	// of every global batch of Optim.Batch examples, the gradients are
	// summed over the ranks inside each step, the test set is evaluated in
	// slices, rank 0 alone calls Planner.Plan (its plan is broadcast) and
	// writes to Out. A resumed run reads rank 0's checkpoint on rank 0 and
	// broadcasts it.
	Group *torch.Group
}

// Resumed is where a resumed run continues: in stage Stage (of Stages),
// after Epoch of its Epochs epochs (the epochs' count, which a larger
// --epochs may have grown), at step Step of the next epoch (0: its start).
type Resumed struct {
	Stage               string
	Stages              int
	Epoch, Epochs, Step int
}

// Progress is the state of the run after a step.
type Progress struct {
	Stage                      string
	Epoch, Epochs, Step, Steps int // Epoch is 1-based
	Loss, Acc, ImgPerSec       float64
	ETA                        time.Duration // of the stage
}

// newRunner checks cfg, fills in its defaults and prepares the run:
// nothing is written to disk and no libtorch setting changes (Run sets the
// threads).
func newRunner(cfg Config) (*runner, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	spec, err := cfg.Models.Get(cfg.Model, cfg.input())
	if err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	val, err := cfg.splitValidation()
	if err != nil {
		return nil, err
	}
	stages, specs, err := cfg.stages(spec)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, specs: specs, stages: stages, finished: map[string]*torch.Model{}, start: time.Now(),
		test: &evalSet{name: "test", ds: cfg.Test}}
	if val != nil {
		r.val = &evalSet{name: "validation", ds: cfg.Train, indices: val}
		r.sel = &selector{metric: cfg.SelectMetric, ema: cfg.Optim.EMADecay > 0, patience: cfg.Patience}
	}
	r.user0, r.sys0 = processCPU()
	if cfg.Init != "" {
		if r.init, err = readInit(cfg.Init, cfg.InitSkip); err != nil {
			return nil, err
		}
	}
	if r.id, err = r.runIdentity(spec); err != nil {
		return nil, err
	}
	return r, nil
}

// validate checks the settings that need no model, data split or file,
// and fills in their defaults.
func (cfg *Config) validate() error {
	if cfg.Train == nil || cfg.Test == nil || cfg.BatchSource == nil || cfg.Planner == nil {
		return errors.New("trainer: config needs Train, Test, BatchSource and Planner")
	}
	if cfg.Models == nil {
		cfg.Models = models.Builtin()
	}
	if cfg.Device == "" {
		cfg.Device = "cpu"
	}
	if cfg.EvalBatch <= 0 {
		cfg.EvalBatch = 256
	}
	if cfg.MetricsEvery <= 0 {
		cfg.MetricsEvery = defaultMetricsEvery(cfg.Device)
	}
	if cfg.Precision < torch.FP32 || cfg.Precision > torch.FP16 {
		return fmt.Errorf("trainer: unknown precision %v", cfg.Precision)
	}
	if err := cfg.Optim.Validate(); err != nil {
		return fmt.Errorf("trainer: %w", err)
	}
	if cfg.Resume && cfg.Out == "" {
		return errors.New("trainer: resume needs the run directory")
	}
	c, h, w := cfg.Train.Shape()
	tc, th, tw := cfg.Test.Shape()
	if c != tc || h != th || w != tw || cfg.Train.NumClasses() != cfg.Test.NumClasses() {
		return fmt.Errorf("trainer: train set is %d×%d×%d with %d classes, test set %d×%d×%d with %d",
			c, h, w, cfg.Train.NumClasses(), tc, th, tw, cfg.Test.NumClasses())
	}
	return nil
}

// input is what the run's models see: the training set's shape and classes.
func (cfg *Config) input() models.Input {
	c, h, w := cfg.Train.Shape()
	return models.Input{C: c, H: h, W: w, NumClasses: cfg.Train.NumClasses()}
}

// splitValidation fills in TrainIndices (every example by default) and,
// with ValFraction, holds the validation split out of it and returns it
// (nil without one); it checks the model selection's settings.
func (cfg *Config) splitValidation() (val []int, err error) {
	if cfg.TrainIndices == nil {
		cfg.TrainIndices = make([]int, cfg.Train.Len())
		for i := range cfg.TrainIndices {
			cfg.TrainIndices[i] = i
		}
	}
	if len(cfg.TrainIndices) == 0 {
		return nil, errors.New("trainer: empty training set")
	}
	if err := cfg.Mix.Check(); err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	if err := cfg.ModelSelection.Check(); err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	if cfg.ValFraction > 0 {
		if cfg.SelectMetric == "" {
			cfg.SelectMetric = "top1"
		}
		if cfg.TrainIndices, val, err = splitVal(cfg.Train, cfg.TrainIndices, cfg.ValFraction, cfg.Seed); err != nil {
			return nil, err
		}
	}
	return val, nil
}

// stages returns the planner's stages with their defaults (the run's
// epochs, one peer) and each stage's architecture (spec, the run's, unless
// the stage names its own), checking names and teachers.
func (cfg *Config) stages(spec torch.Spec) ([]Stage, []torch.Spec, error) {
	stages := cfg.Planner.Stages()
	if len(stages) == 0 {
		return nil, nil, errors.New("trainer: planner declares no stage")
	}
	seen := map[string]bool{}
	specs := make([]torch.Spec, len(stages))
	for i := range stages {
		s := &stages[i]
		specs[i] = spec
		if s.Model != "" && s.Model != cfg.Model {
			var err error
			if specs[i], err = cfg.Models.Get(s.Model, cfg.input()); err != nil {
				return nil, nil, fmt.Errorf("trainer: stage %q: %w", s.Name, err)
			}
		}
		if s.Epochs <= 0 {
			s.Epochs = cfg.Optim.Epochs
		}
		if s.Peers <= 0 {
			s.Peers = 1
		}
		if s.Name == "" || seen[s.Name] {
			return nil, nil, fmt.Errorf("trainer: stage %d: empty or repeated name %q", i, s.Name)
		}
		if s.Teacher != "" && !seen[s.Teacher] {
			return nil, nil, fmt.Errorf("trainer: stage %q: teacher %q is not an earlier stage", s.Name, s.Teacher)
		}
		seen[s.Name] = true
		specs[i].Levels = levelsOf(s.Levels)
	}
	return stages, specs, nil
}

// levelsOf are a stage's levels as the models take them: every model of
// the stage gets their heads (checked by the bridge, and again by the
// engine).
func levelsOf(ls []curriculum.Level) []torch.Level {
	if len(ls) == 0 {
		return nil
	}
	out := make([]torch.Level, len(ls))
	for i, l := range ls {
		out[i] = torch.Level{Groups: l.Groups, Group: l.Group}
	}
	return out
}

// runIdentity is the run's identity (identity) with the digest of a
// TorchScript module and of the initial weights: what a resumed run must
// share with its checkpoint.
func (r *runner) runIdentity(spec torch.Spec) (map[string]string, error) {
	id := r.identity()
	if spec.Script != "" {
		// A resumed run must train the same module.
		d, err := digest.File(spec.Script)
		if err != nil {
			return nil, fmt.Errorf("trainer: %w", err)
		}
		id["script"] = d[:16]
	}
	if r.init != nil {
		id["init"] = r.init.digest + " skip=" + strings.Join(r.init.skip, ",")
	}
	return id, nil
}

func (r *runner) identity() map[string]string {
	o := r.cfg.Optim
	c, h, w := r.cfg.Train.Shape()
	id := map[string]string{
		"model":    r.cfg.Model,
		"strategy": r.cfg.Strategy,
		"seed":     fmt.Sprint(r.cfg.Seed),
		"input":    fmt.Sprintf("%dx%dx%d/%d", c, h, w, r.cfg.Train.NumClasses()),
		"train":    fmt.Sprintf("%d of %d", len(r.cfg.TrainIndices), r.cfg.Train.Len()),
		"optim":    o.identity(), // the settings table's rows
	}
	if r.val != nil {
		id["val"] = fmt.Sprintf("fraction=%g n=%d select=%s", r.cfg.ValFraction, len(r.val.indices), r.cfg.SelectMetric)
	}
	if r.cfg.Augment != "" { // (runs without keep their older identity)
		id["augment"] = r.cfg.Augment
	}
	if r.cfg.Mix.On() {
		id["mix"] = r.cfg.Mix.String()
	}
	for k, v := range r.cfg.Identity {
		id[k] = v
	}
	return id
}

// defaultMetricsEvery is how often the training figures are read from the
// device when not set: every step on the CPU (the read costs nothing
// there), every 50 steps on CUDA (each read waits for the device).
func defaultMetricsEvery(device string) int {
	if device == "cpu" {
		return 1
	}
	return 50
}

// CheckDevice refuses a --device value that names no device lcl trains and
// evaluates on (cpu, cuda or cuda:N), naming the nearest.
func CheckDevice(d string) error {
	if validDevice(d) {
		return nil
	}
	return fmt.Errorf("--device %q: want cpu, cuda or cuda:N (N: the device's index)%s", d, suggest.DidYouMean(d, []string{"cpu", "cuda"}))
}

func validDevice(d string) bool {
	if d == "cpu" || d == "cuda" {
		return true
	}
	n, ok := strings.CutPrefix(d, "cuda:")
	if !ok || n == "" {
		return false
	}
	for _, r := range n {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
