package cli

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/experiment/trainrun"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/trainer"
)

func newExperimentCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiment",
		Short: "Run experiment grids, here or on a cluster",
		Long: `An experiment grid is a YAML file naming a label set, data, models, data
ratios, strategies with parameter lists, similarity sources, seeds, epochs and
a preset. It expands to the cross product of its lists; each run is keyed by a
digest of its full configuration, so a run is never trained twice and grids
that share runs share results. See docs/experiment.md for the file format.`,
	}
	cmd.AddCommand(newExperimentRunCmd(f), newExperimentEmitCmd(f), newExperimentCollectCmd(f))
	return cmd
}

type experimentRunOptions struct {
	DryRun  bool
	RunDir  string
	Device  string
	Threads int
	Jobs    int
}

// gridStoreWait is how long a grid's runner and its lcl train children wait
// for the store while another of them holds it (each holds it for moments:
// a record, a matrix read; a large matrix takes seconds).
const gridStoreWait = 5 * time.Minute

func newExperimentRunCmd(f *Factory) *cobra.Command {
	var opts experimentRunOptions
	cmd := &cobra.Command{
		Use:   "run GRID.yaml",
		Short: "Run every run of a grid that is not done yet",
		Long: `Run trains each run of the grid that the store does not hold as done, one
after another (--jobs N: N at a time, each with its share of the CPUs unless
the grid or --threads gives threads), each as an ` + "`lcl train`" + ` subprocess writing
into RUN-DIR/<run id>.
Results go to the store. Re-running a grid skips finished runs; a run that was
interrupted (Ctrl-C, a crash, a killed machine) is relaunched with --resume
from its directory. A failed run is recorded and the grid goes on; lcl exits
with 1 at the end, naming the failed runs and their logs.`,
		Example: `  lcl experiment run experiments/demo.yaml --dry-run
  lcl experiment run experiments/demo.yaml
  lcl experiment run experiments/cifar100-wrn.yaml --device cuda --run-dir /scratch/runs`,
		Args: exactArgs(1, "GRID.yaml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return experimentRun(cmd.Context(), f, args[0], opts)
		},
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "list the runs with their status and command lines; train nothing")
	cmd.Flags().StringVar(&opts.RunDir, "run-dir", "runs", "folder that holds one directory per run (checkpoints, metrics, logs)")
	cmd.Flags().StringVar(&opts.Device, "device", "", "override the grid's device (cpu, cuda, cuda:N)")
	cmd.Flags().IntVar(&opts.Threads, "threads", 0, "override the grid's CPU threads per run")
	cmd.Flags().IntVar(&opts.Jobs, "jobs", 1, "runs to train at once (each gets NumCPU/jobs threads unless threads are given)")
	return cmd
}

func loadGrid(path string) (*experiment.Grid, []experiment.Run, error) {
	g, err := experiment.Load(path)
	if err != nil {
		return nil, nil, err
	}
	return g, g.Expand(), nil
}

func experimentRun(ctx context.Context, f *Factory, path string, opts experimentRunOptions) error {
	switch {
	case opts.Jobs < 1 || opts.Jobs > experiment.MaxProcs:
		return usagef("--jobs %d: want 1 or more runs at once, at most %d", opts.Jobs, experiment.MaxProcs)
	case opts.Threads < 0:
		return usagef("--threads %d: want ≥ 0 (0: the grid's, else NumCPU/jobs)", opts.Threads)
	}
	if opts.Device != "" {
		if err := trainer.CheckDevice(opts.Device); err != nil {
			return &usageError{err}
		}
	}
	g, runs, err := loadGrid(path)
	if err != nil {
		return err
	}
	if err := overrideExec(runs, opts); err != nil {
		return err
	}
	results := experiment.StoreAt{Dir: f.storeDir(), Wait: gridStoreWait}
	if opts.DryRun {
		return experimentList(ctx, f, g, runs, results, opts.RunDir)
	}
	// Catch what would fail every run before launching any.
	if err := g.Check(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := checkStrategies(f, g); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := checkGridParams(ctx, f, g, runs, false); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("experiment: cannot find the lcl binary to launch runs: %w", err)
	}
	if testHookRunExecutable != nil {
		if exe := testHookRunExecutable(); exe != "" {
			self = exe
		}
	}
	bar := f.Progress(int64(len(runs)), "grid "+g.Name)
	defer bar.Close()
	drawn := f.IO.ErrTTY && !f.Quiet && !f.JSON // the bar is visible: log lines clear it first
	r := &experiment.Runner{
		Launch:  experiment.Command(self, leadingFlags(f, results.Dir), 30*time.Second),
		Results: results,
		Root:    opts.RunDir,
		Jobs:    opts.Jobs,
		Logf: func(format string, a ...any) {
			if drawn {
				_ = bar.Clear()
			}
			f.Logf(format, a...)
		},
		Progress: func(done, total int, eta time.Duration) {
			left := ""
			if eta > 0 {
				left = fmt.Sprintf(", about %s left", eta.Round(time.Second))
			}
			if f.Emit("progress", map[string]any{"grid": g.Name, "finished": done, "total": total, "eta_seconds": int(eta.Seconds())}) {
				return
			}
			if drawn {
				_ = bar.Set(done)
				bar.Describe("grid " + g.Name + left)
				return
			}
			f.Logf("grid %s: %d/%d runs finished%s", g.Name, done, total, left)
		},
	}
	f.Logf("grid %s: %d runs, run directories under %s, store %s", g.Name, len(runs), opts.RunDir, results.Dir)
	s, err := r.Run(ctx, runs)
	summary := map[string]any{"grid": g.Name, "total": s.Total, "skipped": s.Skipped, "done": s.Done, "failed": s.Failed}
	if !f.Emit("summary", summary) && err == nil {
		fmt.Fprintf(f.IO.Out, "grid %s: %d runs: %d trained now, %d done before, %d failed\n", g.Name, s.Total, s.Done, s.Skipped, s.Failed)
	}
	return err
}

// overrideExec gives every run the --device and --threads given, checked
// by lcl train's checks of those flags.
func overrideExec(runs []experiment.Run, opts experimentRunOptions) error {
	for i := range runs {
		if opts.Device != "" {
			runs[i].Exec.Device = opts.Device
		}
		if opts.Threads > 0 {
			runs[i].Exec.Threads = opts.Threads
		}
	}
	if len(runs) > 0 && opts.Threads > 0 {
		if _, err := runs[0].Spec(); err != nil {
			return &usageError{err}
		}
	}
	return nil
}

func experimentList(ctx context.Context, f *Factory, g *experiment.Grid, runs []experiment.Run, results experiment.StoreAt, root string) error {
	statuses, err := results.Statuses(ctx, runs)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	if !f.JSON {
		fmt.Fprintf(f.IO.Out, "grid %s: %d runs\n", g.Name, len(runs))
		fmt.Fprintln(tw, "ID\tSTATUS\tMODEL\tDR\tMETHOD\tSEED\tCOMMAND")
	}
	for _, r := range runs {
		status := statuses[r.ID]
		if status == "" {
			status = "todo"
		}
		args, err := r.TrainArgs(experiment.RunDir(root, r.ID), false)
		if err != nil {
			return err
		}
		if f.Emit("run", map[string]any{"id": r.ID, "status": status, "config": r.Config, "args": args}) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\tlcl %s\n", r.ID, status, r.Config.Model,
			experiment.Percent(r.Config.Fraction), r.Config.Method(), r.Config.Seed, strings.Join(args, " "))
	}
	return tw.Flush()
}

// exactArgs requires n positional arguments, with a usage error naming them.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s needs %s, got %d arguments", cmd.CommandPath(), names, len(args))
		}
		return nil
	}
}

// leadingFlags are the global flags every run of a grid gets.
func leadingFlags(f *Factory, store string) []string {
	args := []string{"--store", store, "--store-wait", gridStoreWait.String(), "--quiet"}
	if f.RequirePinned {
		args = append(args, "--require-pinned")
	}
	return args
}

// checkStrategies refuses a grid naming a strategy that is neither built in
// nor a plugin on the search path (every run of it would fail alike).
func checkStrategies(f *Factory, g *experiment.Grid) error {
	host := newHost(f, 0)
	defer host.Close()
	for _, s := range g.Strategies {
		if _, err := host.Resolve(plugins.KindStrategy, s.Name); err != nil {
			return fmt.Errorf("strategies: %w", err)
		}
	}
	return nil
}

// testHookRunExecutable, when set and it returns a path, is the executable a
// grid's runs launch instead of lcl itself. Only this package's tests set
// it: to a fake lcl train (testdata/faketrain) that starts in milliseconds,
// where the test binary, which links libtorch, takes ~0.4 CPU-seconds.
var testHookRunExecutable func() string

// checkGridParams checks the strategy parameters of every run of the grid
// as its lcl train would before it starts (trainrun.CheckStrategy: names,
// types, finite numbers, the strategy's ranges), each set once, so that a
// value every run of it would fail on is refused before any run starts:
// the error names the line and key of the value (the first the strategy
// refuses alone), else the run's strategies entry. here: only what this
// machine can check — lcl experiment emit writes jobs for another machine,
// whose label file and plugins need not be here; runs it cannot check are
// left to their own lcl train.
func checkGridParams(ctx context.Context, f *Factory, g *experiment.Grid, runs []experiment.Run, here bool) error {
	set, err := labels.Load(g.Labels)
	if err != nil && here {
		return nil
	}
	if err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	classes := curriculum.Classes(set)
	host := newHost(f, 0)
	defer host.Close()
	checked := map[string]bool{}
	for _, r := range runs {
		spec, err := r.Spec()
		if err != nil {
			return err // (Load refused such a grid)
		}
		params, err := spec.StrategyParams()
		if err != nil || len(params) == 0 {
			continue
		}
		key := spec.Strategy + " " + fmt.Sprint(params)
		if checked[key] {
			continue
		}
		checked[key] = true
		if _, err := host.Resolve(plugins.KindStrategy, spec.Strategy); err != nil && here {
			continue
		}
		sel := trainrun.Selection{Strategy: spec.Strategy, Params: params}
		if err := trainrun.CheckStrategy(ctx, host, sel, classes, spec.Settings.Epochs); err != nil {
			at := g.ParamKey(r, "")
			for _, k := range slices.Sorted(maps.Keys(params)) {
				one := trainrun.Selection{Strategy: spec.Strategy, Params: map[string]string{k: params[k]}}
				if trainrun.CheckStrategy(ctx, host, one, classes, spec.Settings.Epochs) != nil {
					at = g.ParamKey(r, k)
					break
				}
			}
			return fmt.Errorf("%s: %w", g.At(at), err)
		}
	}
	return nil
}
