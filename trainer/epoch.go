package trainer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/trainer/torch"
)

// epoch is one epoch of a stage in progress: its plan, the pass over the
// training batches, the training metrics still on the device, the
// evaluation of its peers, and the checkpoint written when it is cancelled.
// runEpoch drives it: plan, train, flush, evaluate.
type epoch struct {
	r     *runner
	ctx   context.Context
	peers *peerSet
	stage Stage
	// p is where the epoch stands (a cancellation's checkpoint records it).
	p position
	// plan is the epoch's plan (asked at step 0); indices are the examples
	// of its pass, in steps optimiser steps.
	plan    Plan
	indices []int
	steps   int
	// step holds the settings of the next training step: the peers, the
	// targets, coefficients and teacher of the plan in force.
	step torch.Step
	// weights are that plan's per-example weights (nil: uniform); the
	// batch's are gathered into wbuf. keep marks the examples of a per-step
	// plan's subset (nil: the whole batch trains).
	weights []float32
	wbuf    []float32
	keep    []bool
	keepBuf []bool
	t0      time.Time
	done0   int     // steps done before this process took the epoch up
	lr      float64 // of the last step
	base    int64   // the run's optimiser steps before this epoch (every stage)
	// unread counts the steps whose loss and hits are still on the device;
	// first is the first of them (1-based).
	unread, first int
}

var errStop = errors.New("stop")

// runEpoch trains epoch p.Epoch of stage p.Stage from position p and
// evaluates its peers.
func (r *runner) runEpoch(ctx context.Context, peers *peerSet, p position) (*classProbs, error) {
	ep, err := r.newEpoch(ctx, peers, p)
	if err != nil {
		return nil, err
	}
	defer ep.close()
	if r.openDir != nil {
		if err := r.openDir(); err != nil {
			return nil, err
		}
	}
	err = ep.train()
	if errors.Is(err, errStop) || ctx.Err() != nil {
		return nil, ep.canceled()
	}
	if err != nil {
		return nil, err
	}
	em, err := ep.evaluate()
	if err != nil && ctx.Err() != nil {
		return nil, ep.canceled()
	}
	if err != nil {
		return nil, err
	}
	r.history = append(r.history, em)
	if r.cfg.OnEpoch != nil {
		r.cfg.OnEpoch(em)
	}
	return ep.p.Class, r.logEpoch(em)
}

// newEpoch asks the planner for the epoch's plan and puts it in force.
func (r *runner) newEpoch(ctx context.Context, peers *peerSet, p position) (*epoch, error) {
	s := p.Stage
	ep := &epoch{r: r, ctx: ctx, peers: peers, stage: r.stages[s], p: p, base: r.stepsBefore()}
	if ep.stage.ClassProbs {
		if err := r.classProbsSupported(); err != nil {
			return nil, ep.errorf("%w", err)
		}
		if ep.p.Class == nil {
			ep.p.Class = &classProbs{}
		}
	}
	plan, err := r.plan(ctx, ep.p, 0)
	if err != nil {
		return nil, ep.errorf("%w", err)
	}
	if err := validatePlan(&plan, r.cfg.Train.NumClasses(), r.cfg.Train.Len()); err != nil {
		return nil, ep.errorf("%w", err)
	}
	ep.plan = plan
	ep.step = torch.Step{Models: peers.models, Optims: peers.optims, Group: r.cfg.Group, ClassProbs: ep.stage.ClassProbs}
	if err := ep.use(plan, false); err != nil {
		ep.close()
		return nil, err
	}
	ep.indices = plan.Subset
	if ep.indices == nil {
		ep.indices = r.cfg.TrainIndices
	}
	ep.steps = (len(ep.indices) + r.cfg.Optim.Batch - 1) / r.cfg.Optim.Batch
	world := 1
	if g := r.cfg.Group; g != nil {
		world = g.Size()
	}
	if err := ep.p.check(ep.steps, r.cfg.Optim.Batch, world); err != nil { // a resumed position
		ep.close()
		return nil, fmt.Errorf("trainer: %w %s: %v", ErrCheckpoint, bounded.Quote(filepath.Join(r.cfg.Out, checkpointName)), err)
	}
	if ep.p.Acc == nil {
		ep.p.Acc = make([]accum, ep.stage.Peers)
	}
	return ep, nil
}

// close frees the targets and class groups in force.
func (ep *epoch) close() {
	if ep.step.Targets != nil {
		ep.step.Targets.Close()
		ep.step.Targets = nil
	}
	if g := ep.step.Groups; g != nil {
		g.Members.Close()
		g.Weights.Close()
		ep.step.Groups = nil
	}
}

// groupTensors are a plan's class groups as the step takes them: the dense
// G×C membership and C×G weights on the run's device (nil without groups).
func (ep *epoch) groupTensors(g *curriculum.Groups) (*torch.Groups, error) {
	if g == nil {
		return nil, nil
	}
	C, G := ep.r.cfg.Train.NumClasses(), len(g.Members)
	m, w := make([]float32, G*C), make([]float32, C*G)
	for gi, cs := range g.Members {
		for _, c := range cs {
			m[gi*C+int(c)] = 1
		}
	}
	for _, e := range g.Weights {
		w[int(e.Class)*G+int(e.Group)] = e.W
	}
	members, err := torch.NewTensor(m, []int64{int64(G), int64(C)}, ep.r.cfg.Device)
	if err != nil {
		return nil, fmt.Errorf("trainer: class groups: %w", err)
	}
	weights, err := torch.NewTensor(w, []int64{int64(C), int64(G)}, ep.r.cfg.Device)
	if err != nil {
		members.Close()
		return nil, fmt.Errorf("trainer: class groups: %w", err)
	}
	return &torch.Groups{Members: members, Weights: weights}, nil
}

// fixHeads sets every peer's head, and its moving average's (which would
// otherwise keep its initial head for thousands of steps), to the plan's
// fixed classifier, mapped into the peer's feature space (fixedHeads).
func (ep *epoch) fixHeads(plan Plan) error {
	c := ep.r.cfg.Train.NumClasses()
	for _, m := range append(slices.Clip(ep.step.Models), ep.peers.emas...) {
		d := m.FeatureDim()
		v, err := ep.r.fixed.embed(plan.Classifier, c, plan.ClassifierDim, d, ep.r.cfg.Seed)
		if err == nil {
			err = m.FixHead(v, c, d)
		}
		if err != nil {
			return ep.errorf("%w", err)
		}
	}
	return nil
}

// errorf prefixes the error with the stage and the (1-based) epoch.
func (ep *epoch) errorf(format string, a ...any) error {
	return fmt.Errorf("trainer: stage %q epoch %d: "+format, append([]any{ep.stage.Name, ep.p.Epoch + 1}, a...)...)
}

// use puts a (validated) plan in force for the next steps: its teacher,
// targets, coefficients and weights, and with perStep its subset, which
// keeps of each batch the examples it lists (the epoch plan's subset is the
// pass itself).
func (ep *epoch) use(plan Plan, perStep bool) error {
	r := ep.r
	var teacher *torch.Model
	if plan.Coefs.KD != 0 {
		if teacher = r.finished[ep.stage.Teacher]; teacher == nil {
			return fmt.Errorf("trainer: stage %q: distillation without a teacher stage", ep.stage.Name)
		}
	}
	if c := plan.Coefs; (c.Consistency != 0 || c.Dissimilar != 0 || c.Geometric != 0) && len(ep.stage.Levels) == 0 {
		return fmt.Errorf("trainer: stage %q: a level coefficient (consistency, dissimilar, geometric) without levels: the stage declares none", ep.stage.Name)
	}
	if plan.Classifier != nil {
		if err := ep.fixHeads(plan); err != nil {
			return err
		}
	}
	var targets *torch.Tensor
	if plan.Targets != nil {
		C := int64(r.cfg.Train.NumClasses())
		var err error
		if targets, err = torch.NewTensor(plan.Targets, []int64{C, C}, r.cfg.Device); err != nil {
			return fmt.Errorf("trainer: %w", err)
		}
	}
	groups, err := ep.groupTensors(plan.Groups)
	if err != nil {
		if targets != nil {
			targets.Close()
		}
		return err
	}
	ep.close()
	ep.step.Teacher, ep.step.Targets, ep.step.Coefs, ep.step.Groups = teacher, targets, plan.Coefs, groups
	ep.weights = plan.Weights
	if ep.weights != nil && ep.wbuf == nil {
		ep.wbuf = make([]float32, r.cfg.Optim.Batch)
	}
	ep.keep = nil
	if perStep && plan.Subset != nil {
		if ep.keepBuf == nil {
			ep.keepBuf = make([]bool, r.cfg.Train.Len())
		}
		ep.keep = ep.keepBuf
		clear(ep.keep)
		for _, i := range plan.Subset {
			ep.keep[i] = true
		}
	}
	return nil
}

// train runs the epoch's pass from ep.p.Step on; errStop (or the context's
// error) when it was cancelled.
func (ep *epoch) train() error {
	r, s, e := ep.r, ep.p.Stage, ep.p.Epoch
	lc := Pass{Indices: ep.indices, Batch: r.cfg.Optim.Batch, Shuffle: true,
		Seed: int64(mix(r.cfg.Seed, 2, int64(s), int64(e))), Train: true, U8: r.u8}
	if g := r.cfg.Group; g != nil {
		lc.Shard, lc.Shards = g.Rank(), g.Size()
	}
	ep.t0 = time.Now()
	ep.done0 = ep.p.Step
	ep.first = ep.p.Step + 1
	i := 0
	err := r.each(ep.ctx, r.cfg.Train, lc, func(b *MiniBatch) error {
		defer func() { i++ }()
		if i < ep.p.Step {
			return nil // done before the checkpoint this run resumed from
		}
		if ep.ctx.Err() != nil {
			return errStop
		}
		return ep.batch(i, b)
	})
	if rerr := ep.flush(); err == nil && !errors.Is(err, errStop) {
		err = rerr
	}
	ep.p.Seconds += time.Since(ep.t0).Seconds()
	return err
}

// batch trains step i on batch b.
func (ep *epoch) batch(i int, b *MiniBatch) error {
	r, s, e := ep.r, ep.p.Stage, ep.p.Epoch
	bs := r.cfg.Optim.Batch
	// A batch of one cannot be batch-normalised in training mode (with a
	// Group: a global batch of one, so every rank skips it).
	trained := globalBatch(len(ep.indices), bs, i, b.N, r.cfg.Group)
	if trained < 2 {
		ep.p.Step++
		return nil
	}
	if ep.stage.PerStep && i > 0 {
		if err := ep.stepPlan(i); err != nil {
			return err
		}
		if ep.keep != nil {
			var err error
			b = keepOnly(b, ep.keep)
			if trained, err = ep.globalCount(b.N); err != nil {
				return fmt.Errorf("trainer: stage %q epoch %d step %d: %w", ep.stage.Name, e+1, i+1, err)
			}
			if trained < 2 { // as a batch of one above
				ep.p.Step++
				return nil
			}
		}
	}
	ep.lr = r.cfg.Optim.Schedule.At(e, float64(i)/float64(ep.steps), ep.stage.Epochs)
	ep.step.LR = ep.lr
	c, h, w := r.cfg.Train.Shape()
	in := torch.Input{N: b.N, C: c, H: h, W: w, X: b.X, X8: b.X8, Y: b.Y}
	if ep.weights != nil {
		in.Weights = ep.wbuf[:b.N]
		for j, idx := range b.Index {
			in.Weights[j] = ep.weights[idx]
		}
	}
	// Staged now, the batch travels to the device while the step
	// queued before it still runs there.
	if err := r.engine.Put(in); err != nil {
		return fmt.Errorf("trainer: stage %q epoch %d step %d: %w", ep.stage.Name, e+1, i+1, err)
	}
	// Seeding per step makes dropout independent of where a run resumed.
	if err := torch.ManualSeed(mix(r.cfg.Seed, 3, int64(s), int64(e), int64(i))); err != nil {
		return fmt.Errorf("trainer: %w", err)
	}
	// As dropout's, the step's mixing is drawn from a seed of its own, so
	// a resumed run mixes as an uninterrupted one.
	ep.step.Mix = r.cfg.Mix.draw(rand.New(rand.NewPCG(mix(r.cfg.Seed, 4, int64(s), int64(e), int64(i)), 0)), h, w)
	scale := 0.0
	if r.scaler != nil {
		scale = float64(r.scaler.Scale)
	}
	skipped, err := r.engine.Train(&ep.step, scale)
	if err != nil {
		return fmt.Errorf("trainer: stage %q epoch %d step %d: %w", ep.stage.Name, e+1, i+1, err)
	}
	if r.scaler != nil {
		r.scaler.Update(skipped > 0)
	}
	// The moving averages follow every step, also one fp16 skipped (as
	// timm's training loop updates its ModelEmaV2).
	for q, ema := range ep.peers.emas {
		if err := ema.UpdateEMA(ep.peers.models[q], r.cfg.Optim.EMADecay); err != nil {
			return fmt.Errorf("trainer: stage %q epoch %d step %d: %w", ep.stage.Name, e+1, i+1, err)
		}
	}
	ep.p.Step++
	ep.p.Images += int64(trained)
	if ep.unread++; ep.unread >= r.cfg.MetricsEvery || ep.p.Step == ep.steps {
		return ep.flush()
	}
	return nil
}

// stepPlan asks the planner for step i's plan (Stage.PerStep) and puts it
// in force for that step: its targets (nil: one-hot), coefficients,
// weights and subset.
func (ep *epoch) stepPlan(i int) error {
	r := ep.r
	where := fmt.Sprintf("trainer: stage %q epoch %d step %d", ep.stage.Name, ep.p.Epoch+1, i+1) // 1-based, as a failed step's errors
	sp, err := r.plan(ep.ctx, ep.p, i)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if err := validatePlan(&sp, r.cfg.Train.NumClasses(), r.cfg.Train.Len()); err != nil {
		return fmt.Errorf("%s: per-step %w", where, err)
	}
	return ep.use(sp, true)
}

// globalCount is n summed over the ranks of the run's Group (n without one).
func (ep *epoch) globalCount(n int) (int, error) {
	g := ep.r.cfg.Group
	if g == nil {
		return n, nil
	}
	v := []float64{float64(n)}
	if err := g.AllReduce(v); err != nil {
		return 0, err
	}
	return int(v[0]), nil
}

// keepOnly returns the examples of b that keep marks (b itself when that
// is all of them).
func keepOnly(b *MiniBatch, keep []bool) *MiniBatch {
	n := 0
	for _, i := range b.Index {
		if keep[i] {
			n++
		}
	}
	if n == b.N {
		return b
	}
	out := &MiniBatch{N: n, Y: make([]int64, 0, n), Index: make([]int, 0, n)}
	size := (len(b.X) + len(b.X8)) / b.N // b.N > n ≥ 0
	for j, i := range b.Index {
		if !keep[i] {
			continue
		}
		if b.X8 != nil {
			out.X8 = append(out.X8, b.X8[j*size:(j+1)*size]...)
		} else {
			out.X = append(out.X, b.X[j*size:(j+1)*size]...)
		}
		out.Y = append(out.Y, b.Y[j])
		out.Index = append(out.Index, i)
	}
	if b.X8 != nil && out.X8 == nil {
		out.X8 = []uint8{}
	}
	return out
}

// flush reads the loss and hits the steps since the last flush left on the
// device (each read waits for it), checks the loss is finite and reports
// progress.
func (ep *epoch) flush() error {
	if ep.unread == 0 {
		return nil
	}
	r, e := ep.r, ep.p.Epoch
	k := len(ep.peers.models)
	mt, err := r.engine.Metrics(k)
	if err != nil {
		return ep.errorf("%w", err)
	}
	p := &ep.p
	if ep.stage.ClassProbs {
		sums, counts, err := r.engine.ClassProbs(r.cfg.Train.NumClasses())
		if err != nil {
			return ep.errorf("%w", err)
		}
		p.Class.add(sums, counts)
	}
	for q := range k {
		p.Acc[q].Loss += mt.LossSum[q]
		p.Acc[q].Correct += mt.Correct[q]
		p.Acc[q].Seen += mt.N
	}
	ep.unread = 0
	if l := mt.LossSum[0]; math.IsNaN(l) || math.IsInf(l, 0) {
		at := fmt.Sprintf("step %d", p.Step)
		if ep.first < p.Step {
			at = fmt.Sprintf("steps %d-%d", ep.first, p.Step)
		}
		return fmt.Errorf("trainer: stage %q epoch %d %s: loss is %v (learning rate %g too high?)",
			ep.stage.Name, e+1, at, l, ep.lr)
	}
	ep.first = p.Step + 1
	if sk := r.sink(); sk != nil && mt.N > 0 {
		if err := sk.Step(StepMetrics{Stage: ep.stage.Name, StageIndex: p.Stage, Epoch: e + 1, Step: p.Step,
			GlobalStep: ep.base + int64(p.Step), LR: ep.lr, Loss: mt.LossSum[0] / float64(mt.N),
			Top1: float64(mt.Correct[0]) / float64(mt.N), Examples: mt.N,
			ImgPerSec: float64(p.Images) / (p.Seconds + time.Since(ep.t0).Seconds())}); err != nil {
			return ep.errorf("metrics: %w", err)
		}
	}
	if r.cfg.Progress != nil && p.Acc[0].Seen > 0 {
		el := time.Since(ep.t0).Seconds()
		done := p.Step - ep.done0
		perStep := el / float64(max(done, 1))
		left := float64(ep.steps-p.Step) + float64(ep.stage.Epochs-e-1)*float64(ep.steps)
		r.cfg.Progress(Progress{Stage: ep.stage.Name, Epoch: e + 1, Epochs: ep.stage.Epochs, Step: p.Step, Steps: ep.steps,
			Loss: p.Acc[0].Loss / float64(p.Acc[0].Seen), Acc: float64(p.Acc[0].Correct) / float64(p.Acc[0].Seen),
			ImgPerSec: float64(p.Images) / (p.Seconds + el), ETA: time.Duration(perStep * left * float64(time.Second))})
	}
	return nil
}

// canceled checkpoints the position so a resume continues at this step
// (or, once every step is done, at the evaluation).
func (ep *epoch) canceled() error {
	r, ctx := ep.r, ep.ctx
	if !r.cfg.NoCheckpoint && r.cfg.Out != "" && r.writer() {
		if cerr := r.saveCheckpoint(ep.peers, ep.p, false); cerr != nil {
			return errors.Join(fmt.Errorf("%w: %w", ErrCanceled, ctx.Err()), cerr)
		}
	}
	return fmt.Errorf("%w at stage %q epoch %d step %d: %w", ErrCanceled, ep.stage.Name, ep.p.Epoch+1, ep.p.Step, ctx.Err())
}

// evaluate evaluates every peer (and moving average) on the test set and
// the validation split, keeps the weights model selection chooses, and
// returns the epoch's metrics line. With a validation split the test set is
// evaluated only with Config.TestEveryEpoch; without one, after every
// Config.TestEvery-th epoch and the stage's last.
func (ep *epoch) evaluate() (EpochMetrics, error) {
	r, s, e, p := ep.r, ep.p.Stage, ep.p.Epoch, ep.p
	lr := r.cfg.Optim.Schedule.At(e, float64(ep.steps-1)/float64(ep.steps), ep.stage.Epochs) // at the last step
	em := EpochMetrics{MessageType: "epoch", Stage: ep.stage.Name, StageIndex: s, Epoch: e + 1, Epochs: ep.stage.Epochs,
		LR: lr, Images: p.Images, Seconds: p.Seconds, TargetEntropy: meanRowEntropy(ep.plan.Targets, r.cfg.Train.NumClasses()),
		Steps: ep.steps, GlobalStep: ep.base + int64(ep.steps)}
	if p.Seconds > 0 {
		em.ImgPerSec = float64(p.Images) / p.Seconds
	}
	k := len(ep.peers.models)
	tested := r.cfg.TestEveryEpoch
	if r.val == nil {
		n := max(r.cfg.TestEvery, 1)
		tested = (e+1)%n == 0 || e == ep.stage.Epochs-1
	}
	// on evaluates m on set, counting the images evaluated.
	images := 0
	on := func(m *torch.Model, set *evalSet) (PeerMetrics, error) {
		pm, err := r.evaluate(ep.ctx, m, set)
		if set.indices != nil {
			images += len(set.indices)
		} else {
			images += set.ds.Len()
		}
		return pm, err
	}
	te := time.Now()
	for q, m := range ep.peers.models {
		var pm PeerMetrics
		var err error
		if tested {
			if pm, err = on(m, r.test); err != nil {
				return EpochMetrics{}, err
			}
			em.Top1, em.Top5 = append(em.Top1, pm.TestTop1), append(em.Top5, pm.TestTop5)
		}
		if a := p.Acc[q]; a.Seen > 0 {
			pm.TrainLoss, pm.TrainTop1 = a.Loss/float64(a.Seen), float64(a.Correct)/float64(a.Seen)
		}
		if q == 0 {
			em.PeerMetrics = pm
		}
		if k > 1 {
			em.Peers = append(em.Peers, pm)
		}
		if r.val != nil {
			v, err := on(m, r.val)
			if err != nil {
				return EpochMetrics{}, err
			}
			em.Val = append(em.Val, heldOut(v))
		}
		if ep.peers.emas != nil {
			var ea EMAMetrics
			for _, set := range []*evalSet{r.test, r.val} {
				if set == nil || (set == r.test && !tested) {
					continue
				}
				v, err := on(ep.peers.emas[q], set)
				if err != nil {
					return EpochMetrics{}, err
				}
				h := heldOut(v)
				if set == r.test {
					ea.Test = &h
				} else {
					ea.Val = &h
				}
			}
			em.EMA = append(em.EMA, ea)
		}
	}
	em.EvalSeconds = time.Since(te).Seconds()
	if em.EvalSeconds > 0 {
		em.EvalImgPerSec = float64(images) / em.EvalSeconds
	}
	if r.sel != nil && s == len(r.stages)-1 {
		if err := r.sel.observe(&em, ep.peers); err != nil {
			return EpochMetrics{}, err
		}
	}
	return em, nil
}
