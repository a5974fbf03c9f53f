package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/experiment/trainrun"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/launch"
	"github.com/lcl-project/lcl/trainer/torch"
)

// runTrain trains one run in this process: alone, as a worker of a
// data-parallel group (torchrun), or, with --nproc N, as the launcher of N
// workers on this machine. The run is the TrainSpec the flags (or
// --config) give; trainrun assembles it.
func runTrain(ctx context.Context, f *Factory, cmd *cobra.Command, o *trainOptions) error {
	spec, err := o.resolve(cmd.Flags())
	if err != nil {
		return err
	}
	// What needs no data or plugin is checked before anything starts (a
	// launcher's workers would each fail on it).
	if _, err := trainrun.Check(&spec); err != nil {
		return fromRun(err)
	}
	// libtorch opens (a lazy build's shim: ~1 s on 2 cores) while the data
	// decodes below; torch.Check waits for it before libtorch is first
	// used or anything written.
	go torch.Check()
	dist, err := launch.FromEnv()
	if err != nil {
		return err
	}
	role, err := launch.RoleOf(dist, spec.Exec.NProc, launch.Launched())
	if err != nil {
		return usagef("%v", err)
	}
	world := 1
	switch role {
	case launch.Launcher:
		if err := torch.Check(); err != nil {
			return err
		}
		return launchTrain(ctx, f, cmd, spec.Exec.Threads, spec.Exec.NProc)
	case launch.Worker:
		world = dist.World
		spec.Exec.Threads, spec.Exec.Device = dist.Threads(spec.Exec.Threads), dist.Device(spec.Exec.Device)
		if !dist.Primary() {
			// Rank 0 reports, writes the run directory and the store.
			f.Quiet, spec.Exec.NoStore = true, true
			f.IO.Out = io.Discard
		}
	}
	r, err := trainrun.Open(spec, world) // starts nothing to close before Plan
	if cerr := torch.Check(); cerr != nil {
		return cerr
	}
	if err != nil {
		return fromRun(err)
	}
	if err := checkDevice(spec.Exec.Device); err != nil {
		return err
	}
	c := r.Config
	if err := checkFits("--model "+c.Model, c.Model, c.Train, batchCheck{"--batch", c.Optim.Batch, true}, batchCheck{"--eval-batch", c.EvalBatch, false}); err != nil {
		return err
	}
	out := r.Config.Out
	hasCheckpoint, err := trainer.CheckRunDir(out, spec.Exec.Resume, dist == nil || dist.Primary())
	if err != nil {
		return usagef("%v", err)
	}
	var group *torch.Group
	if dist != nil {
		if group, err = dist.Join(ctx, launch.JoinOptions{Backend: spec.Exec.DistBackend, Timeout: spec.Exec.DistTimeout, Bind: spec.Exec.DistBind}); err != nil {
			return err
		}
		defer group.Close()
		if hasCheckpoint, err = trainer.AgreeCheckpoint(group, hasCheckpoint); err != nil {
			return err
		}
	}
	if spec.Exec.Resume && !hasCheckpoint {
		f.Logf("lcl train: %s has no checkpoint: starting from scratch", out)
	}
	return trainPlanned(ctx, f, spec, r, dist, group, hasCheckpoint)
}

// trainPlanned starts the run's strategy, trains, prints and records the
// run: runTrain's second half, once the run is assembled and the ranks
// (with dist) have joined their group.
func trainPlanned(ctx context.Context, f *Factory, spec experiment.TrainSpec, r *trainrun.Run, dist *launch.Env,
	group *torch.Group, hasCheckpoint bool) error {
	out := r.Config.Out
	if err := r.Plan(ctx, f.runEnv("lcl train")); err != nil {
		return fromRun(err)
	}
	defer r.Close()
	cfg := r.Config
	cfg.Resume, cfg.Group = spec.Exec.Resume && hasCheckpoint, group
	pr := &trainPrinter{f: f}
	pr.begin(cfg, r.DataSpec, r.Preset, dist, spec.Exec.DistBackend)
	if r.PrecisionNote != "" {
		f.Logf("lcl train: %s", r.PrecisionNote)
	}
	cfg.Progress, cfg.OnResume = pr.progress, pr.resumed
	cfg.OnEpoch = func(m trainer.EpochMetrics) {
		r.Planner.Observe(ctx, m.Observation())
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
	if !spec.Exec.NoStore {
		recordRun(ctx, f, r)
	}
	pr.summary(res, out)
	return nil
}

// recordRun records the finished run in the store; a failure is a
// warning (the run directory holds the run).
func recordRun(ctx context.Context, f *Factory, r *trainrun.Run) {
	st, err := f.Store()
	if err == nil {
		err = r.Record(ctx, st)
	}
	if err != nil {
		f.Logf("warning: run not recorded in the store: %v", err)
	}
}

// launchTrain runs this command line on nproc workers (launch.Run), each
// with its share of the threads unless --threads was given.
func launchTrain(ctx context.Context, f *Factory, cmd *cobra.Command, threads, nproc int) error {
	th := launch.Threads(threads, nproc)
	args := commandLine(cmd)
	if !cmd.Flags().Changed("threads") {
		args = append(args, "--threads="+strconv.Itoa(th))
	}
	err := launch.Run(ctx, launch.Options{Args: args, NProc: nproc, Threads: th,
		Stdout: f.IO.Out, Stderr: f.IO.Err, Logf: func(format string, a ...any) { f.Logf("lcl train: "+format, a...) }})
	var ue *launch.UsageError
	if errors.As(err, &ue) {
		return &usageError{err}
	}
	return err
}

// checkDevice refuses a CUDA --device where libtorch sees no CUDA device.
func checkDevice(device string) error {
	if n, err := torch.CUDADevices(); err != nil {
		return err
	} else if device != "cpu" && n == 0 {
		// Either a CPU-only libtorch, or a CUDA one on a machine whose GPU
		// the driver does not show: the line names both.
		return fmt.Errorf("--device %s: libtorch %s sees no CUDA device (a CPU-only build of it, or no GPU visible here: nvidia-smi, CUDA_VISIBLE_DEVICES; docs/trainer.md)", device, torch.Version())
	}
	return nil
}

// fromRun makes trainrun's usage errors lcl's (exit code 2).
func fromRun(err error) error {
	var ue *trainrun.UsageError
	if errors.As(err, &ue) {
		return &usageError{err}
	}
	return err
}

// runEnv is what trainrun needs from the factory: the store (for
// matrices), the plugin host, and the log; who names the command in notes.
func (f *Factory) runEnv(who string) trainrun.Env {
	return trainrun.Env{
		Store: func() (similarity.MatrixStore, error) {
			s, err := f.ReadStore()
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		StoreDir: f.storeDir(),
		Release:  f.Close,
		Host:     func(timeout time.Duration) *plugins.Host { return newHost(f, timeout) },
		Logf:     f.Logf,
		WordNet:  f.WordNetOf,
		// A run on the semantic source of a label set without vectors
		// embeds them first, as lcl similarity does.
		Prepare: func(ctx context.Context, source string, set *labels.Set) error {
			if source != "semantic" {
				return nil
			}
			s, err := f.Store()
			if err != nil {
				return err
			}
			return embedIfMissing(ctx, f, s, set, who)
		},
	}
}
