// Package runlog writes what a training run logs besides metrics.jsonl,
// in its run directory: TensorBoard event files (scalars per epoch and
// every N optimiser steps) and metrics.csv (one row per epoch). A Log is
// the trainer's MetricsSink (trainer.Config.Sink).
//
// TensorBoard tags: train/loss, train/top1, train/lr, train/img_per_s
// every N steps (means over the steps since the previous point); per
// epoch epoch/train_loss, epoch/train_top1, epoch/test_loss,
// epoch/test_top1, epoch/test_top5, epoch/lr, epoch/target_entropy,
// epoch/img_per_s and epoch/epoch, at the epoch's last step; other peers'
// figures as epoch/peerK/…; with several stages each tag starts with the
// stage's name. Steps count every optimiser step of the run.
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

var _ trainer.MetricsSink = (*Log)(nil)

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

// Epoch implements trainer.MetricsSink.
func (l *Log) Epoch(em trainer.EpochMetrics) error {
	t := func(name string) string { return l.tag(em.Stage, "epoch/"+name) }
	vals := []tensorboard.Scalar{
		{Tag: t("train_loss"), Value: em.TrainLoss}, {Tag: t("train_top1"), Value: em.TrainTop1},
		{Tag: t("test_loss"), Value: em.TestLoss}, {Tag: t("test_top1"), Value: em.TestTop1}, {Tag: t("test_top5"), Value: em.TestTop5},
		{Tag: t("lr"), Value: em.LR}, {Tag: t("target_entropy"), Value: em.TargetEntropy},
		{Tag: t("img_per_s"), Value: em.ImgPerSec}, {Tag: t("epoch"), Value: float64(em.Epoch)},
	}
	for k := 1; k < len(em.Peers); k++ {
		p, peer := em.Peers[k], "peer"+strconv.Itoa(k+1)+"/"
		vals = append(vals, tensorboard.Scalar{Tag: t(peer + "train_loss"), Value: p.TrainLoss},
			tensorboard.Scalar{Tag: t(peer + "train_top1"), Value: p.TrainTop1}, tensorboard.Scalar{Tag: t(peer + "test_loss"), Value: p.TestLoss},
			tensorboard.Scalar{Tag: t(peer + "test_top1"), Value: p.TestTop1}, tensorboard.Scalar{Tag: t(peer + "test_top5"), Value: p.TestTop5})
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

// Close implements trainer.MetricsSink.
func (l *Log) Close() error {
	if l.tb == nil {
		return nil
	}
	return l.tb.Close()
}

// csvColumns are the CSV's columns of peer 0; further peers add theirs
// as peerK_train_loss, ….
var csvColumns = []string{"stage", "epoch", "global_step", "lr", "train_loss", "train_top1", "test_loss", "test_top1", "test_top5",
	"target_entropy", "img_per_s", "seconds", "eval_seconds"}

var peerColumns = []string{"train_loss", "train_top1", "test_loss", "test_top1", "test_top5"}

// writeCSV rewrites metrics.csv from the epochs so far (atomically: a
// crash leaves the old or the new table).
func (l *Log) writeCSV() error {
	peers := 1
	for _, em := range l.epochs {
		peers = max(peers, len(em.Peers))
	}
	header := append([]string(nil), csvColumns...)
	for k := 2; k <= peers; k++ {
		for _, c := range peerColumns {
			header = append(header, "peer"+strconv.Itoa(k)+"_"+c)
		}
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(header)
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, em := range l.epochs {
		row := []string{em.Stage, strconv.Itoa(em.Epoch), strconv.FormatInt(em.GlobalStep, 10), num(em.LR),
			num(em.TrainLoss), num(em.TrainTop1), num(em.TestLoss), num(em.TestTop1), num(em.TestTop5),
			num(em.TargetEntropy), num(em.ImgPerSec), num(em.Seconds), num(em.EvalSeconds)}
		for k := 1; k < peers; k++ {
			if k >= len(em.Peers) {
				row = append(row, "", "", "", "", "")
				continue
			}
			p := em.Peers[k]
			row = append(row, num(p.TrainLoss), num(p.TrainTop1), num(p.TestLoss), num(p.TestTop1), num(p.TestTop5))
		}
		w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("runlog: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(l.Dir, CSVFile), buf.Bytes(), 0o644)
}
