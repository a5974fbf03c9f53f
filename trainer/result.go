package trainer

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"github.com/lcl-project/lcl/trainer/torch"
)

// The run's result: result.json and the final weights.

// writer reports whether this process writes the run directory: always
// without a Group, only rank 0 with one.
func (r *runner) writer() bool { return r.cfg.Group == nil || r.cfg.Group.Rank() == 0 }

// weightsID is the identity the final weights files record: the run's,
// with the last stage's own architecture when it has one (haframe's
// frame-model), which lcl.model must name for lcl eval to rebuild it.
func (r *runner) weightsID() map[string]string {
	m := r.stages[len(r.stages)-1].Model
	if m == "" || m == r.cfg.Model {
		return r.id
	}
	id := maps.Clone(r.id)
	id["model"] = m
	return id
}

// finish gathers the run's Result and, on the process that writes Out,
// writes the final weights and result.json.
func (r *runner) finish(peers *peerSet) (*Result, error) {
	user, sys := processCPU()
	res := &Result{Strategy: r.cfg.Strategy, Model: r.cfg.Model, Seed: r.cfg.Seed, Precision: r.cfg.Precision.String(), Augment: r.cfg.Augment, Mix: r.cfg.Mix.String(), Epochs: r.history,
		Seconds: time.Since(r.start).Seconds(), UserSeconds: (user - r.user0).Seconds(), SystemSeconds: (sys - r.sys0).Seconds()}
	if n := len(r.history); n > 0 {
		last := r.history[n-1]
		res.Final = last.Peers
		if res.Final == nil {
			res.Final = []PeerMetrics{last.PeerMetrics}
		}
		res.Top1, res.Top5 = last.Top1, last.Top5
		if r.final == nil {
			for _, e := range last.EMA {
				if e.Test != nil {
					res.EMA = append(res.EMA, *e.Test)
				}
			}
		}
	}
	if r.final != nil {
		res.Final, res.Top1, res.Top5 = r.final, nil, nil
		for _, pm := range r.final {
			res.Top1, res.Top5 = append(res.Top1, pm.TestTop1), append(res.Top5, pm.TestTop5)
		}
		res.Selection = r.selection()
	}
	for _, pm := range res.Final {
		if h := pm.TestHier; h != nil {
			res.MistakeSeverity, res.HDist1 = append(res.MistakeSeverity, h.MistakeSeverity), append(res.HDist1, h.HDist1)
			res.HDist5, res.HDist20 = append(res.HDist5, h.HDist5), append(res.HDist20, h.HDist20)
			byHeight := h.MistakesByHeight
			if byHeight == nil {
				byHeight = []int64{} // no mistakes: [], not null
			}
			res.Mistakes, res.MistakesByHeight = append(res.Mistakes, h.Mistakes), append(res.MistakesByHeight, byHeight)
		}
	}
	if r.cfg.Out == "" || !r.writer() {
		return res, nil
	}
	for k, m := range peers.models {
		path, err := r.writeFinalWeights("", k, m.State(), r.weightsID())
		if err != nil {
			return nil, err
		}
		if k == 0 {
			res.Weights = path
		}
	}
	for k, m := range peers.emas {
		if _, err := r.writeFinalWeights("-ema", k, m.State(), r.weightsID()); err != nil {
			return nil, err
		}
	}
	if r.final != nil {
		for k, b := range r.sel.best {
			id := maps.Clone(r.weightsID())
			id["selected"] = fmt.Sprintf("epoch=%d %s=%g ema=%t", b.Epoch, r.sel.name(), b.Value, r.sel.ema)
			path, err := r.writeFinalWeights("-best", k, namedState(b.state), id)
			if err != nil {
				return nil, err
			}
			if k == 0 {
				res.Weights = path
			}
		}
	}
	if !r.cfg.NoCheckpoint {
		res.Checkpoint = filepath.Join(r.cfg.Out, checkpointName)
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(r.cfg.Out, "result.json"), append(b, '\n')); err != nil {
		return nil, err
	}
	return res, nil
}

// writeFinalWeights writes model<kind>.safetensors (model<kind>-peer<k>
// for further peers) of state s, without level heads, and returns its path.
func (r *runner) writeFinalWeights(kind string, k int, s stateReader, id map[string]string) (string, error) {
	name := "model" + kind
	if k > 0 {
		name += fmt.Sprintf("-peer%d", k)
	}
	path := filepath.Join(r.cfg.Out, name+".safetensors")
	plain, err := dropLevelHeads(s)
	if err != nil {
		return "", fmt.Errorf("trainer: weights: %w", err)
	}
	return path, writeWeights(path, plain, id)
}

// withoutLevelHeads reads a model's state without its level heads (HAF's,
// torch.LevelHeadsPrefix; dropLevelHeads makes one): they only train, so
// the final weights hold the plain model that lcl eval and --init rebuild
// from lcl.model. The checkpoint keeps them.
type withoutLevelHeads struct {
	s   stateReader
	ns  []torch.Named
	idx []int // idx[i]: the state's index of the i-th tensor kept
}

func dropLevelHeads(s stateReader) (*withoutLevelHeads, error) {
	ns, err := s.Info()
	if err != nil {
		return nil, err
	}
	w := &withoutLevelHeads{s: s}
	for j, n := range ns {
		if !strings.HasPrefix(n.Name, torch.LevelHeadsPrefix) {
			w.ns, w.idx = append(w.ns, n), append(w.idx, j)
		}
	}
	return w, nil
}

func (w *withoutLevelHeads) Info() ([]torch.Named, error) { return w.ns, nil }
func (w *withoutLevelHeads) Read(i int, dst []byte) error { return w.s.Read(w.idx[i], dst) }
