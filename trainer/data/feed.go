package data

import (
	"context"
	"fmt"
	"io"

	"github.com/lcl-project/lcl/trainer"
)

// BatchSource is the trainer's BatchSource (trainer.Config.BatchSource,
// trainer.EvaluateOn) over this package's datasets: every pass the trainer asks
// for is a Loader with the trainer's selection of the pass and base's other
// settings (Workers, Prefetch, SkipBad, Warn; base.Pass is ignored). Each batch is released for reuse when the trainer asks for the
// next one, so the trainer must be done with a batch by then (it is: a step
// copies the batch into libtorch).
func BatchSource(base LoaderConfig) trainer.BatchSource {
	return func(ctx context.Context, ds trainer.Examples, pass trainer.Pass) (trainer.Batches, error) {
		d, ok := ds.(Dataset)
		if !ok {
			return nil, fmt.Errorf("data: dataset %T is not a trainer/data set", ds)
		}
		cfg := base
		cfg.Pass = pass
		l, err := NewLoader(ctx, d, cfg)
		if err != nil {
			return nil, err
		}
		return &batches{l: l}, nil
	}
}

// batches is a Loader as trainer.Batches.
type batches struct {
	l    *Loader
	prev *Batch
}

// Next releases the previous batch and returns the next.
func (b *batches) Next() (*trainer.MiniBatch, error) {
	b.prev.Release()
	b.prev = nil
	d, err := b.l.Next()
	if err != nil {
		return nil, err
	}
	b.prev = d
	return &d.MiniBatch, nil
}

var _ io.Closer = (*batches)(nil) // the trainer closes a pass through io.Closer

// Close stops the Loader's workers (the trainer closes every pass, also one
// it leaves early).
func (b *batches) Close() error { return b.l.Close() }
