package trainer

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	// fixed caches a plan's fixed classifier in the models' feature space.
	fixed fixedHeads
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
	if cfg.Threads > 0 {
		if err := torch.SetThreads(cfg.Threads); err != nil {
			return nil, fmt.Errorf("trainer: %w", err)
		}
	}
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

// position is where a run stands; a checkpoint stores it.
type position struct {
	Stage, Epoch, Step int
	Acc                []accum // per peer, for the epoch in progress
	Images             int64
	Seconds            float64
	// With Stage.ClassProbs: the class probabilities of the epoch in
	// progress so far, and of the epoch before (this epoch's plans).
	Class     *classProbs `json:",omitempty"`
	PrevClass *classProbs `json:",omitempty"`
}

// classProbs are an epoch's class probabilities (Stage.ClassProbs,
// torch.Engine.ClassProbs): softmax rows of the correctly classified
// training examples summed by label (C×C), and their number per label.
type classProbs struct {
	Sums   []float64
	Counts []int64
}

// add adds what the engine summed since its last read.
func (c *classProbs) add(sums []float64, counts []int64) {
	if c.Sums == nil {
		c.Sums, c.Counts = make([]float64, len(sums)), make([]int64, len(counts))
	}
	for i, v := range sums {
		c.Sums[i] += v
	}
	for i, v := range counts {
		c.Counts[i] += v
	}
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
	// built and its first epoch's plan is in force (runEpoch): what the
	// engine, the models, --init or the plan refuse (a fixed classifier
	// the model cannot take) leaves nothing on disk.
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
	start := 0
	// prev is the class probabilities of the stage's last finished epoch
	// (Stage.ClassProbs), which the next epoch's plans are given.
	var prev *classProbs
	if s == pos.Stage {
		start = pos.Epoch
		if pos.Epoch > 0 {
			prev = pos.PrevClass
		}
	}
	// With model selection the last stage ends with an evaluation of the
	// selected weights: its last epoch's checkpoint is not yet the run's end.
	selecting := r.sel != nil && s == len(r.stages)-1
	for e := start; e < r.stages[s].Epochs && !(selecting && r.sel.stopped > 0); e++ {
		p := position{Stage: s, Epoch: e, PrevClass: prev}
		if s == pos.Stage && e == pos.Epoch {
			p = pos
		}
		var err error
		if prev, err = r.runEpoch(ctx, peers, p); err != nil {
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
			next := position{Stage: s, Epoch: e + 1, PrevClass: prev}
			done := last && !selecting
			if done {
				// (PrevClass: a larger --epochs continues the stage.)
				next = position{Stage: s + 1, PrevClass: prev}
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
