package curriculum

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"

	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/internal/figure"
	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/strategy"
)

// PreviewEpoch is one planned epoch of a preview: its targets' mean
// entropy (nats) and mean true-class mass, and its loss coefficients.
type PreviewEpoch struct {
	Stage     int
	StageName string
	Epoch     int // 0-based within the stage
	Entropy   float64
	TrueMass  float64
	Coefs     sdk.Coefs
}

// Preview is a strategy's curriculum planned without training (lcl plan).
type Preview struct {
	Epochs []PreviewEpoch // every planned epoch, stage after stage
	Files  int            // target matrices written
	// Stopped is the first stage that was not planned because it needs the
	// features of the model trained in stage After; "" when every stage was.
	Stopped, After string
}

// WritePreview plans every stage and epoch of b without training and writes
// the curriculum into dir (created): each epoch's C×C targets (row y is the
// target of an example of class y; one-hot plans as the identity) as
// epoch-NNN.npy (in dir/STAGE/ when the strategy has several stages),
// curriculum.csv (one row per epoch: statistics and loss coefficients),
// curriculum.png (mean entropy and true-class mass over the epochs),
// classes.txt (index, id and name of each row) and, for a plan with a
// fixed classifier, its C×k class vectors as classifier.npy (beside the
// stage's epochs). It stops before a stage
// that needs the features of a model trained in an earlier stage. Progress,
// when set, is called after each epoch with the epochs done and their total.
func WritePreview(ctx context.Context, b *Bridge, dir string, progress func(done, total int)) (*Preview, error) {
	classes := b.run.Classes
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeClasses(filepath.Join(dir, "classes.txt"), classes); err != nil {
		return nil, err
	}
	total := 0
	stages := b.StrategyStages()
	for _, s := range stages {
		total += s.Epochs
	}
	c := len(classes)
	p := &Preview{}
stages:
	for s, stage := range stages {
		for prev := 0; prev < s; prev++ {
			if stages[prev].Features {
				p.Stopped, p.After = stage.Name, stages[prev].Name
				break stages
			}
		}
		out := dir
		if len(stages) > 1 {
			out = filepath.Join(dir, stage.Name)
			if err := os.MkdirAll(out, 0o755); err != nil {
				return nil, err
			}
		}
		for e := 0; e < stage.Epochs; e++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			plan, err := b.StrategyPlan(ctx, sdk.PlanAt{Stage: s, Epoch: e}, nil)
			if err != nil {
				return nil, err
			}
			t := plan.Targets
			if t == nil {
				t = strategy.OneHot(c)
			}
			t = t.Dense()
			if err := npy.WriteFileFloat32(filepath.Join(out, fmt.Sprintf("epoch-%03d.npy", e)), c, c, t.Data); err != nil {
				return nil, err
			}
			p.Files++
			// A fixed classifier (haframe) is the same in every epoch's
			// plan: its class vectors once per stage.
			if v := plan.Classifier; v != nil && e == 0 {
				v = v.Dense()
				if err := npy.WriteFileFloat32(filepath.Join(out, "classifier.npy"), v.Rows, v.Cols, v.Data); err != nil {
					return nil, err
				}
			}
			h, m := strategy.TargetStats(t)
			p.Epochs = append(p.Epochs, PreviewEpoch{s, stage.Name, e, h, m, plan.Coefs})
			if progress != nil {
				progress(len(p.Epochs), total)
			}
		}
	}
	if err := writePreviewCSV(filepath.Join(dir, "curriculum.csv"), p.Epochs); err != nil {
		return nil, err
	}
	if err := writePreviewPNG(filepath.Join(dir, "curriculum.png"), b.run.Info.Name, p.Epochs); err != nil {
		return nil, err
	}
	return p, nil
}

func writeClasses(path string, classes []sdk.Class) error {
	var buf bytes.Buffer
	for _, c := range classes {
		fmt.Fprintf(&buf, "%d\t%s\t%s\n", c.Index, c.ID, c.Name)
	}
	return atomicfile.WriteFile(path, buf.Bytes(), 0o644)
}

func writePreviewCSV(path string, rows []PreviewEpoch) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	// The coefficients' columns are their wire names, in field order.
	head := []string{"stage", "stage_name", "epoch", "mean_entropy", "mean_true_mass"}
	for _, t := range (sdk.Coefs{}).Terms() {
		head = append(head, t.Proto)
	}
	w.Write(head)
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }
	for _, r := range rows {
		rec := []string{strconv.Itoa(r.Stage), r.StageName, strconv.Itoa(r.Epoch), g(r.Entropy), g(r.TrueMass)}
		for _, t := range r.Coefs.Terms() {
			rec = append(rec, g(t.Value))
		}
		w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, buf.Bytes(), 0o644)
}

// writePreviewPNG draws two stacked panels over the run's epochs (all
// stages in a row): mean target entropy, and mean true-class mass.
func writePreviewPNG(path, name string, rows []PreviewEpoch) error {
	ent := make([]figure.XY, len(rows))
	mass := make([]figure.XY, len(rows))
	for i, r := range rows {
		ent[i] = figure.XY{X: float64(i), Y: r.Entropy}
		mass[i] = figure.XY{X: float64(i), Y: r.TrueMass}
	}
	png, err := figure.Stack([]figure.Panel{
		{Title: name + ": mean target entropy", XLabel: "epoch", YLabel: "nats", Points: ent, Color: color.RGBA{R: 31, G: 119, B: 180, A: 255}},
		{Title: name + ": mean true-class mass", XLabel: "epoch", YLabel: "v_c", Points: mass, Color: color.RGBA{R: 214, G: 39, B: 40, A: 255}, YRange: &[2]float64{0, 1}},
	})
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, png, 0o644)
}
