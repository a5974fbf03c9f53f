package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lcl-project/lcl/trainer/torch"
)

// What the planner and the epochs read of the data: the plan's context,
// a finished stage's features and the passes over a data set.

// planContext is what the planner is told at step step of the epoch at p
// (with the class probabilities of the epoch before, when the stage asks).
func (r *runner) planContext(p position, step int) PlanContext {
	s, e := p.Stage, p.Epoch
	var classes []string
	if c, ok := r.cfg.Train.(interface{ Classes() []string }); ok {
		classes = c.Classes()
	}
	pc := PlanContext{Classes: classes,
		Stage: r.stages[s], StageIndex: s, Epoch: e, Epochs: r.stages[s].Epochs,
		Step: step, Steps: (len(r.cfg.TrainIndices) + r.cfg.Optim.Batch - 1) / r.cfg.Optim.Batch,
		NumClasses: r.cfg.Train.NumClasses(), Train: r.cfg.TrainIndices, Label: r.cfg.Train.Label,
		Features: r.features,
	}
	if c := p.PrevClass; r.stages[s].ClassProbs && c != nil && c.Sums != nil {
		pc.ClassProbSums, pc.ClassCounts = c.Sums, c.Counts
	}
	return pc
}

// maxClassProbClasses bounds the classes of a run whose strategy asks for
// class probabilities: they travel in checkpoints and plan requests as C×C
// float64 values (128 MiB at 4,096 classes).
const maxClassProbClasses = 4096

// classProbsSupported refuses what class probabilities cannot do yet.
func (r *runner) classProbsSupported() error {
	if r.cfg.Group != nil {
		return errors.New("the strategy needs class probabilities, which are not gathered over the ranks of --nproc yet: train it in one process")
	}
	if c := r.cfg.Train.NumClasses(); c > maxClassProbClasses {
		return fmt.Errorf("the strategy needs class probabilities, kept for at most %d classes, not %d", maxClassProbClasses, c)
	}
	return nil
}

// features returns the penultimate features of a finished stage's model,
// computed as its evaluations are: through an engine in the run's
// precision and memory format.
func (r *runner) features(ctx context.Context, stage string, indices []int) ([][]float32, error) {
	m, ok := r.finished[stage]
	if !ok {
		return nil, fmt.Errorf("trainer: features of stage %q: no such finished stage", stage)
	}
	eng, u8, err := evalEngine(r.cfg.Train, EvalOptions{Device: r.cfg.Device, Precision: r.cfg.Precision,
		ChannelsLast: r.cfg.ChannelsLast})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	pos := make(map[int]int, len(indices))
	for k, i := range indices {
		pos[i] = k
	}
	out := make([][]float32, len(indices))
	c, h, w := r.cfg.Train.Shape()
	err = r.each(ctx, r.cfg.Train, Pass{Indices: indices, Batch: r.cfg.EvalBatch, U8: u8}, func(b *MiniBatch) error {
		if b.N == 0 {
			return nil
		}
		if err := eng.Put(torch.Input{N: b.N, C: c, H: h, W: w, X: b.X, X8: b.X8}); err != nil {
			return fmt.Errorf("trainer: features: %w", err)
		}
		ev, err := eng.Eval(m, false, true)
		if err != nil {
			return fmt.Errorf("trainer: features: %w", err)
		}
		d := m.FeatureDim()
		for k, i := range b.Index {
			out[pos[i]] = ev.Features[k*d : (k+1)*d]
		}
		return nil
	})
	return out, err
}

// each runs fn over one pass of ds.
func (r *runner) each(ctx context.Context, ds Examples, lc Pass, fn func(*MiniBatch) error) error {
	return eachBatch(ctx, r.cfg.BatchSource, ds, lc, fn)
}

// eachBatch runs fn over one pass of ds through loader.
func eachBatch(ctx context.Context, loader BatchSource, ds Examples, lc Pass, fn func(*MiniBatch) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	it, err := loader(ctx, ds, lc)
	if err != nil {
		return fmt.Errorf("trainer: loader: %w", err)
	}
	if c, ok := it.(io.Closer); ok {
		defer c.Close()
	}
	for {
		b, err := it.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("trainer: loader: %w", err)
		}
		if err := fn(b); err != nil {
			return err
		}
	}
}
