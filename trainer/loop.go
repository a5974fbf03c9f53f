package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
	if pd, ok := r.cfg.Train.(PixelDataset); ok {
		if _, ok := r.cfg.Test.(PixelDataset); ok {
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
	r.engine.Close()
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

// peerSet is the models of the running stage.
type peerSet struct {
	models []*torch.Model
	optims []*torch.Optimizer
}

func (p *peerSet) close() {
	for _, o := range p.optims {
		o.Close()
	}
	for _, m := range p.models {
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
		if o.Optimizer == "rmsprop" {
			decay, eps := o.rms()
			opt, err = torch.NewRMSProp(m, decay, eps, o.Momentum, o.WeightDecay)
		} else {
			opt, err = torch.NewSGD(m, o.Momentum, o.WeightDecay, o.Nesterov)
		}
		if err != nil {
			ps.close()
			return nil, fmt.Errorf("trainer: %w", err)
		}
		ps.optims = append(ps.optims, opt)
	}
	return ps, nil
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
	}
	if err := r.openMetrics(resumed); err != nil {
		return nil, err
	}
	if err := r.openEngine(resumed); err != nil {
		return nil, err
	}
	var peers *peerSet
	for s := pos.Stage; s < len(r.stages); s++ {
		var err error
		if peers, err = r.newPeers(s); err != nil {
			return nil, err
		}
		if resumed != nil && s == pos.Stage {
			if err := resumed.restorePeers(peers); err != nil {
				peers.close()
				return nil, err
			}
		}
		if err := r.syncPeers(peers); err != nil {
			peers.close()
			return nil, err
		}
		start := 0
		if s == pos.Stage {
			start = pos.Epoch
		}
		for e := start; e < r.stages[s].Epochs; e++ {
			p := position{Stage: s, Epoch: e}
			if s == pos.Stage && e == pos.Epoch {
				p = pos
			}
			if err := r.epoch(ctx, peers, p); err != nil {
				peers.close()
				return nil, err
			}
			last := e == r.stages[s].Epochs-1
			every := r.cfg.CheckpointEvery > 0 && (e+1)%r.cfg.CheckpointEvery == 0
			if last || every {
				next := position{Stage: s, Epoch: e + 1}
				if last {
					next = position{Stage: s + 1}
				}
				if err := r.saveCheckpoint(peers, next, last); err != nil {
					peers.close()
					return nil, err
				}
			}
		}
		if s < len(r.stages)-1 {
			// Keep peer 0 as the stage's final model (teacher, features).
			r.finished[r.stages[s].Name] = peers.models[0]
			peers.models = peers.models[1:]
			peers.close()
		}
	}
	defer peers.close()
	return r.finish(peers)
}

func (r *runner) finish(peers *peerSet) (*Result, error) {
	user, sys := processCPU()
	res := &Result{Strategy: r.cfg.Strategy, Model: r.cfg.Model, Seed: r.cfg.Seed, Epochs: r.history,
		Seconds: time.Since(r.start).Seconds(), UserSeconds: (user - r.user0).Seconds(), SystemSeconds: (sys - r.sys0).Seconds()}
	if n := len(r.history); n > 0 {
		last := r.history[n-1]
		res.Final = last.Peers
		if res.Final == nil {
			res.Final = []PeerMetrics{last.PeerMetrics}
		}
		res.Top1, res.Top5 = last.Top1, last.Top5
	}
	if r.cfg.Out == "" || !r.writer() {
		return res, nil
	}
	for k, m := range peers.models {
		name := "model.safetensors"
		if k > 0 {
			name = fmt.Sprintf("model-peer%d.safetensors", k)
		}
		path := filepath.Join(r.cfg.Out, name)
		if err := writeWeights(path, m, r.id); err != nil {
			return nil, err
		}
		if k == 0 {
			res.Weights = path
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

// features returns the penultimate features of a finished stage's model.
func (r *runner) features(ctx context.Context, stage string, indices []int) ([][]float32, error) {
	m, ok := r.finished[stage]
	if !ok {
		return nil, fmt.Errorf("trainer: features of stage %q: no such finished stage", stage)
	}
	pos := make(map[int]int, len(indices))
	for k, i := range indices {
		pos[i] = k
	}
	out := make([][]float32, len(indices))
	c, h, w := r.cfg.Train.Shape()
	err := r.each(ctx, r.cfg.Train, LoaderConfig{Indices: indices, Batch: r.cfg.EvalBatch}, func(b *Batch) error {
		ev, err := m.Eval(b.X, b.N, c, h, w, nil, false, true)
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
func (r *runner) each(ctx context.Context, ds Dataset, lc LoaderConfig, fn func(*Batch) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	it, err := r.cfg.Loader(ctx, ds, lc)
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

var errStop = errors.New("stop")

func (r *runner) epoch(ctx context.Context, peers *peerSet, p position) error {
	s, e := p.Stage, p.Epoch
	stage := r.stages[s]
	plan, err := r.plan(ctx, s, e, 0)
	if err != nil {
		return fmt.Errorf("trainer: stage %q epoch %d: %w", stage.Name, e+1, err)
	}
	if err := validatePlan(&plan, r.cfg.Train.NumClasses(), r.cfg.Train.Len()); err != nil {
		return fmt.Errorf("trainer: stage %q epoch %d: %w", stage.Name, e+1, err)
	}
	var teacher *torch.Model
	if plan.Coefs.KD != 0 {
		if teacher = r.finished[stage.Teacher]; teacher == nil {
			return fmt.Errorf("trainer: stage %q: distillation without a teacher stage", stage.Name)
		}
	}
	var targets *torch.Tensor
	if plan.Targets != nil {
		C := int64(r.cfg.Train.NumClasses())
		if targets, err = torch.NewTensor(plan.Targets, []int64{C, C}, r.cfg.Device); err != nil {
			return fmt.Errorf("trainer: %w", err)
		}
	}
	indices := plan.Subset
	if indices == nil {
		indices = r.cfg.TrainIndices
	}
	bs := r.cfg.Optim.Batch
	steps := (len(indices) + bs - 1) / bs
	if p.Acc == nil {
		p.Acc = make([]accum, stage.Peers)
	}
	c, h, w := r.cfg.Train.Shape()
	k := len(peers.models)
	step := &torch.Step{Models: peers.models, Optims: peers.optims, Teacher: teacher, Targets: targets,
		Coefs: torch.Coefs(plan.Coefs)}
	defer func() { // the last targets in use (Stage.PerStep replaces them step by step)
		if step.Targets != nil {
			step.Targets.Close()
		}
	}()
	var weights []float32
	if plan.Weights != nil {
		weights = make([]float32, bs)
	}
	t0 := time.Now()
	done0 := p.Step
	var lr float64
	i := 0
	lc := LoaderConfig{Indices: indices, Batch: bs, Shuffle: true, Seed: int64(mix(r.cfg.Seed, 2, int64(s), int64(e))), Train: true}
	if g := r.cfg.Group; g != nil {
		lc.Shard, lc.Shards = g.Rank(), g.Size()
		step.Group = g
	}
	lc.U8 = r.u8
	// The loss and hits accumulate on the device; read tells them apart
	// once every MetricsEvery steps (each read waits for the device).
	unread, first := 0, p.Step+1
	read := func() error {
		if unread == 0 {
			return nil
		}
		mt, err := r.engine.Metrics(k)
		if err != nil {
			return fmt.Errorf("trainer: stage %q epoch %d: %w", stage.Name, e+1, err)
		}
		for q := range k {
			p.Acc[q].Loss += mt.LossSum[q]
			p.Acc[q].Correct += mt.Correct[q]
			p.Acc[q].Seen += mt.N
		}
		unread = 0
		if l := mt.LossSum[0]; math.IsNaN(l) || math.IsInf(l, 0) {
			at := fmt.Sprintf("step %d", p.Step)
			if first < p.Step {
				at = fmt.Sprintf("steps %d-%d", first, p.Step)
			}
			return fmt.Errorf("trainer: stage %q epoch %d %s: loss is %v (learning rate %g too high?)",
				stage.Name, e+1, at, l, lr)
		}
		first = p.Step + 1
		if r.cfg.Progress != nil && p.Acc[0].Seen > 0 {
			el := time.Since(t0).Seconds()
			done := p.Step - done0
			perStep := el / float64(max(done, 1))
			left := float64(steps-p.Step) + float64(stage.Epochs-e-1)*float64(steps)
			r.cfg.Progress(Progress{Stage: stage.Name, Epoch: e + 1, Epochs: stage.Epochs, Step: p.Step, Steps: steps,
				Loss: p.Acc[0].Loss / float64(p.Acc[0].Seen), Acc: float64(p.Acc[0].Correct) / float64(p.Acc[0].Seen),
				ImgPerSec: float64(p.Images) / (p.Seconds + el), ETA: time.Duration(perStep * left * float64(time.Second))})
		}
		return nil
	}
	err = r.each(ctx, r.cfg.Train, lc, func(b *Batch) error {
		defer func() { i++ }()
		if i < p.Step {
			return nil // done before the checkpoint this run resumed from
		}
		if ctx.Err() != nil {
			return errStop
		}
		// A batch of one cannot be batch-normalised in training mode (with a
		// Group: a global batch of one, so every rank skips it).
		if n := globalBatch(len(indices), bs, i, b.N, r.cfg.Group); n < 2 {
			p.Step++
			return nil
		}
		if stage.PerStep && i > 0 {
			if err := r.stepTargets(ctx, s, e, i, step); err != nil {
				return err
			}
		}
		lr = r.cfg.Optim.Schedule.At(e, float64(i)/float64(steps), stage.Epochs)
		step.LR = lr
		in := torch.Input{N: b.N, C: c, H: h, W: w, X: b.X, X8: b.X8, Y: b.Y}
		if weights != nil {
			in.Weights = weights[:b.N]
			for j, idx := range b.Index {
				in.Weights[j] = plan.Weights[idx]
			}
		}
		// Staged now, the batch travels to the device while the step
		// queued before it still runs there.
		if err := r.engine.Put(in); err != nil {
			return fmt.Errorf("trainer: stage %q epoch %d step %d: %w", stage.Name, e+1, i+1, err)
		}
		// Seeding per step makes dropout independent of where a run resumed.
		if err := torch.ManualSeed(mix(r.cfg.Seed, 3, int64(s), int64(e), int64(i))); err != nil {
			return fmt.Errorf("trainer: %w", err)
		}
		scale := 0.0
		if r.scaler != nil {
			scale = float64(r.scaler.Scale)
		}
		skipped, err := r.engine.Train(step, scale)
		if err != nil {
			return fmt.Errorf("trainer: stage %q epoch %d step %d: %w", stage.Name, e+1, i+1, err)
		}
		if r.scaler != nil {
			r.scaler.Update(skipped > 0)
		}
		p.Step++
		p.Images += int64(globalBatch(len(indices), bs, i, b.N, r.cfg.Group))
		if unread++; unread >= r.cfg.MetricsEvery || p.Step == steps {
			return read()
		}
		return nil
	})
	if rerr := read(); err == nil && !errors.Is(err, errStop) {
		err = rerr
	}
	p.Seconds += time.Since(t0).Seconds()
	// canceled checkpoints the position so a resume continues at this step
	// (or, once every step is done, at the evaluation).
	canceled := func() error {
		if !r.cfg.NoCheckpoint && r.cfg.Out != "" && r.writer() {
			if cerr := r.saveCheckpoint(peers, p, false); cerr != nil {
				return errors.Join(fmt.Errorf("%w: %w", ErrCanceled, ctx.Err()), cerr)
			}
		}
		return fmt.Errorf("%w at stage %q epoch %d step %d: %w", ErrCanceled, stage.Name, e+1, p.Step, ctx.Err())
	}
	if errors.Is(err, errStop) || ctx.Err() != nil {
		return canceled()
	}
	if err != nil {
		return err
	}
	lr = r.cfg.Optim.Schedule.At(e, float64(steps-1)/float64(steps), stage.Epochs) // at the last step
	em := EpochMetrics{MessageType: "epoch", Stage: stage.Name, StageIndex: s, Epoch: e + 1, Epochs: stage.Epochs,
		LR: lr, Images: p.Images, Seconds: p.Seconds, TargetEntropy: meanRowEntropy(plan.Targets, r.cfg.Train.NumClasses())}
	if p.Seconds > 0 {
		em.ImgPerSec = float64(p.Images) / p.Seconds
	}
	te := time.Now()
	for q, m := range peers.models {
		pm, err := r.evaluate(ctx, m)
		if err != nil && ctx.Err() != nil {
			return canceled()
		}
		if err != nil {
			return err
		}
		if a := p.Acc[q]; a.Seen > 0 {
			pm.TrainLoss, pm.TrainTop1 = a.Loss/float64(a.Seen), float64(a.Correct)/float64(a.Seen)
		}
		if q == 0 {
			em.PeerMetrics = pm
		}
		em.Top1, em.Top5 = append(em.Top1, pm.TestTop1), append(em.Top5, pm.TestTop5)
		if k > 1 {
			em.Peers = append(em.Peers, pm)
		}
	}
	em.EvalSeconds = time.Since(te).Seconds()
	if em.EvalSeconds > 0 {
		em.EvalImgPerSec = float64(k*r.cfg.Test.Len()) / em.EvalSeconds
	}
	r.history = append(r.history, em)
	if r.cfg.OnEpoch != nil {
		r.cfg.OnEpoch(em)
	}
	return r.logEpoch(em)
}

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
	r := &runner{cfg: Config{Loader: loader}}
	err = r.each(ctx, ds, LoaderConfig{Batch: max(o.Batch, 1), U8: u8}, func(b *Batch) error {
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

// stepTargets asks the planner for step i's targets (Stage.PerStep) and
// swaps them into the step.
func (r *runner) stepTargets(ctx context.Context, s, e, i int, step *torch.Step) error {
	stage := r.stages[s]
	where := fmt.Sprintf("trainer: stage %q epoch %d step %d", stage.Name, e+1, i+1) // 1-based, as TrainStep's errors
	sp, err := r.plan(ctx, s, e, i)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if sp.Targets == nil {
		return fmt.Errorf("%s: the per-step plan has no targets (a per-step stage replaces the targets every step)", where)
	}
	C := r.cfg.Train.NumClasses()
	tp := Plan{Targets: sp.Targets}
	if err := validatePlan(&tp, C, r.cfg.Train.Len()); err != nil {
		return fmt.Errorf("%s: per-step %w", where, err)
	}
	t, err := torch.NewTensor(sp.Targets, []int64{int64(C), int64(C)}, r.cfg.Device)
	if err != nil {
		return fmt.Errorf("trainer: %w", err)
	}
	step.Targets.Close()
	step.Targets = t
	return nil
}
