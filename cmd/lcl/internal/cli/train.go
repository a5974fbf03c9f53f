package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
	"github.com/lcl-project/lcl/trainer/launch"
	"github.com/lcl-project/lcl/trainer/torch"
)

type trainOptions struct {
	Synsets, Data, Model, Strategy, Device, Out, Preset string
	Fraction                                            float64
	Seed                                                int64
	Threads, Workers, EvalBatch, CheckpointEvery        int
	Resume, NoStore                                     bool
	Init                                                string
	InitSkip                                            []string

	// Data parallelism (docs/experiment.md, "Running on a cluster").
	NProc       int
	DistTimeout time.Duration
	DistBackend string
	DistBind    string
	world       int // processes of the run (1, --nproc, or WORLD_SIZE)

	// Optimisation overrides of the preset (applied only when given).
	Epochs, Batch, Warmup, StepSize  int
	LR, Momentum, WeightDecay, Gamma float64
	Nesterov                         bool
	Schedule, Milestones, Optimizer  string

	strat strategyOptions // --param, --epsilon, --source, --matrix, --plugin-timeout
}

func newTrainCmd(f *Factory) *cobra.Command {
	o := &trainOptions{}
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a classifier with a strategy",
		Long: `Train an image classifier on libtorch with a training strategy.

The data set is --data: a spec KIND[:DIR][?KEY=VALUE&...] (fashion-mnist,
mnist, cifar10, cifar100, folder, cub, nabirds; see docs/data.md), or a plain
directory read as the kind named by --synsets. --fraction keeps a seeded,
class-stratified part of the training set (the paper's DR); the test set is
always whole.

The architecture is --model: a name of lcl models with options
(resnext101-32x8d, densenet:depth=100,growth=12, ...), or
torchscript:FILE.pt, a module saved by torch.jit.script/trace, trained with
every strategy (its penultimate features: its method "penultimate", else the
input of its last linear layer). --init FILE.safetensors starts from existing
weights (lcl's model.safetensors, or a torchvision/timm state dict written as
safetensors: docs/trainer.md), loaded strictly; --init-skip fc keeps the
classifier at its initialisation, for another number of classes.

The optimisation protocol is a preset (lcl models lists them; the default
depends on the model) whose settings the flags --epochs --batch --lr
--momentum --nesterov --weight-decay --schedule --milestones --gamma
--step-size --warmup --optimizer override.

The run directory (--out) receives metrics.jsonl (one line per epoch),
checkpoint.safetensors (every --checkpoint-every epochs, at the end and on
Ctrl-C), model.safetensors (final weights, torchvision names) and
result.json. --resume continues a stopped run from its checkpoint to the same
final metrics as an uninterrupted run; a checkpoint of another configuration
is refused with the reason. The result is also stored in the store as a run.

Data-parallel runs (--nproc, torchrun, srun, Kubernetes): every rank needs the
same per-run secret in $LCL_DIST_SECRET (--nproc makes one); rank 0's
rendezvous store listens only on MASTER_ADDR (or --dist-bind ADDR; a wildcard
only with --dist-bind any). Ctrl-C ends a rank within a second, even while it
waits for its peers. See docs/experiment.md.`,
		Example: `  lcl train --synsets fashion-mnist --model cnn --strategy sl --epochs 5 --threads 2 --out runs/fm-cnn
  lcl train --synsets fashion-mnist --data /usr/share/datasets/fashion-mnist --model cnn --strategy sl \
      --fraction 0.1 --epochs 20 --seed 1 --threads 2 --device cpu --out runs/fm-cnn-dr10
  lcl train --data cifar100:/data/cifar-100-binary --model wrn-28-10 --preset wrn-cifar --device cuda --out runs/wrn
  lcl train --out runs/fm-cnn --resume ...same flags...
  lcl train --data folder:/data/awa2 --model resnet50 --init resnet50.safetensors --init-skip fc --out runs/ft
  lcl train --data cifar100:/data/cifar-100-binary --model torchscript:mynet.pt --preset wrn-cifar --out runs/ts
  lcl train --synsets fashion-mnist --model cnn --nproc 2 --batch 256 --out runs/fm-cnn-ddp
  export LCL_DIST_SECRET=...   # the same on every node
  torchrun --no-python --nnodes 2 --nproc-per-node 4 --node-rank $R --master-addr node0 --master-port 29500 \
      lcl train --data imagenet:/data/imagenet --model resnet50 --preset goyal --out /shared/runs/in-r50`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrain(cmd.Context(), f, cmd, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Synsets, "synsets", "", "label set of the data (fashion-mnist, cifar100, ...): the data kind when --data is a directory")
	fl.StringVar(&o.Data, "data", "", "data set spec KIND[:DIR][?opts] or a directory (default: the --synsets kind at its default place)")
	fl.StringVar(&o.Model, "model", "cnn", "architecture NAME[:key=value,...] (lcl models)")
	fl.StringVar(&o.Strategy, "strategy", "sl", "training strategy: a built-in (sl, ls, lcl, kd, dml, cn) or a plugin (lcl plugins list)")
	o.strat.addParamFlags(fl)
	fl.Float64Var(&o.Fraction, "fraction", 1, "part of the training set to use, class-stratified (0 < f ≤ 1)")
	fl.Int64Var(&o.Seed, "seed", 1, "seed of the subset, initialisation, order, augmentation and dropout")
	fl.IntVar(&o.Threads, "threads", 0, "libtorch threads (0 = libtorch's default)")
	fl.StringVar(&o.Device, "device", "cpu", "cpu, cuda or cuda:N")
	fl.StringVar(&o.Out, "out", "", "run directory (default runs/DATA-MODEL-STRATEGY-sSEED)")
	fl.StringVar(&o.Preset, "preset", "", "optimisation preset (default by model: fmnist-cnn, cifar-resnet, imagenet-resnet, wrn-cifar)")
	fl.IntVar(&o.Epochs, "epochs", 0, "epochs (overrides the preset)")
	fl.IntVar(&o.Batch, "batch", 0, "batch size (overrides the preset)")
	fl.Float64Var(&o.LR, "lr", 0, "base learning rate (overrides the preset)")
	fl.Float64Var(&o.Momentum, "momentum", 0, "SGD momentum (overrides the preset)")
	fl.BoolVar(&o.Nesterov, "nesterov", false, "Nesterov momentum (overrides the preset)")
	fl.Float64Var(&o.WeightDecay, "weight-decay", 0, "L2 weight decay (overrides the preset)")
	fl.StringVar(&o.Schedule, "schedule", "", "learning-rate schedule: constant, cosine, step or multistep (overrides the preset)")
	fl.StringVar(&o.Milestones, "milestones", "", "multistep epochs, e.g. 60,120,160")
	fl.Float64Var(&o.Gamma, "gamma", 0, "step/multistep decay factor")
	fl.IntVar(&o.StepSize, "step-size", 0, "step schedule: decay every N epochs")
	fl.IntVar(&o.Warmup, "warmup", 0, "epochs of linear learning-rate warm-up")
	fl.StringVar(&o.Optimizer, "optimizer", "", "sgd or rmsprop (TensorFlow's, decay 0.9, ε 1; overrides the preset)")
	fl.IntVar(&o.CheckpointEvery, "checkpoint-every", 1, "write a checkpoint every N epochs (0: only at the end and on Ctrl-C)")
	fl.BoolVar(&o.Resume, "resume", false, "continue the run in --out from its checkpoint")
	fl.StringVar(&o.Init, "init", "", "start from the weights of a safetensors file (lcl's model.safetensors, or a torchvision/timm state dict: docs/trainer.md), loaded strictly")
	fl.StringSliceVar(&o.InitSkip, "init-skip", nil, "with --init: module prefixes to keep at their initialisation, e.g. fc (a classifier for other classes)")
	fl.IntVar(&o.Workers, "workers", 0, "data decoding goroutines (0 = number of CPUs)")
	fl.IntVar(&o.EvalBatch, "eval-batch", 256, "evaluation batch size")
	fl.BoolVar(&o.NoStore, "no-store", false, "do not record the run in the store")
	fl.IntVar(&o.NProc, "nproc", 1, "data-parallel worker processes on this machine (Gloo over loopback); --batch is the global batch")
	fl.DurationVar(&o.DistTimeout, "dist-timeout", 10*time.Minute, "data-parallel: how long a rank waits for a stalled peer before failing")
	fl.StringVar(&o.DistBackend, "dist-backend", "gloo", "data-parallel collectives: gloo (CPU) or nccl (CUDA builds)")
	fl.StringVar(&o.DistBind, "dist-bind", os.Getenv("LCL_DIST_BIND"), "data-parallel, rank 0: the address its rendezvous store listens on (default MASTER_ADDR; \"any\": every interface; also $LCL_DIST_BIND)")
	return cmd
}

// dataSpec turns --synsets/--data into a trainer/data spec.
func dataSpec(synsets, spec string) (string, error) {
	if spec == "" {
		if synsets == "" {
			return "", usagef("give --data or --synsets")
		}
		return synsets, nil
	}
	st, err := os.Stat(spec)
	if err == nil && st.IsDir() {
		if synsets == "" {
			return "", usagef("--data %s is a directory: name its kind with --synsets or write KIND:%s", spec, spec)
		}
		return synsets + ":" + spec, nil
	}
	if kind, _, _ := strings.Cut(spec, ":"); strings.ContainsRune(kind, os.PathSeparator) {
		// Not a spec (a kind has no slash): a folder that is not there.
		if err == nil {
			err = fmt.Errorf("%s is not a folder", spec)
		}
		return "", err
	}
	return spec, nil
}

// optim resolves the preset and the flags that override it.
func (o *trainOptions) optim(cmd *cobra.Command, h int) (trainer.Optim, string, error) {
	name := o.Preset
	if name == "" {
		name = trainer.DefaultPreset(o.Model, h)
	}
	p, err := trainer.PresetByName(name)
	if err != nil {
		return trainer.Optim{}, "", usagef("--preset: %v", err)
	}
	ch := cmd.Flags().Changed
	var ov trainer.Overrides
	for flag, dst := range map[string]**int{"epochs": &ov.Epochs, "batch": &ov.Batch, "step-size": &ov.StepSize, "warmup": &ov.Warmup} {
		if ch(flag) {
			v, _ := cmd.Flags().GetInt(flag)
			*dst = &v
		}
	}
	for flag, dst := range map[string]**float64{"lr": &ov.LR, "momentum": &ov.Momentum, "weight-decay": &ov.WeightDecay, "gamma": &ov.Gamma} {
		if ch(flag) {
			v, _ := cmd.Flags().GetFloat64(flag)
			*dst = &v
		}
	}
	if ch("nesterov") {
		ov.Nesterov = &o.Nesterov
	}
	if ch("schedule") {
		ov.Schedule = &o.Schedule
	}
	if ch("milestones") {
		if ov.Milestones, err = trainer.ParseMilestones(o.Milestones); err != nil {
			return trainer.Optim{}, "", usagef("--milestones: %v", err)
		}
	}
	if ch("optimizer") {
		ov.Optimizer = &o.Optimizer
	}
	op, err := p.Apply(o.world, ov)
	if err != nil {
		return trainer.Optim{}, "", usagef("%v", err)
	}
	return op, name, nil
}

func runTrain(ctx context.Context, f *Factory, cmd *cobra.Command, o *trainOptions) error {
	if err := torch.Check(); err != nil {
		return err
	}
	dist, err := launch.FromEnv()
	if err != nil {
		return err
	}
	o.world = 1
	switch {
	case dist != nil && o.NProc > 1 && !launch.Launched():
		return usagef("--nproc %d: this process was started by a launcher (WORLD_SIZE=%d): drop --nproc", o.NProc, dist.World)
	case dist == nil && o.NProc > 1:
		th := o.Threads
		if th <= 0 {
			th = max(1, runtime.NumCPU()/o.NProc)
		}
		args := commandLine(cmd)
		if !cmd.Flags().Changed("threads") {
			args = append(args, "--threads="+strconv.Itoa(th))
		}
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("--nproc: %w", err)
		}
		return launch.Run(ctx, launch.Options{Exe: exe, Args: args, NProc: o.NProc, Threads: th,
			Stdout: f.IO.Out, Stderr: f.IO.Err, Logf: func(format string, a ...any) { f.Logf("lcl train: "+format, a...) }})
	case o.NProc < 1:
		return usagef("--nproc %d: want ≥ 1", o.NProc)
	case dist != nil:
		o.world = dist.World
		if dist.Rank != 0 {
			// Rank 0 reports, writes the run directory and the store.
			f.Quiet, o.NoStore = true, true
			f.IO.Out = io.Discard
		}
		if o.Threads <= 0 && dist.LocalWorld > 0 {
			o.Threads = max(1, runtime.NumCPU()/dist.LocalWorld)
		}
		if o.Device == "cuda" {
			o.Device = fmt.Sprintf("cuda:%d", dist.LocalRank)
		}
	}
	spec, err := dataSpec(o.Synsets, o.Data)
	if err != nil {
		return err
	}
	if !(o.Fraction > 0 && o.Fraction <= 1) {
		return usagef("--fraction %v: want 0 < fraction ≤ 1", o.Fraction)
	}
	if n, err := torch.CUDADevices(); err != nil {
		return err
	} else if o.Device != "cpu" && n == 0 {
		return fmt.Errorf("--device %s: this libtorch sees no CUDA device (build with a CUDA libtorch, docs/trainer.md)", o.Device)
	}
	train, test, err := data.Open(spec)
	if err != nil {
		return err
	}
	set, err := trainLabelSet(o.Synsets, spec)
	if err != nil {
		return err
	}
	if o.Synsets != "" && len(set.Classes) != train.NumClasses() {
		return fmt.Errorf("--synsets %s has %d classes, the data %s has %d", o.Synsets, len(set.Classes), spec, train.NumClasses())
	}
	_, h, _ := train.Shape()
	op, preset, err := o.optim(cmd, h)
	if err != nil {
		return err
	}
	var idx []int
	if o.Fraction < 1 {
		if idx, err = data.Fraction(train, o.Fraction, o.Seed); err != nil {
			return err
		}
	}
	out := o.Out
	if out == "" {
		kind, _, _ := strings.Cut(spec, ":")
		kind, _, _ = strings.Cut(kind, "?")
		out = filepath.Join("runs", fmt.Sprintf("%s-%s-%s-s%d", kind, strings.ReplaceAll(o.Model, ":", "_"), o.Strategy, o.Seed))
	}
	_, statErr := os.Stat(filepath.Join(out, "checkpoint.safetensors"))
	hasCheckpoint := statErr == nil
	if !o.Resume && hasCheckpoint && (dist == nil || dist.Rank == 0) {
		return usagef("%s holds a run already: continue it with --resume or choose another --out", out)
	}
	var group *torch.Group
	if dist != nil {
		if group, err = dist.Join(ctx, launch.JoinOptions{Backend: o.DistBackend, Timeout: o.DistTimeout, Bind: o.DistBind}); err != nil {
			return err
		}
		defer group.Close()
		// Rank 0's run directory decides whether to resume.
		flag := []byte{0}
		if hasCheckpoint {
			flag[0] = 1
		}
		if flag, err = group.Broadcast(flag); err != nil {
			return fmt.Errorf("rank %d: %w", dist.Rank, err)
		}
		hasCheckpoint = flag[0] == 1
	}
	resume := o.Resume && hasCheckpoint
	if o.Resume && !hasCheckpoint {
		f.Logf("lcl train: %s has no checkpoint: starting from scratch", out)
	}
	identity := map[string]string{"data": spec, "fraction": fmt.Sprint(o.Fraction)}
	so := o.strat
	so.Strategy = o.Strategy
	pl, closePlanner, err := openPlanner(ctx, f, &so, cmd.Flags(), set, train, idx, op.Epochs, op.Batch, o.Model)
	if err != nil {
		return err
	}
	defer closePlanner()
	planID := pl.Identity()
	for k, v := range planID {
		identity[k] = v
	}
	cfg := trainer.Config{
		Out: out, Model: o.Model, Train: train, Test: test, Loader: data.TrainerLoader(data.LoaderConfig{Workers: o.Workers}), TrainIndices: idx,
		Planner: pl, Strategy: o.Strategy, Optim: op, Seed: o.Seed, Threads: o.Threads, Device: o.Device,
		EvalBatch: o.EvalBatch, CheckpointEvery: o.CheckpointEvery, Resume: resume, Identity: identity,
		Init: o.Init, InitSkip: o.InitSkip,
		Group: group,
	}
	nTrain := train.Len()
	if idx != nil {
		nTrain = len(idx)
	}
	if dist != nil {
		f.Logf("lcl train: rank %d of %d (%s, Gloo rendezvous %s:%d); global batch %d, %d per rank",
			dist.Rank, dist.World, o.DistBackend, dist.Addr, dist.Port, op.Batch, (op.Batch+dist.World-1)/dist.World)
	}
	f.Logf("lcl train: %s, %d of %d training images, %d test; model %s; strategy %s; preset %s (epochs %d, batch %d, lr %g %s); libtorch %s, %d threads, OMP_WAIT_POLICY=%s; run %s",
		spec, nTrain, train.Len(), test.Len(), o.Model, o.Strategy, preset,
		op.Epochs, op.Batch, op.Schedule.LR, op.Schedule.Kind, torch.Version(), threads(o.Threads), os.Getenv("OMP_WAIT_POLICY"), out)
	var bar *progressbar.ProgressBar
	cfg.Progress = func(p trainer.Progress) {
		if bar == nil || p.Step == 1 {
			if bar != nil {
				bar.Finish()
			}
			bar = f.Progress(int64(p.Steps), "")
		}
		bar.Describe(fmt.Sprintf("%s %d/%d  loss %.4f  acc %.1f%%  %.0f img/s  ETA %s", p.Stage, p.Epoch, p.Epochs,
			p.Loss, 100*p.Acc, p.ImgPerSec, p.ETA.Round(time.Second)))
		bar.Set(p.Step)
	}
	cfg.OnEpoch = func(m trainer.EpochMetrics) {
		pl.Observe(ctx, m.Observation())
		if bar != nil {
			bar.Finish()
			bar = nil
		}
		if f.Emit("epoch", m) {
			return
		}
		f.Logf("%s epoch %d/%d  lr %.4g  train loss %.4f acc %.2f%%  test top-1 %.2f%% top-5 %.2f%% loss %.4f  %.0f img/s",
			m.Stage, m.Epoch, m.Epochs, m.LR, m.TrainLoss, 100*m.TrainTop1, 100*m.TestTop1, 100*m.TestTop5, m.TestLoss, m.ImgPerSec)
		for k, p := range m.Peers {
			f.Logf("  peer %d: test top-1 %.2f%% top-5 %.2f%%", k, 100*p.TestTop1, 100*p.TestTop5)
		}
	}
	res, err := trainer.Run(ctx, cfg)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		if errors.Is(err, trainer.ErrCanceled) {
			f.Logf("checkpoint written to %s; continue with the same flags and --resume", out)
		}
		return err
	}
	if !o.NoStore {
		_, similarity := planID["similarity"]
		params, _ := o.strat.params(cmd.Flags())
		if err := storeRun(ctx, f, o.runConfig(cmd.Flags(), params, similarity), out); err != nil {
			f.Logf("warning: run not recorded in the store: %v", err)
		}
	}
	if f.Emit("summary", res) {
		return nil
	}
	for k, p := range res.Final {
		name := "model"
		if len(res.Final) > 1 {
			name = fmt.Sprintf("peer %d", k)
		}
		fmt.Fprintf(f.IO.Out, "%s: test top-1 %.2f%%  top-5 %.2f%%  loss %.4f\n", name, 100*p.TestTop1, 100*p.TestTop5, p.TestLoss)
	}
	fmt.Fprintf(f.IO.Out, "run %s (%.0f s; CPU %.0f s user, %.0f s system = %.1f%%): %s\n", out, res.Seconds,
		res.UserSeconds, res.SystemSeconds, 100*res.SystemSeconds/max(res.UserSeconds+res.SystemSeconds, 1e-9), res.Weights)
	return nil
}

func threads(n int) int {
	if n > 0 {
		return n
	}
	n, _ = torch.Threads() // only printed; Check already passed
	return n
}

// execFlags are the train flags (and global flags) that say where or how a
// run executes, not what it computes: a run's stored configuration leaves
// them out, as a grid's does.
var execFlags = map[string]bool{
	"device": true, "threads": true, "workers": true, "eval-batch": true, "checkpoint-every": true,
	"out": true, "resume": true, "no-store": true, "nproc": true, "dist-timeout": true, "dist-backend": true, "dist-bind": true,
	"require-pinned": true,
	"plugin-timeout": true, "store": true, "wordnet": true, "json": true, "quiet": true,
}

// runConfig is the run's stored configuration: the flags that change its
// result, as given (a grid's run has the same shape). similarity says
// whether the strategy used a similarity matrix: only then do --source,
// --matrix and --similarity-key belong to the run.
func (o *trainOptions) runConfig(fs *pflag.FlagSet, params map[string]string, similarity bool) simstore.RunConfig {
	c := simstore.RunConfig{Labels: o.Synsets, Data: o.Data, Model: o.Model, Fraction: o.Fraction,
		Strategy: o.Strategy, Params: params, Seed: int(o.Seed)}
	if fs.Changed("epochs") {
		c.Epochs = o.Epochs
	}
	if fs.Changed("preset") {
		c.Preset = o.Preset
	}
	if similarity && o.strat.Matrix == "" && o.strat.Key == "" {
		c.Source = o.strat.Source
	}
	fs.Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "synsets", "data", "model", "fraction", "strategy", "seed", "epochs", "preset", "param", "epsilon", "source":
			return // fields of their own
		case "matrix", "similarity-key":
			if !similarity {
				return
			}
		}
		if execFlags[fl.Name] {
			return
		}
		if c.Args == nil {
			c.Args = map[string]string{}
		}
		c.Args[fl.Name] = fl.Value.String()
	})
	return c
}

// storeRun records the finished run in the store under its configuration's
// digest, read back from its folder as a grid run is.
func storeRun(ctx context.Context, f *Factory, c simstore.RunConfig, dir string) error {
	run, err := experiment.ReadResult(c, dir)
	if err != nil {
		return err
	}
	st, err := f.Store()
	if err != nil {
		return err
	}
	return st.PutRun(ctx, run)
}

// commandLine rebuilds the arguments of cmd as given (every flag set on
// the command line, local or global), without --nproc.
func commandLine(cmd *cobra.Command) []string {
	args := strings.Fields(cmd.CommandPath())[1:]
	seen := map[string]bool{}
	add := func(fl *pflag.Flag) {
		if seen[fl.Name] || fl.Name == "nproc" {
			return
		}
		seen[fl.Name] = true
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+fl.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	}
	cmd.Flags().Visit(add)
	cmd.InheritedFlags().Visit(add)
	return args
}
