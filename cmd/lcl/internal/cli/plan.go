package cli

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/internal/figure"
	"github.com/lcl-project/lcl/internal/npy"
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
                             temperature, mutual
  OUT/curriculum.png         mean entropy and mean true-class mass per epoch
  OUT/classes.txt            index, id and name of each row/column

The similarity matrix (for strategies that need one, such as lcl) is --matrix
FILE.npy, or else the latest matrix of kind --source for the label set in the
store, or else what the similarity plugin named --source computes. A stage
that needs features of a trained model (cn's curriculum) cannot be planned
without training; plan stops before it and says so.`,
		Example: `  lcl plan --strategy lcl --epsilon 0.99 --synsets cifar100 --source semantic --epochs 30 --out plan/
  lcl plan --strategy lcl --epsilon 0.9 --matrix sim.npy --epochs 10 --out plan/
  lcl plan --strategy ls --param alpha=0.2 --synsets fashion-mnist --epochs 5 --out plan-ls/`,
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

type planRow struct {
	stage     int
	stageName string
	epoch     int
	entropy   float64
	trueMass  float64
	coef      sdk.Coefficients
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
		_, r, err := similarity.ReadMatrixFile(o.Matrix)
		if err != nil {
			return err
		}
		for i := 0; i < r; i++ {
			classes = append(classes, sdk.Class{Index: i, ID: strconv.Itoa(i), Name: "class " + strconv.Itoa(i)})
		}
	}
	host := newHost(f, o.Timeout)
	defer host.Close()
	opened, err := openStrategy(ctx, f, host, &o.strategyOptions, cmd.Flags(), set, classes)
	if err != nil {
		return err
	}
	if opened.From != "" {
		f.Logf("lcl plan: similarity from %s", opened.From)
	}
	// One nominal example per class: enough to see every target row.
	nominal := make([]int, len(classes))
	for i := range nominal {
		nominal[i] = i
	}
	b, err := curriculum.New(ctx, opened.Strategy, opened.run(classes, nominal, nil, o.Epochs, 0, ""))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	if err := writeClasses(filepath.Join(o.Out, "classes.txt"), classes); err != nil {
		return err
	}
	total := 0
	stages := b.StrategyStages()
	for _, s := range stages {
		total += s.Epochs
	}
	bar := f.Progress(int64(total), "plan")
	defer bar.Close()
	c := len(classes)
	var rows []planRow
	files := 0
stages:
	for s, stage := range stages {
		for prev := 0; prev < s; prev++ {
			if stages[prev].Features {
				f.Logf("lcl plan: stage %q needs the features of a model trained in stage %q; planned up to there", stage.Name, stages[prev].Name)
				break stages
			}
		}
		dir := o.Out
		if len(stages) > 1 {
			dir = filepath.Join(o.Out, stage.Name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		for e := 0; e < stage.Epochs; e++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			p, err := b.StrategyPlan(ctx, s, e, 0, nil)
			if err != nil {
				return err
			}
			t := p.Targets
			if t == nil {
				t = strategy.OneHot(c)
			}
			if err := npy.WriteFile(filepath.Join(dir, fmt.Sprintf("epoch-%03d.npy", e)), c, c, t.Data); err != nil {
				return err
			}
			files++
			h, m := strategy.TargetStats(t)
			rows = append(rows, planRow{s, stage.Name, e, h, m, p.Coef})
			bar.Add(1)
		}
	}
	bar.Finish()
	if err := writePlanCSV(filepath.Join(o.Out, "curriculum.csv"), rows); err != nil {
		return err
	}
	if err := writePlanPNG(filepath.Join(o.Out, "curriculum.png"), opened.Info.Name, rows); err != nil {
		return err
	}
	summary := map[string]any{"strategy": opened.Info.Name, "classes": c, "epochs": len(rows), "matrices": files, "out": o.Out}
	if len(rows) > 0 {
		summary["first_entropy"], summary["last_entropy"] = rows[0].entropy, rows[len(rows)-1].entropy
		summary["first_true_mass"], summary["last_true_mass"] = rows[0].trueMass, rows[len(rows)-1].trueMass
	}
	if !f.Emit("summary", summary) {
		fmt.Fprintf(f.IO.Out, "%s: %d target matrices (%d classes) in %s; curriculum.csv, curriculum.png\n", opened.Info.Name, files, c, o.Out)
		if len(rows) > 0 {
			fmt.Fprintf(f.IO.Out, "mean entropy %.4f → %.4f nats; mean true-class mass %.4f → %.4f\n",
				rows[0].entropy, rows[len(rows)-1].entropy, rows[0].trueMass, rows[len(rows)-1].trueMass)
		}
	}
	return nil
}

func writeClasses(path string, classes []sdk.Class) error {
	var buf bytes.Buffer
	for _, c := range classes {
		fmt.Fprintf(&buf, "%d\t%s\t%s\n", c.Index, c.ID, c.Name)
	}
	return writeAtomic(path, buf.Bytes())
}

func writePlanCSV(path string, rows []planRow) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"stage", "stage_name", "epoch", "mean_entropy", "mean_true_mass", "soft_ce", "hard_ce", "kd", "temperature", "mutual"})
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }
	for _, r := range rows {
		w.Write([]string{strconv.Itoa(r.stage), r.stageName, strconv.Itoa(r.epoch), g(r.entropy), g(r.trueMass),
			g(r.coef.SoftCE), g(r.coef.HardCE), g(r.coef.KD), g(r.coef.Temperature), g(r.coef.Mutual)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return writeAtomic(path, buf.Bytes())
}

// writePlanPNG draws two stacked panels over the run's epochs (all stages in
// a row): mean target entropy, and mean true-class mass.
func writePlanPNG(path, name string, rows []planRow) error {
	ent := make([]figure.XY, len(rows))
	mass := make([]figure.XY, len(rows))
	for i, r := range rows {
		ent[i] = figure.XY{X: float64(i), Y: r.entropy}
		mass[i] = figure.XY{X: float64(i), Y: r.trueMass}
	}
	png, err := figure.Stack([]figure.Panel{
		{Title: name + ": mean target entropy", XLabel: "epoch", YLabel: "nats", Points: ent, Color: color.RGBA{R: 31, G: 119, B: 180, A: 255}},
		{Title: name + ": mean true-class mass", XLabel: "epoch", YLabel: "v_c", Points: mass, Color: color.RGBA{R: 214, G: 39, B: 40, A: 255}, YRange: &[2]float64{0, 1}},
	})
	if err != nil {
		return err
	}
	return writeAtomic(path, png)
}
