package trainer

import (
	"context"
	"fmt"

	"github.com/lcl-project/lcl/trainer/torch"
)

// EvalOptions say how EvaluateOn runs: the batch size, the device the
// model is on, the precision of the forward pass (autocast) and the input
// memory format.
type EvalOptions struct {
	Batch        int
	Device       string
	Precision    torch.Precision
	ChannelsLast bool
}

// evalEngine creates the engine that evaluates on ds: batches of a
// PixelExamples travel as bytes (u8) and are normalised on the device, and
// the forward passes run in o.Precision and o.ChannelsLast.
func evalEngine(ds Examples, o EvalOptions) (eng *torch.Engine, u8 bool, err error) {
	if o.Device == "" {
		o.Device = "cpu"
	}
	eo := torch.EngineOptions{Precision: o.Precision, ChannelsLast: o.ChannelsLast}
	pd, u8 := ds.(PixelExamples)
	if u8 {
		eo.Mean, eo.Std = pd.Normalization()
	}
	eng, err = torch.NewEngine(o.Device, eo)
	if err != nil {
		return nil, false, fmt.Errorf("trainer: eval: %w", err)
	}
	return eng, u8, nil
}

// evalSums are the sums of an evaluation: top-1 and top-5 hits, the
// cross-entropy, the examples.
type evalSums [4]float64

// metrics turns the sums into the test figures of PeerMetrics.
func (s evalSums) metrics(set string) (PeerMetrics, error) {
	if s[3] == 0 {
		return PeerMetrics{}, fmt.Errorf("trainer: empty %s set", set)
	}
	return PeerMetrics{TestTop1: s[0] / s[3], TestTop5: s[1] / s[3], TestLoss: s[2] / s[3]}, nil
}

// evalPass evaluates m through eng on the batches of one pass of ds as lc
// selects them (a data-parallel rank's slices among them, possibly empty).
func evalPass(ctx context.Context, eng *torch.Engine, m *torch.Model, ds Examples, loader BatchSource, lc Pass) (evalSums, error) {
	var s evalSums
	c, h, w := ds.Shape()
	err := eachBatch(ctx, loader, ds, lc, func(b *MiniBatch) error {
		if b.N == 0 {
			return nil
		}
		if err := eng.Put(torch.Input{N: b.N, C: c, H: h, W: w, X: b.X, X8: b.X8, Y: b.Y}); err != nil {
			return fmt.Errorf("trainer: eval: %w", err)
		}
		ev, err := eng.Eval(m, false, false)
		if err != nil {
			return fmt.Errorf("trainer: eval: %w", err)
		}
		s[0] += float64(ev.Top1)
		s[1] += float64(ev.Top5)
		s[2] += ev.LossSum
		s[3] += float64(b.N)
		return nil
	})
	return s, err
}

// EvaluateOn is Evaluate through an Engine on o.Device: batches of a
// PixelExamples travel as bytes and are normalised there, and the forward
// pass runs in o.Precision.
func EvaluateOn(ctx context.Context, m *torch.Model, ds Examples, loader BatchSource, o EvalOptions) (PeerMetrics, error) {
	eng, u8, err := evalEngine(ds, o)
	if err != nil {
		return PeerMetrics{}, err
	}
	defer eng.Close()
	s, err := evalPass(ctx, eng, m, ds, loader, Pass{Batch: max(o.Batch, 1), U8: u8})
	if err != nil {
		return PeerMetrics{}, err
	}
	return s.metrics("test")
}

// evalSet is a set the run evaluates its models on: the test set, or the
// validation split of the training set (indices).
type evalSet struct {
	name    string
	ds      Examples
	indices []int // nil: every example of ds
	eng     *torch.Engine
	u8      bool
}

func (s *evalSet) close() {
	if s != nil {
		s.eng.Close()
	}
}

// evaluate evaluates m on set through the engine of the set (created at
// first use), in the run's precision and memory format. With a Group every
// rank takes a slice of each evaluation batch, after taking rank 0's
// buffers (batch-norm statistics, which the ranks updated from their own
// slices), and the sums are added over the ranks: the figures are those of
// one process.
func (r *runner) evaluate(ctx context.Context, m *torch.Model, set *evalSet) (PeerMetrics, error) {
	if set.eng == nil {
		var err error
		set.eng, set.u8, err = evalEngine(set.ds, EvalOptions{Device: r.cfg.Device, Precision: r.cfg.Precision,
			ChannelsLast: r.cfg.ChannelsLast})
		if err != nil {
			return PeerMetrics{}, err
		}
	}
	lc := Pass{Indices: set.indices, Batch: r.cfg.EvalBatch, U8: set.u8}
	g := r.cfg.Group
	if g != nil {
		if err := g.BroadcastModel(m, true); err != nil {
			return PeerMetrics{}, fmt.Errorf("trainer: %w", err)
		}
		lc.Shard, lc.Shards = g.Rank(), g.Size()
	}
	s, err := evalPass(ctx, set.eng, m, set.ds, r.cfg.BatchSource, lc)
	if err != nil {
		return PeerMetrics{}, err
	}
	if g != nil {
		if err := g.AllReduce(s[:]); err != nil {
			return PeerMetrics{}, fmt.Errorf("trainer: eval: %w", err)
		}
	}
	return s.metrics(set.name)
}
