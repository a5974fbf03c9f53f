package trainer

import (
	"context"
	"fmt"

	"github.com/lcl-project/lcl/trainer/torch"
)

// EvalOptions say how EvaluateOn runs: the batch size, the device the
// model is on, the precision of the forward pass (autocast) and the input
// memory format. With a Hierarchy the figures include the hierarchical
// metrics; with a Cost too (the C×C matrix of its Distance) those of
// conditional risk minimisation's predictions (PeerMetrics.TestCRM).
type EvalOptions struct {
	Batch        int
	Device       string
	Precision    torch.Precision
	ChannelsLast bool
	Hierarchy    Hierarchy
	Cost         []float32
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

// evalSums are the sums of an evaluation, all added over batches and
// ranks: top-1 and top-5 hits, the cross-entropy, the examples; with a
// hierarchy the hierarchical sums of the argmax, and with a cost matrix
// conditional risk minimisation's top-1 hits and hierarchical sums.
type evalSums [4 + 1 + 2*len(hierSums{})]float64

// The parts of evalSums past the first four.
const (
	sumHier = 4
	sumCRM  = sumHier + len(hierSums{}) // top-1 hits, then the hierarchical sums
)

func (s *evalSums) hier(at int) *hierSums { return (*hierSums)(s[at : at+len(hierSums{})]) }

// metrics turns the sums into the test figures of PeerMetrics: with
// hierarchical metrics (hier), and those of conditional risk minimisation
// (crm).
func (s evalSums) metrics(set string, hier, crm bool) (PeerMetrics, error) {
	if s[3] == 0 {
		return PeerMetrics{}, fmt.Errorf("trainer: empty %s set", set)
	}
	pm := PeerMetrics{TestTop1: s[0] / s[3], TestTop5: s[1] / s[3], TestLoss: s[2] / s[3]}
	if hier {
		pm.TestHier = s.hier(sumHier).metrics(s[3])
	}
	if crm {
		pm.TestCRM = &CRMMetrics{Top1: s[sumCRM] / s[3], HierMetrics: *s.hier(sumCRM + 1).metrics(s[3])}
	}
	return pm, nil
}

// evalPass evaluates m through eng on the batches of one pass of ds as lc
// selects them (a data-parallel rank's slices among them, possibly empty).
// With h it asks the engine for every example's best classes (hierTopK:
// n×20 indices travel back, not the logits) and adds their hierarchical
// sums, and with cost (on eng's device) those of the classes of least
// risk.
func evalPass(ctx context.Context, eng *torch.Engine, m *torch.Model, ds Examples, loader BatchSource, lc Pass, h Hierarchy, cost *torch.Tensor) (evalSums, error) {
	var s evalSums
	c, hh, w := ds.Shape()
	var q torch.EvalRequest
	if h != nil {
		q.TopK, q.Cost = hierTopK(ds.NumClasses()), cost
	}
	err := eachBatch(ctx, loader, ds, lc, func(b *MiniBatch) error {
		if b.N == 0 {
			return nil
		}
		if err := eng.Put(torch.Input{N: b.N, C: c, H: hh, W: w, X: b.X, X8: b.X8, Y: b.Y}); err != nil {
			return fmt.Errorf("trainer: eval: %w", err)
		}
		ev, err := eng.EvalWith(m, q)
		if err != nil {
			return fmt.Errorf("trainer: eval: %w", err)
		}
		s[0] += float64(ev.Top1)
		s[1] += float64(ev.Top5)
		s[2] += ev.LossSum
		s[3] += float64(b.N)
		if h != nil {
			s.hier(sumHier).add(h, b.Y, ev.TopK, q.TopK)
		}
		if ev.RiskTopK != nil {
			for e, y := range b.Y {
				if int64(ev.RiskTopK[e*q.TopK]) == y {
					s[sumCRM]++
				}
			}
			s.hier(sumCRM+1).add(h, b.Y, ev.RiskTopK, q.TopK)
		}
		return nil
	})
	return s, err
}

// EvaluateOn is Evaluate through an Engine on o.Device: batches of a
// PixelExamples travel as bytes and are normalised there, and the forward
// pass runs in o.Precision.
func EvaluateOn(ctx context.Context, m *torch.Model, ds Examples, loader BatchSource, o EvalOptions) (PeerMetrics, error) {
	if o.Cost != nil && o.Hierarchy == nil {
		return PeerMetrics{}, fmt.Errorf("trainer: eval: a cost matrix without a hierarchy")
	}
	c := ds.NumClasses()
	if o.Cost != nil && len(o.Cost) != c*c {
		return PeerMetrics{}, fmt.Errorf("trainer: eval: the cost matrix has %d values, want %d×%d", len(o.Cost), c, c)
	}
	eng, u8, err := evalEngine(ds, o)
	if err != nil {
		return PeerMetrics{}, err
	}
	defer eng.Close()
	var cost *torch.Tensor
	if o.Cost != nil {
		dev := o.Device
		if dev == "" {
			dev = "cpu"
		}
		if cost, err = torch.NewTensor(o.Cost, []int64{int64(c), int64(c)}, dev); err != nil {
			return PeerMetrics{}, fmt.Errorf("trainer: eval: cost matrix: %w", err)
		}
		defer cost.Close()
	}
	s, err := evalPass(ctx, eng, m, ds, loader, Pass{Batch: max(o.Batch, 1), U8: u8}, o.Hierarchy, cost)
	if err != nil {
		return PeerMetrics{}, err
	}
	return s.metrics("test", o.Hierarchy != nil, cost != nil)
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
	s, err := evalPass(ctx, set.eng, m, set.ds, r.cfg.BatchSource, lc, r.cfg.Hierarchy, nil)
	if err != nil {
		return PeerMetrics{}, err
	}
	if g != nil {
		if err := g.AllReduce(s[:]); err != nil {
			return PeerMetrics{}, fmt.Errorf("trainer: eval: %w", err)
		}
	}
	return s.metrics(set.name, r.cfg.Hierarchy != nil, false)
}
