package trainer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/lcl-project/lcl/trainer/torch"
)

// selectMetrics are the validation figures model selection can go by, and
// whether a larger value is better.
var selectMetrics = map[string]bool{"top1": true, "top5": true, "loss": false}

// splitVal holds out round(fraction·n) of each class's n examples of train
// (at most n−1, so every class keeps one to train on), drawn with a seeded
// shuffle: the validation split of Config.ValFraction. Both parts keep
// train's order.
func splitVal(ds Examples, train []int, fraction float64, seed int64) (rest, val []int, err error) {
	byClass := map[int][]int{}
	var classes []int
	for _, i := range train {
		y := ds.Label(i)
		if _, ok := byClass[y]; !ok {
			classes = append(classes, y)
		}
		byClass[y] = append(byClass[y], i)
	}
	slices.Sort(classes)
	held := map[int]bool{}
	r := rand.New(rand.NewPCG(mix(seed, 5), 0))
	for _, y := range classes {
		ex := slices.Clone(byClass[y])
		k := min(int(fraction*float64(len(ex))+0.5), len(ex)-1)
		r.Shuffle(len(ex), func(a, b int) { ex[a], ex[b] = ex[b], ex[a] })
		for _, i := range ex[:max(k, 0)] {
			held[i] = true
		}
	}
	for _, i := range train {
		if held[i] {
			val = append(val, i)
		} else {
			rest = append(rest, i)
		}
	}
	if len(val) == 0 {
		return nil, nil, fmt.Errorf("trainer: a validation fraction of %v holds out no example of a training set of %d (%d classes)",
			fraction, len(train), len(classes))
	}
	return rest, val, nil
}

// selector is the model selection of the last stage on the validation
// split: per peer, the weights of the epoch with the best value of metric
// (those of the moving average with ema), and early stopping after
// patience epochs without a better one.
type selector struct {
	metric   string
	ema      bool
	patience int
	best     []best // per peer
	// stopped is the epoch (1-based) after which early stopping ended the
	// stage; 0 while it runs.
	stopped int
}

// best is a peer's best epoch so far: its number (1-based; 0 before the
// first), its value, and its weights (a host copy; nil when Epoch is 0).
type best struct {
	Epoch int     `json:"epoch"`
	Value float64 `json:"value"`
	state []torch.Named
}

// name is the metric as Selection and the checkpoint name it.
func (s *selector) name() string { return "val_" + s.metric }

func (s *selector) value(h HeldOut) float64 {
	switch s.metric {
	case "top5":
		return h.Top5
	case "loss":
		return h.Loss
	}
	return h.Top1
}

// observe compares the epoch's validation figures with the best so far and
// keeps the weights of the peers that improved; em.Best records the best
// epochs.
func (s *selector) observe(em *EpochMetrics, peers *peerSet) error {
	if len(s.best) != len(peers.models) {
		s.best = make([]best, len(peers.models))
	}
	higher := selectMetrics[s.metric]
	for k := range peers.models {
		m, h := peers.models[k], em.Val[k]
		if s.ema {
			m, h = peers.emas[k], *em.EMA[k].Val
		}
		v, b := s.value(h), &s.best[k]
		if b.Epoch == 0 || (higher && v > b.Value) || (!higher && v < b.Value) {
			st, err := m.State().Copy()
			if err != nil {
				return fmt.Errorf("trainer: selection: %w", err)
			}
			*b = best{Epoch: em.Epoch, Value: v, state: st}
		}
		em.Best = append(em.Best, b.Epoch)
	}
	return nil
}

// stop reports whether no peer improved in the patience epochs up to
// epoch (1-based).
func (s *selector) stop(epoch int) bool {
	if s.patience <= 0 || len(s.best) == 0 {
		return false
	}
	for _, b := range s.best {
		if epoch-b.Epoch < s.patience {
			return false
		}
	}
	return true
}

// testSelected evaluates every peer's selected weights on the test set;
// the training figures are those of its selected epoch.
func (r *runner) testSelected(ctx context.Context, stage int) ([]PeerMetrics, error) {
	out := make([]PeerMetrics, len(r.sel.best))
	for k, b := range r.sel.best {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := r.modelWith(stage, k, b.state)
		if err != nil {
			return nil, err
		}
		pm, err := r.evaluate(ctx, m, r.test)
		m.Close()
		if err != nil {
			return nil, err
		}
		for _, em := range r.history {
			if em.StageIndex == stage && em.Epoch == b.Epoch {
				train := em.PeerMetrics
				if k < len(em.Peers) {
					train = em.Peers[k]
				}
				pm.TrainLoss, pm.TrainTop1 = train.TrainLoss, train.TrainTop1
			}
		}
		out[k] = pm
	}
	return out, nil
}

// selection is the Result's account of the selection.
func (r *runner) selection() *Selection {
	s := r.sel
	out := &Selection{Metric: s.name(), EMA: s.ema, StoppedAt: s.stopped, ValFraction: r.cfg.ValFraction,
		ValExamples: len(r.val.indices), TestedEveryEpoch: r.cfg.TestEveryEpoch}
	for _, b := range s.best {
		out.Epochs, out.Values = append(out.Epochs, b.Epoch), append(out.Values, b.Value)
	}
	return out
}

// namedState is a state held in memory (a best epoch's weights), read like
// a model's.
type namedState []torch.Named

func (n namedState) Info() ([]torch.Named, error) { return n, nil }
func (n namedState) Read(i int, dst []byte) error {
	if len(dst) != len(n[i].Data) {
		return fmt.Errorf("state %q: %d bytes for a buffer of %d", n[i].Name, len(n[i].Data), len(dst))
	}
	copy(dst, n[i].Data)
	return nil
}
