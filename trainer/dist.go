package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lcl-project/lcl/trainer/safetensors"
	"github.com/lcl-project/lcl/trainer/torch"
)

// syncPeers starts every rank from rank 0's models and optimizer state
// (fresh or restored from a checkpoint).
func (r *runner) syncPeers(ps *peerSet) error {
	g := r.cfg.Group
	if g == nil {
		return nil
	}
	for k := range ps.models {
		if err := g.BroadcastModel(ps.models[k], false); err != nil {
			return fmt.Errorf("trainer: %w", err)
		}
		if err := g.BroadcastOptimizer(ps.optims[k]); err != nil {
			return fmt.Errorf("trainer: %w", err)
		}
	}
	return nil
}

// plan returns the epoch's plan: the planner's own without a Group; with
// one, rank 0's, broadcast to the others (so a strategy runs once, and
// non-deterministic or stateful strategies still give every rank the same
// plan).
func (r *runner) plan(ctx context.Context, p position, step int) (Plan, error) {
	g := r.cfg.Group
	if g == nil {
		return r.cfg.Planner.Plan(ctx, r.planContext(p, step))
	}
	type wire struct {
		Plan Plan
		Err  string
	}
	var msg []byte
	if g.Rank() == 0 {
		p, err := r.cfg.Planner.Plan(ctx, r.planContext(p, step))
		w := wire{Plan: p}
		if err != nil {
			w.Err = err.Error()
		}
		if msg, err = json.Marshal(w); err != nil {
			return Plan{}, fmt.Errorf("plan broadcast: %w", err)
		}
		if _, berr := g.Broadcast(msg); berr != nil {
			return Plan{}, fmt.Errorf("plan broadcast: %w", berr)
		}
		if w.Err != "" {
			return Plan{}, errors.New(w.Err)
		}
		return p, nil
	}
	msg, err := g.Broadcast(nil)
	if err != nil {
		return Plan{}, fmt.Errorf("plan broadcast: %w", err)
	}
	var w wire
	if err := json.Unmarshal(msg, &w); err != nil {
		return Plan{}, fmt.Errorf("plan broadcast: %w", err)
	}
	if w.Err != "" {
		return Plan{}, fmt.Errorf("on rank 0: %s", w.Err)
	}
	return w.Plan, nil
}

// readCheckpoint reads the checkpoint file; with a Group rank 0 reads it
// and broadcasts its bytes (or its error), so the other ranks need no
// access to the run directory.
func (r *runner) readCheckpoint(path string) ([]byte, error) {
	g := r.cfg.Group
	if g == nil {
		return safetensors.ReadFile(path)
	}
	var msg []byte
	if g.Rank() == 0 {
		b, err := safetensors.ReadFile(path)
		if err != nil {
			msg = append([]byte{0}, err.Error()...)
		} else {
			msg = append([]byte{1}, b...)
		}
	}
	msg, err := g.Broadcast(msg)
	if err != nil {
		return nil, err
	}
	if len(msg) == 0 || msg[0] == 0 {
		if len(msg) == 0 {
			return nil, errors.New("empty checkpoint broadcast")
		}
		return nil, fmt.Errorf("on rank 0: %s", msg[1:])
	}
	return msg[1:], nil
}

// globalBatch is the size of global batch i of a pass over n examples in
// batches of bs: with a Group the sum of the ranks' slices, without one the
// batch's own size.
func globalBatch(n, bs, i, local int, g *torch.Group) int {
	if g == nil {
		return local
	}
	return min(bs, n-i*bs)
}
