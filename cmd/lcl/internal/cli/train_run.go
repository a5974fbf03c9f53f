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
	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/simstore"
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
	if note := blasNote(cfg.Device); note != "" {
		f.Logf("lcl train: %s", note)
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
	var recErr error
	if !spec.Exec.NoStore {
		recErr = recordRun(ctx, f, r)
	}
	pr.summary(res, out)
	return recErr
}

// recordWait is how long a finished run waits for a store another lcl is
// using to record it (a longer --store-wait wins): two lcl train on one
// store each hold it for moments, and a run is never to lose its record
// to the other.
var recordWait = 5 * time.Minute

// recordRun records the finished run in the store, waiting for a store
// another lcl is using (a line says so; Ctrl-C ends the wait). Failing
// that, the error names the run, its folder and the store (exit 1; 130
// after Ctrl-C): a finished run is never left out of the store silently.
func recordRun(ctx context.Context, f *Factory, r *trainrun.Run) error {
	st, err := f.openStore(0)
	if errors.Is(err, simstore.ErrLocked) {
		wait := max(f.StoreWait, recordWait)
		f.Logf("lcl train: the store %s is in use by another lcl: waiting up to %s for it to record the run", bounded.Quote(f.storeDir()), wait)
		start := time.Now()
		for errors.Is(err, simstore.ErrLocked) && time.Since(start) < wait && ctx.Err() == nil {
			select {
			case <-ctx.Done():
				continue
			case <-time.After(100 * time.Millisecond):
			}
			st, err = f.openStore(0)
		}
		switch {
		case errors.Is(err, simstore.ErrLocked) && ctx.Err() != nil:
			err = fmt.Errorf("stopped waiting for it, in use by another lcl: %w", ctx.Err())
		case errors.Is(err, simstore.ErrLocked):
			err = fmt.Errorf("in use by another lcl for %s (--store-wait waits longer)", wait)
		}
	}
	if err == nil {
		err = r.Record(context.WithoutCancel(ctx), st)
	}
	if err == nil {
		return nil
	}
	id := "?"
	if c, cerr := r.Spec.Config(r.UsesSimilarity()); cerr == nil {
		id = c.ID()
	}
	return fmt.Errorf("run %s finished in %s but is not recorded in the store %s: %w; its files are kept: train it again into another --out once the store is free",
		id, bounded.Quote(r.Config.Out), bounded.Quote(f.storeDir()), err)
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

// blasNote warns when a CPU run's matrix products would run on Netlib's
// reference BLAS: Debian's libtorch depends on "libblas3 | libblas.so.3", so
// installing it alone gives that one, and the demo's runs then took 3× as
// long as on OpenBLAS (docs/trainer.md, "The BLAS").
func blasNote(device string) string {
	if device != "" && device != "cpu" {
		return ""
	}
	b, err := torch.LoadedBLAS()
	if err != nil || !b.Reference() {
		return ""
	}
	return fmt.Sprintf("libtorch's BLAS is the unoptimised reference one (%s): CPU training runs up to ~3x slower; "+
		"install OpenBLAS (apt-get install libopenblas0-pthread, or scripts/deps.sh build)", b.Path)
}
