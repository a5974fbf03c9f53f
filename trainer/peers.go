package trainer

import (
	"fmt"

	"github.com/lcl-project/lcl/trainer/torch"
)

// What the run trains with: its engine, and the peers of a stage (their
// models, optimizers and moving averages, built from the run's seed).

// openEngine creates the run's engine (after the checkpoint, whose loss
// scale it may restore).
func (r *runner) openEngine(ck *checkpoint) error {
	if r.cfg.Device != "cpu" {
		if err := torch.SetCUDAFlags(r.cfg.CUDNNBenchmark, r.cfg.TF32); err != nil {
			return fmt.Errorf("trainer: %w", err)
		}
	}
	o := torch.EngineOptions{Precision: r.cfg.Precision, ChannelsLast: r.cfg.ChannelsLast}
	if pd, ok := r.cfg.Train.(PixelExamples); ok {
		if _, ok := r.cfg.Test.(PixelExamples); ok {
			o.Mean, o.Std = pd.Normalization()
			r.u8 = true
		}
	}
	e, err := torch.NewEngine(r.cfg.Device, o)
	if err != nil {
		return fmt.Errorf("trainer: %w", err)
	}
	r.engine = e
	if r.cfg.Precision == torch.FP16 {
		r.scaler = NewGradScaler()
		if ck != nil && ck.State.Scaler != nil {
			r.scaler = ck.State.Scaler
		}
	}
	return nil
}

// mix derives a seed from the run's seed and a position (splitmix64).
func mix(vals ...int64) uint64 {
	var x uint64 = 0x9e3779b97f4a7c15
	for _, v := range vals {
		x ^= uint64(v)
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		x = z ^ (z >> 31)
	}
	return x
}

// peerSet is the models of the running stage, and with Optim.EMADecay the
// moving averages of their weights.
type peerSet struct {
	models []*torch.Model
	optims []*torch.Optimizer
	emas   []*torch.Model
}

func (p *peerSet) close() {
	for _, o := range p.optims {
		o.Close()
	}
	for _, m := range p.models {
		m.Close()
	}
	for _, m := range p.emas {
		m.Close()
	}
}

// newPeers builds a stage's models and optimizers, initialised from the
// run's seed. libtorch's generator is one per process, so the seeding and
// the draws are one torch.Seeded section: ranks of a group trained in one
// process (the tests) must not interleave them.
func (r *runner) newPeers(stage int) (*peerSet, error) {
	var ps *peerSet
	err := torch.Seeded(mix(r.cfg.Seed, 1, int64(stage)), func() error {
		var err error
		ps, err = r.buildPeers(stage)
		return err
	})
	return ps, err
}

func (r *runner) buildPeers(stage int) (*peerSet, error) {
	ps := &peerSet{}
	o := r.cfg.Optim
	st := r.stages[stage]
	own := st.Model != "" && st.Model != r.cfg.Model // an architecture of the stage's own
	for k := range st.Peers {
		spec := r.specs[stage]
		// Peers after the first of a TorchScript model start from a fresh
		// initialisation: copies of one module would stay copies.
		spec.Reinit = spec.Script != "" && k > 0
		m, err := torch.NewModel(spec, r.cfg.Device)
		if err != nil {
			ps.close()
			return nil, fmt.Errorf("trainer: %w", err)
		}
		ps.models = append(ps.models, m)
		if r.init != nil && !own {
			if err := r.init.apply(m, spec.HeadNames()); err != nil {
				ps.close()
				return nil, err
			}
		}
		if r.cfg.ChannelsLast { // before the optimizer: its momentum follows the format
			if err := m.ChannelsLast(); err != nil {
				ps.close()
				return nil, fmt.Errorf("trainer: %w", err)
			}
		}
		var opt *torch.Optimizer
		kind, err := OptimizerByName(o.Optimizer) // (Validate accepted it)
		if err == nil {
			opt, err = kind.newOptimizer(m, o)
		}
		if err == nil && o.ClipNorm > 0 {
			err = opt.SetClipNorm(o.ClipNorm)
		}
		if err != nil {
			opt.Close() // (nil when it was not created)
			ps.close()
			return nil, fmt.Errorf("trainer: %w", err)
		}
		ps.optims = append(ps.optims, opt)
	}
	if o.EMADecay > 0 {
		// After every peer (the generator's draws for the peers stay those
		// of a run without averages): copies of the peers' weights.
		for k, m := range ps.models {
			ema, err := r.copyModel(stage, k, m)
			if err != nil {
				ps.close()
				return nil, err
			}
			ps.emas = append(ps.emas, ema)
		}
	}
	return ps, nil
}

// copyModel returns a new model of the stage's architecture (peer k's
// spec) holding m's weights, in the run's memory format.
func (r *runner) copyModel(stage, k int, m *torch.Model) (*torch.Model, error) {
	st, err := m.State().Copy()
	if err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	return r.modelWith(stage, k, st)
}

// modelWith returns a new model of the stage's architecture (peer k's
// spec) holding the state st, in the run's memory format.
func (r *runner) modelWith(stage, k int, st []torch.Named) (*torch.Model, error) {
	spec := r.specs[stage]
	spec.Reinit = spec.Script != "" && k > 0
	c, err := torch.NewModel(spec, r.cfg.Device)
	if err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	byName := make(map[string]torch.Named, len(st))
	for _, n := range st {
		byName[n.Name] = n
	}
	if err := c.State().Load(byName); err != nil {
		c.Close()
		return nil, fmt.Errorf("trainer: %w", err)
	}
	if r.cfg.ChannelsLast {
		if err := c.ChannelsLast(); err != nil {
			c.Close()
			return nil, fmt.Errorf("trainer: %w", err)
		}
	}
	return c, nil
}
