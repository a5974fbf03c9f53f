package trainer

import "fmt"

// MetricsSink receives the figures a run logs besides metrics.jsonl (the
// run's TensorBoard event files and CSV, package trainer/runlog, are one).
// Only the process that writes the run directory calls it, from the
// training goroutine: Start before the first step, Step after every read
// of the training figures (Config.MetricsEvery), Epoch after each epoch's
// line of metrics.jsonl, Close at the end. An error stops the run, as one
// writing metrics.jsonl does.
type MetricsSink interface {
	Start(SinkStart) error
	Step(StepMetrics) error
	Epoch(EpochMetrics) error
	Close() error
}

// FinalSink is a MetricsSink that also records the test figures of the
// weights model selection kept (a run with a validation split evaluates
// the test set once, after its last epoch: no epoch carries them).
type FinalSink interface {
	MetricsSink
	Final(FinalMetrics) error
}

// FinalMetrics are the test figures of the selected weights, per peer, and
// the epochs they are of, at the run's last optimiser step.
type FinalMetrics struct {
	Stage      string
	GlobalStep int64
	Peers      []PeerMetrics
	Epochs     []int // the selected epoch, per peer
}

// SinkStart is what a sink is told before the first step.
type SinkStart struct {
	Stages []string // the run's stage names, in order
	// History are the epochs logged before: a resumed run's, which its
	// metrics.jsonl keeps (nil for a new run).
	History []EpochMetrics
	// Step is the optimiser step the run continues from, counted over
	// every stage (0 for a new run): what was logged at later steps
	// before is lost with the work after the checkpoint.
	Step int64
}

// StepMetrics are the training figures of the steps since the previous
// read.
type StepMetrics struct {
	Stage      string
	StageIndex int
	Epoch      int   // 1-based
	Step       int   // optimiser steps done in the epoch
	GlobalStep int64 // optimiser steps done in the run, every stage
	LR         float64
	// Loss and Top1 are peer 0's mean training loss and accuracy over the
	// Examples (of this process) of the steps since the previous read.
	Loss, Top1 float64
	Examples   int64
	ImgPerSec  float64 // training images per second of the epoch so far
}

// sink is the run's sink when this process writes the run directory.
func (r *runner) sink() MetricsSink {
	if r.cfg.Sink == nil || !r.writer() {
		return nil
	}
	return r.cfg.Sink
}

// stepsBefore is the optimiser steps of the epochs logged so far.
func (r *runner) stepsBefore() int64 {
	var n int64
	for _, em := range r.history {
		n += int64(em.Steps)
	}
	return n
}

// startSink tells the sink where the run starts (pos: a resumed run's
// position in its epoch).
func (r *runner) startSink(pos position) error {
	s := r.sink()
	if s == nil {
		return nil
	}
	names := make([]string, len(r.stages))
	for i, st := range r.stages {
		names[i] = st.Name
	}
	if err := s.Start(SinkStart{Stages: names, History: r.history, Step: r.stepsBefore() + int64(pos.Step)}); err != nil {
		return fmt.Errorf("trainer: metrics: %w", err)
	}
	return nil
}
