// Package runlog writes what a training run logs besides metrics.jsonl,
// in its run directory: TensorBoard event files (scalars per epoch and
// every N optimiser steps) and metrics.csv (one row per epoch). A Log is
// the trainer's MetricsSink (trainer.Config.Sink).
//
// TensorBoard tags: train/loss, train/top1, train/lr, train/img_per_s
// every N steps (means over the steps since the previous point); per
// epoch epoch/train_loss, epoch/train_top1, epoch/test_loss,
// epoch/test_top1, epoch/test_top5 (in the epochs that evaluate the test
// set), epoch/test_mistake_severity, epoch/test_hdist1, epoch/test_hdist5,
// epoch/test_hdist20 (those epochs of a run with a hierarchy; no severity
// without a mistake), epoch/val_loss, epoch/val_top1, epoch/val_top5 (with a validation
// split), epoch/ema_test_top1, epoch/ema_val_top1 (with a moving average),
// epoch/best_epoch (model selection's), epoch/lr, epoch/target_entropy,
// epoch/img_per_s and epoch/epoch, at the epoch's last step; other peers'
// figures as epoch/peerK/…; with model selection, once at the end,
// final/test_loss, final/test_top1, final/test_top5 and
// final/selected_epoch (the test of the selected weights); with several
// stages each tag starts with the stage's name. Steps count every
// optimiser step of the run.
package runlog

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/internal/tensorboard"
	"github.com/lcl-project/lcl/trainer"
)

// CSVFile is the per-epoch table beside metrics.jsonl.
const CSVFile = "metrics.csv"

// Log writes a run's TensorBoard events and CSV into Dir. Every is the
// number of optimiser steps between two points of the step scalars (0:
// per epoch only).
type Log struct {
	Dir   string
	Every int

	tb     *tensorboard.Writer
	multi  bool                   // several stages: tags start with the stage name
	epochs []trainer.EpochMetrics // every epoch so far, the rows of the CSV
	// Since the last step point: the examples, their loss and hits.
	last       int64
	n          int64
	loss, hits float64
}

var _ trainer.FinalSink = (*Log)(nil)

// Start implements trainer.MetricsSink: a new event file (TensorBoard
// drops what earlier files logged at or after the step a resumed run
// continues from), and the CSV of the epochs logged before.
func (l *Log) Start(s trainer.SinkStart) error {
	w, err := tensorboard.Create(l.Dir)
	if err != nil {
		return err
	}
	l.tb, l.multi, l.last = w, len(s.Stages) > 1, s.Step
	l.epochs = append([]trainer.EpochMetrics(nil), s.History...)
	if err := w.Start(s.Step); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return l.writeCSV()
}

func (l *Log) tag(stage, name string) string {
	if l.multi {
		return stage + "/" + name
	}
	return name
}

// Step implements trainer.MetricsSink.
func (l *Log) Step(m trainer.StepMetrics) error {
	if l.Every <= 0 {
		return nil
	}
	l.n += m.Examples
	l.loss += m.Loss * float64(m.Examples)
	l.hits += m.Top1 * float64(m.Examples)
	if m.GlobalStep-l.last < int64(l.Every) || l.n == 0 {
		return nil
	}
	err := l.tb.Scalars(m.GlobalStep,
		tensorboard.Scalar{Tag: l.tag(m.Stage, "train/loss"), Value: l.loss / float64(l.n)},
		tensorboard.Scalar{Tag: l.tag(m.Stage, "train/top1"), Value: l.hits / float64(l.n)},
		tensorboard.Scalar{Tag: l.tag(m.Stage, "train/lr"), Value: m.LR},
		tensorboard.Scalar{Tag: l.tag(m.Stage, "train/img_per_s"), Value: m.ImgPerSec})
	l.last, l.n, l.loss, l.hits = m.GlobalStep, 0, 0, 0
	if err != nil {
		return err
	}
	return l.tb.Flush()
}

// figure is one named value of an epoch; ok is false where the epoch has
// none (no test in an epoch of model selection, no validation split).
type figure struct {
	name string
	v    float64
	ok   bool
}

// peerFigures are peer k's figures of em (peer 0's are em's own).
func peerFigures(em trainer.EpochMetrics, k int) []figure {
	p := em.PeerMetrics
	if k > 0 {
		p = em.Peers[k]
	}
	tested := em.Tested()
	f := []figure{{"train_loss", p.TrainLoss, true}, {"train_top1", p.TrainTop1, true},
		{"test_loss", p.TestLoss, tested}, {"test_top1", p.TestTop1, tested}, {"test_top5", p.TestTop5, tested}}
	var hier trainer.HierMetrics
	hasHier := tested && p.TestHier != nil
	if hasHier {
		hier = *p.TestHier
	}
	f = append(f, figure{"test_mistake_severity", hier.MistakeSeverity, hasHier && hier.Mistakes > 0},
		figure{"test_hdist1", hier.HDist1, hasHier}, figure{"test_hdist5", hier.HDist5, hasHier},
		figure{"test_hdist20", hier.HDist20, hasHier})
	var val trainer.HeldOut
	hasVal := k < len(em.Val)
	if hasVal {
		val = em.Val[k]
	}
	f = append(f, figure{"val_loss", val.Loss, hasVal}, figure{"val_top1", val.Top1, hasVal}, figure{"val_top5", val.Top5, hasVal})
	var emaTest, emaVal trainer.HeldOut
	var hasEMATest, hasEMAVal bool
	if k < len(em.EMA) {
		if t := em.EMA[k].Test; t != nil {
			emaTest, hasEMATest = *t, true
		}
		if v := em.EMA[k].Val; v != nil {
			emaVal, hasEMAVal = *v, true
		}
	}
	f = append(f, figure{"ema_test_top1", emaTest.Top1, hasEMATest}, figure{"ema_val_top1", emaVal.Top1, hasEMAVal})
	var best float64
	hasBest := k < len(em.Best)
	if hasBest {
		best = float64(em.Best[k])
	}
	return append(f, figure{"best_epoch", best, hasBest})
}

// Epoch implements trainer.MetricsSink.
func (l *Log) Epoch(em trainer.EpochMetrics) error {
	t := func(name string) string { return l.tag(em.Stage, "epoch/"+name) }
	vals := []tensorboard.Scalar{{Tag: t("lr"), Value: em.LR}, {Tag: t("target_entropy"), Value: em.TargetEntropy},
		{Tag: t("img_per_s"), Value: em.ImgPerSec}, {Tag: t("epoch"), Value: float64(em.Epoch)}}
	for k := 0; k < max(len(em.Peers), 1); k++ {
		peer := ""
		if k > 0 {
			peer = "peer" + strconv.Itoa(k+1) + "/"
		}
		for _, f := range peerFigures(em, k) {
			if f.ok {
				vals = append(vals, tensorboard.Scalar{Tag: t(peer + f.name), Value: f.v})
			}
		}
	}
	if err := l.tb.Scalars(em.GlobalStep, vals...); err != nil {
		return err
	}
	if err := l.tb.Flush(); err != nil {
		return err
	}
	l.epochs = append(l.epochs, em)
	return l.writeCSV()
}

// Final implements trainer.FinalSink: the test figures of the weights
// model selection kept, as final/test_loss, final/test_top1,
// final/test_top5 and final/selected_epoch (further peers as
// final/peerK/…), at the run's last step.
func (l *Log) Final(f trainer.FinalMetrics) error {
	var vals []tensorboard.Scalar
	for k, p := range f.Peers {
		peer := ""
		if k > 0 {
			peer = "peer" + strconv.Itoa(k+1) + "/"
		}
		t := func(name string) string { return l.tag(f.Stage, "final/"+peer+name) }
		vals = append(vals, tensorboard.Scalar{Tag: t("test_loss"), Value: p.TestLoss}, tensorboard.Scalar{Tag: t("test_top1"), Value: p.TestTop1},
			tensorboard.Scalar{Tag: t("test_top5"), Value: p.TestTop5})
		if k < len(f.Epochs) {
			vals = append(vals, tensorboard.Scalar{Tag: t("selected_epoch"), Value: float64(f.Epochs[k])})
		}
	}
	if err := l.tb.Scalars(f.GlobalStep, vals...); err != nil {
		return err
	}
	return l.tb.Flush()
}

// Close implements trainer.MetricsSink.
func (l *Log) Close() error {
	if l.tb == nil {
		return nil
	}
	return l.tb.Close()
}

// writeCSV rewrites metrics.csv from the epochs so far (atomically: a
// crash leaves the old or the new table). Its columns: stage, epoch,
// global_step, lr, target_entropy, img_per_s, seconds, eval_seconds, then
// peer 0's figures (train_loss, train_top1, test_loss, test_top1,
// test_top5, test_mistake_severity, test_hdist1, test_hdist5,
// test_hdist20, val_loss, val_top1, val_top5, ema_test_top1, ema_val_top1,
// best_epoch; empty where an epoch has none), then further peers' as
// peerK_train_loss, ….
func (l *Log) writeCSV() error {
	peers := 1
	for _, em := range l.epochs {
		peers = max(peers, len(em.Peers))
	}
	names := peerFigures(trainer.EpochMetrics{}, 0)
	header := []string{"stage", "epoch", "global_step", "lr", "target_entropy", "img_per_s", "seconds", "eval_seconds"}
	for k := range peers {
		for _, f := range names {
			if k > 0 {
				f.name = "peer" + strconv.Itoa(k+1) + "_" + f.name
			}
			header = append(header, f.name)
		}
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(header)
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, em := range l.epochs {
		row := []string{em.Stage, strconv.Itoa(em.Epoch), strconv.FormatInt(em.GlobalStep, 10), num(em.LR),
			num(em.TargetEntropy), num(em.ImgPerSec), num(em.Seconds), num(em.EvalSeconds)}
		for k := range peers {
			if k > 0 && k >= len(em.Peers) {
				row = append(row, make([]string, len(names))...) // a stage with fewer peers
				continue
			}
			for _, f := range peerFigures(em, k) {
				if f.ok {
					row = append(row, num(f.v))
				} else {
					row = append(row, "")
				}
			}
		}
		w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("runlog: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(l.Dir, CSVFile), buf.Bytes(), 0o644)
}
