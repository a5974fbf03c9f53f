package trainer

import (
	"context"
	"errors"
	"fmt"

	"github.com/lcl-project/lcl/trainer/torch"
)

func (r *runner) evaluate(ctx context.Context, m *torch.Model) (PeerMetrics, error) {
	if r.cfg.Group != nil {
		return r.evaluateShards(ctx, m)
	}
	return EvaluateOn(ctx, m, r.cfg.Test, r.cfg.Loader, EvalOptions{Batch: r.cfg.EvalBatch, Device: r.cfg.Device,
		Precision: r.cfg.Precision, ChannelsLast: r.cfg.ChannelsLast})
}

// EvalOptions say how EvaluateOn runs: the batch size, the device the
// model is on, the precision of the forward pass (autocast) and the input
// memory format.
type EvalOptions struct {
	Batch        int
	Device       string
	Precision    torch.Precision
	ChannelsLast bool
}

// EvaluateOn is Evaluate through an Engine on o.Device: batches of a
// PixelDataset travel as bytes and are normalised there, and the forward
// pass runs in o.Precision.
func EvaluateOn(ctx context.Context, m *torch.Model, ds Dataset, loader Loader, o EvalOptions) (PeerMetrics, error) {
	if o.Device == "" {
		o.Device = "cpu"
	}
	eo := torch.EngineOptions{Precision: o.Precision, ChannelsLast: o.ChannelsLast}
	pd, u8 := ds.(PixelDataset)
	if u8 {
		eo.Mean, eo.Std = pd.Normalization()
	}
	eng, err := torch.NewEngine(o.Device, eo)
	if err != nil {
		return PeerMetrics{}, fmt.Errorf("trainer: eval: %w", err)
	}
	defer eng.Close()
	var top1, top5, n int64
	var loss float64
	c, h, w := ds.Shape()
	err = eachBatch(ctx, loader, ds, LoaderConfig{Batch: max(o.Batch, 1), U8: u8}, func(b *Batch) error {
		if err := eng.Put(torch.Input{N: b.N, C: c, H: h, W: w, X: b.X, X8: b.X8, Y: b.Y}); err != nil {
			return fmt.Errorf("trainer: eval: %w", err)
		}
		ev, err := eng.Eval(m, false, false)
		if err != nil {
			return fmt.Errorf("trainer: eval: %w", err)
		}
		top1, top5, loss, n = top1+ev.Top1, top5+ev.Top5, loss+ev.LossSum, n+int64(b.N)
		return nil
	})
	if err != nil {
		return PeerMetrics{}, err
	}
	if n == 0 {
		return PeerMetrics{}, errors.New("trainer: empty test set")
	}
	return PeerMetrics{TestTop1: float64(top1) / float64(n), TestTop5: float64(top5) / float64(n), TestLoss: loss / float64(n)}, nil
}
