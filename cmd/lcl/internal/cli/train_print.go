package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/launch"
	"github.com/lcl-project/lcl/trainer/torch"
)

// trainPrinter prints a training run: what it trains on stderr, a progress
// bar over each epoch's steps (on a terminal), a line (or a JSON "epoch"
// object) per epoch, and the final metrics (or a JSON "summary").
type trainPrinter struct {
	f   *Factory
	bar *progressbar.ProgressBar
}

// begin says what the run trains, where, and how.
func (p *trainPrinter) begin(cfg trainer.Config, spec, preset string, dist *launch.Env, backend string) {
	f, op := p.f, cfg.Optim
	nTrain := cfg.Train.Len()
	if cfg.TrainIndices != nil {
		nTrain = len(cfg.TrainIndices)
	}
	if dist != nil {
		f.Logf("lcl train: rank %d of %d (%s, Gloo rendezvous %s:%d); global batch %d, %d per rank",
			dist.Rank, dist.World, backend, dist.Addr, dist.Port, op.Batch, (op.Batch+dist.World-1)/dist.World)
	}
	threads := cfg.Threads
	if threads <= 0 {
		threads, _ = torch.Threads() // only printed; torch.Check already passed
	}
	optimizer := op.Optimizer
	if optimizer == "" {
		optimizer = "sgd"
	}
	f.Logf("lcl train: %s, %d of %d training images, %d test; model %s; strategy %s; preset %s (%s, epochs %d, batch %d, lr %g %s); libtorch %s, %s, OMP_WAIT_POLICY=%s; run %s",
		spec, nTrain, cfg.Train.Len(), cfg.Test.Len(), cfg.Model, cfg.Strategy, preset, optimizer,
		op.Epochs, op.Batch, op.Schedule.LR, op.Schedule.Kind, torch.Version(), count(threads, "thread"), os.Getenv("OMP_WAIT_POLICY"), cfg.Out)
}

// count is "1 thread", "2 threads".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// resumed says where a resumed run continues (its checkpoint's position).
func (p *trainPrinter) resumed(r trainer.Resumed) {
	at := fmt.Sprintf("epoch %d of %d", r.Epoch+1, r.Epochs)
	if r.Epoch == r.Epochs {
		at = fmt.Sprintf("the test of the selected weights after epoch %d", r.Epoch)
	} else if r.Step > 0 {
		at += fmt.Sprintf(" at step %d", r.Step+1)
	}
	if r.Stages > 1 {
		at = fmt.Sprintf("stage %q, %s", r.Stage, at)
	}
	p.f.Logf("lcl train: resumed from %s", at)
}

// progress draws the bar of the epoch after each step.
func (p *trainPrinter) progress(s trainer.Progress) {
	if p.bar == nil || s.Step == 1 {
		p.finish()
		p.bar = p.f.Progress(int64(s.Steps), "")
	}
	p.bar.Describe(fmt.Sprintf("%s %d/%d  loss %.4f  acc %.1f%%  %.0f img/s  ETA %s", s.Stage, s.Epoch, s.Epochs,
		s.Loss, 100*s.Acc, s.ImgPerSec, s.ETA.Round(time.Second)))
	p.bar.Set(s.Step)
}

// finish takes the bar down.
func (p *trainPrinter) finish() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// epoch reports an epoch's metrics.
func (p *trainPrinter) epoch(m trainer.EpochMetrics) {
	p.finish()
	f := p.f
	if f.Emit("epoch", m) {
		return
	}
	line := fmt.Sprintf("%s epoch %d/%d  lr %.4g  train loss %.4f acc %.2f%%", m.Stage, m.Epoch, m.Epochs, m.LR, m.TrainLoss, 100*m.TrainTop1)
	if m.Tested() {
		line += fmt.Sprintf("  test top-1 %.2f%% top-5 %.2f%% loss %.4f", 100*m.TestTop1, 100*m.TestTop5, m.TestLoss)
		if h := m.TestHier; h != nil {
			line += fmt.Sprintf(" hdist@5 %.3f", h.HDist5)
		}
	}
	if len(m.Val) > 0 {
		line += fmt.Sprintf("  val top-1 %.2f%% loss %.4f", 100*m.Val[0].Top1, m.Val[0].Loss)
	}
	if len(m.EMA) > 0 {
		if e := m.EMA[0]; e.Test != nil {
			line += fmt.Sprintf("  ema test top-1 %.2f%%", 100*e.Test.Top1)
		} else if e.Val != nil {
			line += fmt.Sprintf("  ema val top-1 %.2f%%", 100*e.Val.Top1)
		}
	}
	if len(m.Best) > 0 {
		line += fmt.Sprintf("  best epoch %d", m.Best[0])
	}
	f.Logf("%s  %.0f img/s", line, m.ImgPerSec)
	for k, pm := range m.Peers {
		if m.Tested() {
			f.Logf("  peer %d: test top-1 %.2f%% top-5 %.2f%%", k, 100*pm.TestTop1, 100*pm.TestTop5)
		} else if k < len(m.Val) {
			f.Logf("  peer %d: val top-1 %.2f%% top-5 %.2f%%", k, 100*m.Val[k].Top1, 100*m.Val[k].Top5)
		}
	}
}

// summary reports the finished run in out.
func (p *trainPrinter) summary(res *trainer.Result, out string) {
	f := p.f
	if f.Emit("summary", res) {
		return
	}
	for k, pm := range res.Final {
		name := "model"
		if len(res.Final) > 1 {
			name = fmt.Sprintf("peer %d", k)
		}
		of := ""
		if s := res.Selection; s != nil {
			weights := "weights"
			if s.EMA {
				weights = "moving average of the weights"
			}
			of = fmt.Sprintf(" (the %s of epoch %d, best %s %.4g)", weights, s.Epochs[k], s.Metric, s.Values[k])
		}
		fmt.Fprintf(f.IO.Out, "%s: test top-1 %.2f%%  top-5 %.2f%%  loss %.4f%s\n", name, 100*pm.TestTop1, 100*pm.TestTop5, pm.TestLoss, of)
		if h := pm.TestHier; h != nil {
			fmt.Fprintf(f.IO.Out, "%s: %s\n", name, hierLine(pm.TestTop1, *h))
			if l := heightLine(*h); l != "" {
				fmt.Fprintf(f.IO.Out, "%s: %s\n", name, l)
			}
		}
		if k < len(res.EMA) {
			fmt.Fprintf(f.IO.Out, "%s, moving average of the weights: test top-1 %.2f%%  top-5 %.2f%%  loss %.4f\n", name,
				100*res.EMA[k].Top1, 100*res.EMA[k].Top5, res.EMA[k].Loss)
		}
	}
	if s := res.Selection; s != nil && s.StoppedAt > 0 {
		fmt.Fprintf(f.IO.Out, "early stopping ended the run after epoch %d\n", s.StoppedAt)
	}
	fmt.Fprintf(f.IO.Out, "run %s (%.0f s; CPU %.0f s user, %.0f s system, %.1f%% of it system): %s\n", out, res.Seconds,
		res.UserSeconds, res.SystemSeconds, 100*res.SystemSeconds/max(res.UserSeconds+res.SystemSeconds, 1e-9), res.Weights)
}
