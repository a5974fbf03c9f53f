package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
	"github.com/lcl-project/lcl/trainer/launch"
	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/torch"
)

// runTrain trains one run in this process: alone, as a worker of a
// data-parallel group (torchrun), or, with --nproc N, as the launcher of N
// workers on this machine.
func runTrain(ctx context.Context, f *Factory, cmd *cobra.Command, o *trainOptions) error {
	if err := torch.Check(); err != nil {
		return err
	}
	dist, err := launch.FromEnv()
	if err != nil {
		return err
	}
	role, err := launch.RoleOf(dist, o.NProc, launch.Launched())
	if err != nil {
		return usagef("%v", err)
	}
	o.world = 1
	switch role {
	case launch.Launcher:
		th := launch.Threads(o.Threads, o.NProc)
		args := commandLine(cmd)
		if !cmd.Flags().Changed("threads") {
			args = append(args, "--threads="+strconv.Itoa(th))
		}
		return launch.Run(ctx, launch.Options{Args: args, NProc: o.NProc, Threads: th,
			Stdout: f.IO.Out, Stderr: f.IO.Err, Logf: func(format string, a ...any) { f.Logf("lcl train: "+format, a...) }})
	case launch.Worker:
		o.world, o.Threads, o.Device = dist.World, dist.Threads(o.Threads), dist.Device(o.Device)
		if !dist.Primary() {
			// Rank 0 reports, writes the run directory and the store.
			f.Quiet, o.NoStore = true, true
			f.IO.Out = io.Discard
		}
	}
	spec, err := data.SpecFor(o.Synsets, o.Data)
	var se *data.SpecError
	if errors.As(err, &se) {
		return usagef("%v", err)
	} else if err != nil {
		return err
	}
	prec, err := torch.ParsePrecision(o.Precision)
	if err != nil {
		return usagef("--precision: %v", err)
	}
	if !(o.Fraction > 0 && o.Fraction <= 1) {
		return usagef("--fraction %v: want 0 < fraction ≤ 1", o.Fraction)
	}
	if n, err := torch.CUDADevices(); err != nil {
		return err
	} else if o.Device != "cpu" && n == 0 {
		return fmt.Errorf("--device %s: this libtorch sees no CUDA device (build with a CUDA libtorch, docs/trainer.md)", o.Device)
	}
	d, err := data.OpenRun(spec, o.Synsets, o.Fraction, o.Seed)
	if err != nil {
		return err
	}
	_, h, _ := d.Train.Shape()
	op, preset, err := o.optim(cmd.Flags(), h)
	if err != nil {
		return err
	}
	if err := checkFits("--model "+o.Model, o.Model, d.Train, batchCheck{"--batch", op.Batch, true}, batchCheck{"--eval-batch", o.EvalBatch, false}); err != nil {
		return err
	}
	out := o.Out
	if out == "" {
		out = trainer.DefaultRunDir(data.Kind(spec), o.Model, o.Strategy, o.Seed)
	}
	hasCheckpoint, err := trainer.CheckRunDir(out, o.Resume, dist == nil || dist.Primary())
	if err != nil {
		return usagef("%v", err)
	}
	var group *torch.Group
	if dist != nil {
		if group, err = dist.Join(ctx, launch.JoinOptions{Backend: o.DistBackend, Timeout: o.DistTimeout, Bind: o.DistBind}); err != nil {
			return err
		}
		defer group.Close()
		if hasCheckpoint, err = trainer.AgreeCheckpoint(group, hasCheckpoint); err != nil {
			return err
		}
	}
	if o.Resume && !hasCheckpoint {
		f.Logf("lcl train: %s has no checkpoint: starting from scratch", out)
	}
	so := o.strat
	so.Strategy = o.Strategy
	pl, closePlanner, err := openPlanner(ctx, f, &so, cmd.Flags(), d.Set, d.Train, d.Indices, op.Epochs, op.Batch, o.Model)
	if err != nil {
		return err
	}
	defer closePlanner()
	identity := map[string]string{"data": spec, "fraction": fmt.Sprint(o.Fraction)}
	maps.Copy(identity, pl.Identity())
	reg := models.Builtin()
	reg.TrustScripts = o.TrustModel
	cfg := trainer.Config{
		Models: reg,
		Out:    out, Model: o.Model, Train: d.Train, Test: d.Test, Loader: data.TrainerLoader(data.LoaderConfig{Workers: o.Workers}), TrainIndices: d.Indices,
		Planner: pl, Strategy: o.Strategy, Optim: op, Seed: o.Seed, Threads: o.Threads, Device: o.Device,
		EvalBatch: o.EvalBatch, CheckpointEvery: o.CheckpointEvery, Resume: o.Resume && hasCheckpoint, Identity: identity,
		Init: o.Init, InitSkip: o.InitSkip,
		Precision: prec, ChannelsLast: o.ChannelsLast, TF32: o.TF32, CUDNNBenchmark: o.CUDNNBenchmark,
		MetricsEvery: o.MetricsEvery,
		Group:        group,
	}
	pr := &trainPrinter{f: f}
	pr.begin(cfg, spec, preset, dist, o.DistBackend)
	cfg.Progress = pr.progress
	cfg.OnEpoch = func(m trainer.EpochMetrics) {
		pl.Observe(ctx, m.Observation())
		pr.epoch(m)
	}
	res, err := trainer.Run(ctx, cfg)
	pr.finish()
	if err != nil {
		if errors.Is(err, trainer.ErrCanceled) {
			f.Logf("checkpoint written to %s; continue with the same flags and --resume", out)
		}
		return err
	}
	if !o.NoStore {
		if err := o.record(ctx, f, cmd.Flags(), pl.Identity(), out); err != nil {
			f.Logf("warning: run not recorded in the store: %v", err)
		}
	}
	pr.summary(res, out)
	return nil
}

// record stores the finished run in out under the configuration its flags
// give (experiment.TrainConfig), read back from the folder as a grid's run is.
func (o *trainOptions) record(ctx context.Context, f *Factory, fs *pflag.FlagSet, planID map[string]string, out string) error {
	var flags []experiment.TrainFlag
	fs.VisitAll(func(fl *pflag.Flag) {
		flags = append(flags, experiment.TrainFlag{Name: fl.Name, Value: fl.Value.String(), Set: fl.Changed})
	})
	params, _ := o.strat.params(fs)
	_, similarity := planID["similarity"]
	c, err := experiment.TrainConfig(flags, params, similarity)
	if err != nil {
		return err
	}
	run, err := experiment.ReadResult(c, out)
	if err != nil {
		return err
	}
	st, err := f.Store()
	if err != nil {
		return err
	}
	return st.PutRun(ctx, run)
}
