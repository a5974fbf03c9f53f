package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/trainer/data"
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
}

func newExperimentRunCmd(f *Factory) *cobra.Command {
	var opts experimentRunOptions
	cmd := &cobra.Command{
		Use:   "run GRID.yaml",
		Short: "Run every run of a grid that is not done yet",
		Long: `Run trains each run of the grid that the store does not hold as done, one
after another, each as an ` + "`lcl train`" + ` subprocess writing into RUN-DIR/<run id>.
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
	g, runs, err := loadGrid(path)
	if err != nil {
		return err
	}
	for i := range runs {
		if opts.Device != "" {
			runs[i].Exec.Device = opts.Device
		}
		if opts.Threads > 0 {
			runs[i].Exec.Threads = opts.Threads
		}
	}
	results := experiment.StoreAt{Dir: f.storeDir()}
	if opts.DryRun {
		return experimentList(ctx, f, g, runs, results, opts.RunDir)
	}
	// Catch what would fail every run before launching any.
	if _, err := labels.Load(g.Labels); err != nil {
		return fmt.Errorf("%s: labels: %w", path, err)
	}
	// The data as each run's `lcl train --synsets LABELS --data DATA` sees it.
	if spec, err := dataSpec(g.Labels, g.Data); err != nil {
		return fmt.Errorf("%s: data: %w", path, err)
	} else if err := data.Check(spec); err != nil {
		return fmt.Errorf("%s: data: %w", path, err)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("experiment: cannot find the lcl binary to launch runs: %w", err)
	}
	bar := f.Progress(int64(len(runs)), "grid "+g.Name)
	defer bar.Close()
	drawn := f.IO.ErrTTY && !f.Quiet && !f.JSON // the bar is visible: log lines clear it first
	r := &experiment.Runner{
		Launch:  experiment.Command(self, leadingFlags(f, results.Dir), 30*time.Second),
		Results: results,
		Root:    opts.RunDir,
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

func experimentList(ctx context.Context, f *Factory, g *experiment.Grid, runs []experiment.Run, results experiment.StoreAt, root string) error {
	statuses := map[string]string{}
	if _, err := os.Stat(results.Dir); err == nil {
		err := results.With(func(st *simstore.Store) error {
			for _, r := range runs {
				rec, err := st.GetRun(ctx, r.ID)
				if err == nil {
					statuses[r.ID] = rec.Status
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
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
		args := r.TrainArgs(experiment.RunDir(root, r.ID), false)
		if f.Emit("run", map[string]any{"id": r.ID, "status": status, "config": r.Config, "args": args}) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\tlcl %s\n", r.ID, status, r.Config.Model,
			experiment.Percent(r.Config.Fraction), r.Config.Method(), r.Config.Seed, strings.Join(args, " "))
	}
	return tw.Flush()
}

type experimentEmitOptions struct {
	To  string
	Out string
	experiment.EmitOptions
}

func newExperimentEmitCmd(f *Factory) *cobra.Command {
	var opts experimentEmitOptions
	cmd := &cobra.Command{
		Use:   "emit --to slurm|kubernetes GRID.yaml --out DIR",
		Short: "Write a Slurm job array or a Kubernetes indexed Job for a grid",
		Long: `Emit writes the cluster files for a grid, one run per task:
  slurm       DIR/lcl-<grid>.sbatch, a job array (--array=0-<runs-1>); each task
              runs its ` + "`lcl train`" + ` line into RESULTS/<run id>/
  kubernetes  DIR/lcl-<grid>.yaml, a batch/v1 Job with completionMode Indexed and
              one completion per run; JOB_COMPLETION_INDEX picks the run
Both also write DIR/runs.json (index, run id, configuration). A task whose run
is finished exits at once; one whose run was started resumes it (--resume).
Results are JSON files in the shared results folder; import them with
` + "`lcl experiment collect RESULTS`" + `.`,
		Example: `  lcl experiment emit --to slurm experiments/cifar100-wrn.yaml --out cluster/ --parallel 8
  sbatch -p gpu cluster/lcl-cifar100-wrn.sbatch
  lcl experiment collect cluster/runs

  lcl experiment emit --to kubernetes experiments/cub-resnet.yaml --out k8s/ --image registry.example/lcl:1.0
  kubectl apply -f k8s/lcl-cub-resnet.yaml`,
		Args: exactArgs(1, "GRID.yaml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.To != "slurm" && opts.To != "kubernetes" {
				return usagef("--to must be slurm or kubernetes, got %q", opts.To)
			}
			if opts.Out == "" {
				return usagef("--out DIR is required")
			}
			g, runs, err := loadGrid(args[0])
			if err != nil {
				return err
			}
			em, err := experiment.Emit(opts.To, g, runs, opts.Out, opts.EmitOptions)
			if err != nil {
				return err
			}
			if !f.Emit("emitted", map[string]any{"target": opts.To, "runs": em.Runs, "files": em.Files}) {
				fmt.Fprintf(f.IO.Out, "%s: %d runs\n", opts.To, em.Runs)
				for _, p := range em.Files {
					fmt.Fprintln(f.IO.Out, "  wrote", p)
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.To, "to", "", "target: slurm or kubernetes (required)")
	fl.StringVar(&opts.Out, "out", "", "folder for the job files (required)")
	fl.StringVar(&opts.Results, "results", "", "shared results folder as the jobs see it (default: OUT/runs for Slurm, /results for Kubernetes); $LCL_RESULTS overrides it at run time")
	fl.StringVar(&opts.LCL, "lcl", "lcl", "lcl binary on the cluster nodes; $LCL overrides it at run time")
	fl.IntVar(&opts.Parallel, "parallel", 0, "most runs at once (Slurm: --array %N; Kubernetes: parallelism, default all)")
	fl.StringVar(&opts.Image, "image", "lcl:latest", "container image with lcl and the data (Kubernetes)")
	fl.StringVar(&opts.PVC, "pvc", "lcl-results", "PersistentVolumeClaim mounted at the results folder (Kubernetes)")
	fl.StringVar(&opts.Name, "name", "", "job name (default lcl-<grid name>)")
	return cmd
}

func newExperimentCollectCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "collect DIR",
		Short: "Import the results of cluster runs into the store",
		Long: `Collect walks DIR for run directories written by emitted cluster jobs (or by
` + "`lcl experiment run`" + `), each holding lcl-run.json (the run's configuration) and,
once finished, result.json and metrics.jsonl, and stores every finished run.
Unfinished runs are listed; collecting again later imports them then.`,
		Example: `  lcl experiment collect cluster/runs
  lcl report --grid experiments/cifar100-wrn.yaml --out report/`,
		Args: exactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := f.Store()
			if err != nil {
				return err
			}
			s, err := experiment.Collect(cmd.Context(), args[0], st)
			if err != nil {
				return err
			}
			if !f.Emit("collected", map[string]any{"imported": s.Imported, "unfinished": s.Unfinished}) {
				fmt.Fprintf(f.IO.Out, "imported %d finished runs; %d unfinished\n", s.Imported, len(s.Unfinished))
				for _, id := range s.Unfinished {
					fmt.Fprintln(f.IO.Out, "  unfinished:", id)
				}
			}
			return nil
		},
	}
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
	args := []string{"--store", store, "--quiet"}
	if f.RequirePinned {
		args = append(args, "--require-pinned")
	}
	return args
}
