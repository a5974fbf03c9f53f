package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/internal/suggest"
)

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
			if targets := []string{"slurm", "kubernetes"}; !slices.Contains(targets, opts.To) {
				return usagef("--to must be slurm or kubernetes, got %q%s", opts.To, suggest.DidYouMean(opts.To, targets))
			}
			if opts.Out == "" {
				return usagef("--out DIR is required")
			}
			g, runs, err := loadGrid(args[0])
			if err != nil {
				return err
			}
			// A strategy parameter every run would refuse is refused here,
			// before any job file is written (what this machine can check).
			if err := checkGridParams(cmd.Context(), f, g, runs, true); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
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
