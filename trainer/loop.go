package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/lcl-project/lcl/trainer/torch"
)

// ErrCanceled wraps the context's error when a run stopped early; the
// checkpoint written then lets Resume continue it.
var ErrCanceled = errors.New("training canceled")

type runner struct {
	cfg      Config
	specs    []torch.Spec // per stage
	stages   []Stage
	finished map[string]*torch.Model
	init     *initWeights // Config.Init, nil without
	metrics  *os.File
	// metricsOff is the size of metrics.jsonl: what a checkpoint records
	// (kept here, not asked of the file, so no failed Seek can record 0).
	metricsOff int64
	history    []EpochMetrics
	start      time.Time
	// user0 and sys0 are the process's CPU times when the run started.
	user0, sys0 time.Duration
	id          map[string]string
	// engine stages batches and runs steps and evaluations on the device;
	// u8 says batches travel as pixel bytes; scaler is fp16's loss scale.
	engine *torch.Engine
	u8     bool
	scaler *GradScaler
	// test is the test set and the engine evaluating on it; val the
	// validation split (nil without one), and sel the model selection on it.
	test, val *evalSet
	sel       *selector
	// final holds the test figures of the selected weights (model
	// selection), per peer.
	final []PeerMetrics
	// openDir opens metrics.jsonl and the sink before the first epoch;
	// nil once it has (or before the run starts).
	openDir func() error
}

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

// Run trains as cfg says. On cancellation it writes a checkpoint (unless
// disabled) and returns an error wrapping ErrCanceled and ctx.Err().
func Run(ctx context.Context, cfg Config) (*Result, error) {
	// Every libtorch call of the run comes from one OS thread, so OpenMP
	// keeps a single worker team (libgomp keeps one per calling thread).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if g := cfg.Group; g != nil {
		// A collective waiting on a peer ends at once on cancellation.
		stop := context.AfterFunc(ctx, func() { g.Abort("canceled") })
		defer stop()
	}
	return r.run(ctx)
}

// specOf returns the architecture of the stage with this name.
func (r *runner) specOf(name string) torch.Spec {
	for i, s := range r.stages {
		if s.Name == name {
			return r.specs[i]
		}
	}
	return r.specs[0]
}

func (r *runner) close() {
	for _, m := range r.finished {
		m.Close()
	}
	if r.metrics != nil {
		r.metrics.Close()
	}
	if s := r.sink(); s != nil {
		s.Close()
	}
	r.engine.Close()
	r.test.close()
	r.val.close()
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

// writer reports whether this process writes the run directory: always
// without a Group, only rank 0 with one.
func (r *runner) writer() bool { return r.cfg.Group == nil || r.cfg.Group.Rank() == 0 }

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

// position is where a run stands; a checkpoint stores it.
type position struct {
	Stage, Epoch, Step int
	Acc                []accum // per peer, for the epoch in progress
	Images             int64
	Seconds            float64
}

type accum struct {
	Loss    float64 `json:"loss"`
	Correct int64   `json:"correct"`
	Seen    int64   `json:"seen"`
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	var pos position
	var resumed *checkpoint
	if r.cfg.Resume {
		ck, err := r.loadCheckpoint()
		if err != nil {
			return nil, err
		}
		resumed, pos = ck, ck.State.Position
		r.history = ck.State.History
		if r.cfg.OnResume != nil {
			r.cfg.OnResume(Resumed{Stage: r.stages[pos.Stage].Name, Stages: len(r.stages), Epoch: pos.Epoch,
				Epochs: r.stages[pos.Stage].Epochs, Step: pos.Step})
		}
	}
	if err := r.openEngine(resumed); err != nil {
		return nil, err
	}
	// The run directory is written once the first stage's models are
	// built (runStage): what the engine, the models or --init refuse
	// leaves nothing on disk.
	r.openDir = func() error {
		r.openDir = nil
		if err := r.openMetrics(resumed); err != nil {
			return err
		}
		return r.startSink(pos)
	}
	var peers *peerSet
	for s := pos.Stage; s < len(r.stages); s++ {
		var err error
		if peers, err = r.runStage(ctx, s, pos, resumed); err != nil {
			return nil, err
		}
		if s < len(r.stages)-1 {
			// Keep peer 0 as the stage's final model (teacher, features).
			r.finished[r.stages[s].Name] = peers.models[0]
			peers.models = peers.models[1:]
			peers.close()
		}
	}
	defer peers.close()
	if r.openDir != nil {
		if err := r.openDir(); err != nil {
			return nil, err
		}
	}
	return r.finish(peers)
}

// runStage trains stage s, from pos when the run resumed inside it, and
// returns its peers.
func (r *runner) runStage(ctx context.Context, s int, pos position, resumed *checkpoint) (_ *peerSet, err error) {
	peers, err := r.newPeers(s)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			peers.close()
		}
	}()
	if resumed != nil && s == pos.Stage {
		if err := resumed.restorePeers(peers); err != nil {
			return nil, err
		}
	}
	if err := r.syncPeers(peers); err != nil {
		return nil, err
	}
	if r.openDir != nil {
		if err := r.openDir(); err != nil {
			return nil, err
		}
	}
	start := 0
	if s == pos.Stage {
		start = pos.Epoch
	}
	// With model selection the last stage ends with an evaluation of the
	// selected weights: its last epoch's checkpoint is not yet the run's end.
	selecting := r.sel != nil && s == len(r.stages)-1
	for e := start; e < r.stages[s].Epochs && !(selecting && r.sel.stopped > 0); e++ {
		p := position{Stage: s, Epoch: e}
		if s == pos.Stage && e == pos.Epoch {
			p = pos
		}
		if err := r.runEpoch(ctx, peers, p); err != nil {
			return nil, err
		}
		if selecting && e+1 < r.stages[s].Epochs && r.sel.stop(e+1) {
			// Only a stop before the last epoch ended the run early: one
			// at the last would claim it, and refuse a longer --resume.
			r.sel.stopped = e + 1
		}
		last := e == r.stages[s].Epochs-1 || (selecting && r.sel.stopped > 0)
		every := r.cfg.CheckpointEvery > 0 && (e+1)%r.cfg.CheckpointEvery == 0
		if last || every {
			next := position{Stage: s, Epoch: e + 1}
			done := last && !selecting
			if done {
				next = position{Stage: s + 1}
			}
			if err := r.saveCheckpoint(peers, next, done); err != nil {
				return nil, err
			}
		}
	}
	if selecting {
		final, err := r.testSelected(ctx, s)
		if err != nil && ctx.Err() != nil {
			// The checkpoint of the last epoch resumes at this evaluation.
			return nil, fmt.Errorf("%w at the test of the selected weights: %w", ErrCanceled, ctx.Err())
		}
		if err != nil {
			return nil, err
		}
		r.final = final
		if sk, ok := r.sink().(FinalSink); ok {
			fm := FinalMetrics{Stage: r.stages[s].Name, GlobalStep: r.stepsBefore(), Peers: final}
			for _, b := range r.sel.best {
				fm.Epochs = append(fm.Epochs, b.Epoch)
			}
			if err := sk.Final(fm); err != nil {
				return nil, fmt.Errorf("trainer: metrics: %w", err)
			}
		}
		if err := r.saveCheckpoint(peers, position{Stage: s + 1}, true); err != nil {
			return nil, err
		}
	}
	return peers, nil
}

func (r *runner) finish(peers *peerSet) (*Result, error) {
	user, sys := processCPU()
	res := &Result{Strategy: r.cfg.Strategy, Model: r.cfg.Model, Seed: r.cfg.Seed, Precision: r.cfg.Precision.String(), Augment: r.cfg.Augment, Epochs: r.history,
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
		}
	}
	if r.cfg.Out == "" || !r.writer() {
		return res, nil
	}
	// weights writes model<kind>.safetensors (model<kind>-peer<k> for
	// further peers).
	weights := func(kind string, k int, s stateReader, id map[string]string) (string, error) {
		name := "model" + kind
		if k > 0 {
			name += fmt.Sprintf("-peer%d", k)
		}
		path := filepath.Join(r.cfg.Out, name+".safetensors")
		return path, writeWeights(path, s, id)
	}
	for k, m := range peers.models {
		path, err := weights("", k, m.State(), r.id)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			res.Weights = path
		}
	}
	for k, m := range peers.emas {
		if _, err := weights("-ema", k, m.State(), r.id); err != nil {
			return nil, err
		}
	}
	if r.final != nil {
		for k, b := range r.sel.best {
			id := maps.Clone(r.id)
			id["selected"] = fmt.Sprintf("epoch=%d %s=%g ema=%t", b.Epoch, r.sel.name(), b.Value, r.sel.ema)
			path, err := weights("-best", k, namedState(b.state), id)
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
func (r *runner) planContext(s, e, step int) PlanContext {
	var classes []string
	if c, ok := r.cfg.Train.(interface{ Classes() []string }); ok {
		classes = c.Classes()
	}
	return PlanContext{Classes: classes,
		Stage: r.stages[s], StageIndex: s, Epoch: e, Epochs: r.stages[s].Epochs,
		Step: step, Steps: (len(r.cfg.TrainIndices) + r.cfg.Optim.Batch - 1) / r.cfg.Optim.Batch,
		NumClasses: r.cfg.Train.NumClasses(), Train: r.cfg.TrainIndices, Label: r.cfg.Train.Label,
		Features: r.features,
	}
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
