package cli

import (
	"fmt"
	"strconv"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/experiment/trainrun"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/similarity"
)

type planOptions struct {
	strategyOptions
	Synsets string
	Epochs  int
	Out     string
}

func newPlanCmd(f *Factory) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Write a strategy's per-epoch targets without training",
		Long: `Run a strategy's curriculum without training, so it can be seen and tuned
before spending GPU hours. For every stage and epoch it writes the C×C target
matrix (row y = the target of an example of class y; one-hot plans as the
identity) and summarises it:

  OUT/epoch-NNN.npy          targets of epoch NNN (0-based: epoch-000 is v(0),
                             what the first epoch trains on); for strategies
                             with several stages, OUT/STAGE/epoch-NNN.npy
  OUT/curriculum.csv         stage, stage_name, epoch, mean_entropy (nats, mean
                             over rows), mean_true_mass (mean of the diagonal),
                             and the loss coefficients soft_ce, hard_ce, kd,
                             temperature, mutual, group (hxe's group term)
  OUT/curriculum.png         mean entropy and mean true-class mass per epoch
  OUT/classes.txt            index, id and name of each row/column

The similarity matrix (for strategies that need one, such as lcl) is --matrix
FILE (.npy, CSV or text), or else the latest matrix of kind --source for the label set in the
store, or else what the similarity plugin named --source computes. A stage
that needs features of a trained model (cn's curriculum) cannot be planned
without training; plan stops before it and says so. For soft, --matrix FILE
is the target matrix itself (docs/methods.md), checked as lcl train checks it.`,
		Example: `  lcl plan --strategy lcl --epsilon 0.99 --synsets cifar100 --source semantic --epochs 30 --out plan/
  lcl plan --strategy lcl --epsilon 0.9 --matrix sim.npy --epochs 10 --out plan/
  lcl plan --strategy ls --param alpha=0.2 --synsets fashion-mnist --epochs 5 --out plan-ls/
  lcl plan --strategy soft --param anneal=0.9 --matrix targets.csv --synsets fashion-mnist --epochs 5 --out plan-soft/`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Out == "" {
				return usagef("--out DIR is required")
			}
			if o.Epochs < 1 {
				return usagef("--epochs %d: want at least 1", o.Epochs)
			}
			return runPlan(cmd, f, o)
		},
	}
	o.addFlags(cmd.Flags(), "lcl")
	cmd.Flags().StringVar(&o.Synsets, "synsets", "", "label set: built-in name or file (optional with --matrix)")
	cmd.Flags().IntVar(&o.Epochs, "epochs", 30, "epochs of the run")
	cmd.Flags().StringVar(&o.Out, "out", "", "output folder (created)")
	return cmd
}

func runPlan(cmd *cobra.Command, f *Factory, o *planOptions) error {
	ctx := cmd.Context()
	var set *labels.Set
	var classes []sdk.Class
	if o.Synsets != "" {
		var err error
		if set, err = f.LabelSet(o.Synsets); err != nil {
			return err
		}
		classes = curriculum.Classes(set)
	} else {
		if o.Matrix == "" {
			return usagef("give --synsets, or --matrix FILE.npy")
		}
		r, err := matrixSize(o.Matrix, o.Strategy)
		if err != nil {
			return err
		}
		for i := 0; i < r; i++ {
			classes = append(classes, sdk.Class{Index: i, ID: strconv.Itoa(i), Name: "class " + strconv.Itoa(i)})
		}
	}
	sel, err := o.selection(cmd.Flags())
	if err != nil {
		return err
	}
	host := newHost(f, o.Timeout)
	defer host.Close()
	opened, err := trainrun.OpenStrategy(ctx, f.runEnv("lcl plan"), host, sel, set, classes, o.Epochs)
	if err != nil {
		return fromRun(err)
	}
	defer opened.Close()
	if opened.From != "" {
		f.Logf("lcl plan: similarity from %s", opened.From)
	}
	// One nominal example per class: enough to see every target row.
	nominal := make([]int, len(classes))
	for i := range nominal {
		nominal[i] = i
	}
	b, err := curriculum.New(ctx, opened.Strategy, opened.Run(classes, nominal, nil, o.Epochs, 0, ""))
	if err != nil {
		return err
	}
	var bar *progressbar.ProgressBar
	p, err := curriculum.WritePreview(ctx, b, o.Out, func(done, total int) {
		if bar == nil {
			bar = f.Progress(int64(total), "plan")
		}
		bar.Set(done)
	})
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return err
	}
	if p.Stopped != "" {
		f.Logf("lcl plan: stage %q needs the features of a model trained in stage %q; planned up to there", p.Stopped, p.After)
	}
	c, rows := len(classes), p.Epochs
	summary := map[string]any{"strategy": opened.Info.Name, "classes": c, "epochs": len(rows), "matrices": p.Files, "out": o.Out}
	if len(rows) > 0 {
		summary["first_entropy"], summary["last_entropy"] = rows[0].Entropy, rows[len(rows)-1].Entropy
		summary["first_true_mass"], summary["last_true_mass"] = rows[0].TrueMass, rows[len(rows)-1].TrueMass
	}
	if !f.Emit("summary", summary) {
		fmt.Fprintf(f.IO.Out, "%s: %d target matrices (%d classes) in %s; curriculum.csv, curriculum.png\n", opened.Info.Name, p.Files, c, o.Out)
		if len(rows) > 0 {
			fmt.Fprintf(f.IO.Out, "mean entropy %.4f → %.4f nats; mean true-class mass %.4f → %.4f\n",
				rows[0].Entropy, rows[len(rows)-1].Entropy, rows[0].TrueMass, rows[len(rows)-1].TrueMass)
		}
	}
	return nil
}

// matrixSize is the class count of a matrix file, for a plan without a
// label set: a target file of soft may have a header and row labels.
func matrixSize(path, strategyName string) (int, error) {
	if strategy.MatrixIsTargets(strategyName) {
		// Only its size here: OpenStrategy checks it whole.
		_, c, err := similarity.ReadTargets(path, similarity.TargetOptions{Normalize: true})
		if err != nil {
			return 0, usagef("--matrix: %v", err)
		}
		return c, nil
	}
	_, c, err := similarity.ReadMatrixFile(path)
	return c, err
}
