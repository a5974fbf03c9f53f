package curriculum

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"strconv"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins/sdk"
)

// Strategy is a started strategy as the Bridge drives it: a plugin process
// (*plugins.Strategy) or a built-in in this process with a label.
type Strategy interface {
	Begin(ctx context.Context, run sdk.Run) ([]sdk.Stage, error)
	Plan(ctx context.Context, at sdk.PlanAt) (*sdk.Plan, error)
	Observe(ctx context.Context, m sdk.Metrics) error
	Features(ctx context.Context, chunks sdk.FeatureStream) error
	// Label names the strategy in messages.
	Label() string
}

// Run describes the training run a strategy plans.
type Run struct {
	// Info is the strategy's Describe answer: its version and the defaults
	// of its parameters go into Identity.
	Info   sdk.StrategyInfo
	Params map[string]string
	// Classes are the run's classes in label order.
	Classes []sdk.Class
	// Similarity is the C×C class similarity; nil for strategies without one.
	Similarity *sdk.Matrix
	// Labels holds the label of every example of the training data set.
	Labels []int
	// Train holds the data-set indices of the run's training examples (after
	// --fraction); nil means all of them.
	Train []int
	// Epochs is the run's epoch count; StepsPerEpoch its optimiser steps per
	// epoch (0 when planning without training).
	Epochs, StepsPerEpoch int
	// Model is the run's architecture.
	Model string
}

// Bridge runs a strategy for a training run whose training examples are a
// subset of a data set: the strategy sees examples 0..n−1, which are the
// data-set indices Run.Train[0..n−1]; weights and subsets are mapped back to
// data-set indices. It implements Planner.
type Bridge struct {
	st         Strategy
	run        Run
	simDigest  string // MatrixDigest of the run's similarity, "" without one
	stages     []sdk.Stage
	planner    []Stage
	train      []int // strategy example k = data-set index train[k]
	datasetLen int
	sent       map[int]bool // stages whose features the strategy has
	// observeErr is the first failed Observe (the trainer's epoch callback
	// cannot fail); the next Plan returns it, so a crashed plugin stops the run.
	observeErr error
	// bigPlans: the last plan's targets (or, before the first plan, the
	// similarity) were large (LargeTargets), so the next Plan first returns
	// the memory of what the trainer is done with (21,843 classes: 1.9 GB).
	bigPlans bool
}

// LargeTargets is the size in bytes from which the Bridge hands the memory
// of a finished plan's targets back to the system before the next plan.
const LargeTargets = 256 << 20

var _ Planner = (*Bridge)(nil)

// New begins the run on st: the strategy is told the classes, the
// similarity, the labels of the training examples and the run's length, and
// answers with its stages.
func New(ctx context.Context, st Strategy, run Run) (*Bridge, error) {
	train := run.Train
	if train == nil {
		train = make([]int, len(run.Labels))
		for i := range train {
			train[i] = i
		}
	}
	labels := make([]int, len(train))
	for k, i := range train {
		if i < 0 || i >= len(run.Labels) {
			return nil, fmt.Errorf("training index %d outside the data set (%d examples)", i, len(run.Labels))
		}
		labels[k] = run.Labels[i]
	}
	stages, err := st.Begin(ctx, sdk.Run{Classes: run.Classes, Similarity: run.Similarity, NumExamples: len(train), Labels: labels,
		Epochs: run.Epochs, StepsPerEpoch: run.StepsPerEpoch, Model: run.Model, Params: run.Params})
	if err != nil {
		return nil, err
	}
	b := &Bridge{st: st, run: run, stages: stages, train: train, datasetLen: len(run.Labels), sent: map[int]bool{}}
	if run.Similarity != nil {
		// The strategy has the matrix now: keep its digest, not the matrix
		// (1.9 GB at 21,843 classes), whose memory the first Plan returns
		// once the caller has let go of it too.
		b.simDigest = MatrixDigest(run.Similarity)
		b.bigPlans = 4*run.Similarity.Rows*run.Similarity.Cols >= LargeTargets
		b.run.Similarity = nil
	}
	for _, s := range stages {
		if err := sdk.ValidateLevels(s.Levels, len(run.Classes)); err != nil {
			return nil, fmt.Errorf("%s: stage %q: %w", st.Label(), s.Name, err)
		}
		ps := Stage{Name: s.Name, Epochs: s.Epochs, Peers: s.Peers, Model: s.Model, PerStep: s.PerStep, ClassProbs: s.ClassProbs,
			Levels: s.Levels}
		if s.Teacher >= 0 {
			ps.Teacher = stages[s.Teacher].Name
		}
		b.planner = append(b.planner, ps)
	}
	return b, nil
}

// Trainable says whether the trainer can run the strategy's stages: it
// starts every stage from fresh models, so a stage that continues the
// previous stage's model is refused.
func (b *Bridge) Trainable() error {
	for i, s := range b.stages {
		if !s.Fresh && i > 0 {
			return fmt.Errorf("%s: stage %q continues the previous stage's model, which the trainer does not support (each stage starts fresh)", b.st.Label(), s.Name)
		}
	}
	return nil
}

// Stages are the strategy's stages as the trainer runs them.
func (b *Bridge) Stages() []Stage { return b.planner }

// StrategyStages are the stages as the strategy declared them.
func (b *Bridge) StrategyStages() []sdk.Stage { return b.stages }

// Plan is the strategy's plan for the trainer: targets, weights and
// coefficients as float32, weights and subset in data-set indices. Large
// targets are the plugin's answer itself and share memory with the next
// large plan's (plugins.Strategy.Plan): the trainer is done with an epoch's
// targets once its tensor holds them.
func (b *Bridge) Plan(ctx context.Context, pc PlanContext) (Plan, error) {
	if b.observeErr != nil {
		return Plan{}, b.observeErr
	}
	if b.bigPlans {
		// The trainer asks for a plan once it is done with the last one (but
		// the epoch's, which a per-step plan leaves in use): return what is
		// free before the next C×C matrix arrives.
		debug.FreeOSMemory()
	}
	sp, err := b.StrategyPlan(ctx, sdk.PlanAt{Stage: pc.StageIndex, Epoch: pc.Epoch, Step: pc.Step,
		ClassProbSums: pc.ClassProbSums, ClassCounts: pc.ClassCounts}, pc.Features)
	if err != nil {
		return Plan{}, err
	}
	out := Plan{Subset: sp.Subset, Coefs: sp.Coefs}
	if sp.Groups != nil {
		out.Groups = toGroups(sp.Groups)
	}
	if v := sp.Classifier; v != nil {
		out.Classifier, out.ClassifierDim = v.Dense().Data, v.Cols
	}
	b.bigPlans = false
	if sp.Targets != nil {
		out.Targets = sp.Targets.Dense().Data // the plugin's answer itself: not copied
		b.bigPlans = 4*len(out.Targets) >= LargeTargets
	}
	if sp.Weights != nil {
		out.Weights = toFloat32(sp.Weights)
	}
	return out, nil
}

// StrategyPlan is the plan at (stage, epoch, step, with its class
// probabilities) as the strategy gave it (float64), with weights and subset mapped to data-set indices (weights:
// one per data-set example, 0 outside the training set). Before the first
// plan of a stage that follows one asking for features, the strategy is sent
// those features, pulled from features chunk by chunk.
func (b *Bridge) StrategyPlan(ctx context.Context, at sdk.PlanAt, features FeatureFunc) (*sdk.Plan, error) {
	s := at.Stage
	if s < 0 || s >= len(b.stages) {
		return nil, fmt.Errorf("stage %d: the strategy has %d stages", s, len(b.stages))
	}
	for prev := 0; prev < s; prev++ {
		if b.stages[prev].Features && !b.sent[prev] {
			if err := b.sendFeatures(ctx, prev, features); err != nil {
				return nil, err
			}
		}
	}
	p, err := b.st.Plan(ctx, at)
	if err != nil {
		return nil, err
	}
	if p.Weights != nil {
		w := make([]float64, b.datasetLen)
		for k, i := range b.train {
			w[i] = p.Weights[k]
		}
		p.Weights = w
	}
	if p.Subset != nil {
		sub := make([]int, len(p.Subset))
		for k, i := range p.Subset {
			sub[k] = b.train[i]
		}
		p.Subset = sub
	}
	return p, nil
}

// Observe tells the strategy about a finished epoch. It cannot fail the
// epoch: the first error is kept and returned by the next Plan.
func (b *Bridge) Observe(ctx context.Context, o Observation) {
	if b.observeErr != nil {
		return
	}
	for k, m := range o.Peers {
		v := map[string]float64{"train_loss": m.TrainLoss, "train_top1": m.TrainTop1, "lr": o.LR}
		if !m.Untested {
			v["test_top1"], v["test_top5"], v["test_loss"] = m.TestTop1, m.TestTop5, m.TestLoss
		}
		if m.Val != nil {
			v["val_top1"], v["val_top5"], v["val_loss"] = m.Val.Top1, m.Val.Top5, m.Val.Loss
		}
		err := b.st.Observe(ctx, sdk.Metrics{Stage: o.StageIndex, Epoch: o.Epoch - 1, Peer: k, Values: v})
		if err != nil {
			b.observeErr = err
			return
		}
	}
}

// Identity names what a resumed run must share with the run it continues:
// the strategy's version, its effective parameters (defaults filled in, so
// that spelling a default out on --resume is not a different run) and a
// digest of the similarity matrix.
func (b *Bridge) Identity() map[string]string {
	id := map[string]string{"strategy_version": b.run.Info.Version}
	for _, p := range b.run.Info.Params {
		id["param "+p.Name] = p.Default
	}
	for k, v := range b.run.Params {
		id["param "+k] = v
	}
	if b.simDigest != "" {
		id["similarity"] = b.simDigest
	}
	return id
}

// MatrixDigest is a short digest of a similarity matrix: its shape and the
// first 8 bytes of the SHA-256 of its values as float64 (so runs recorded
// when matrices travelled as float64 keep their identity).
func MatrixDigest(m *sdk.Matrix) string {
	h := sha256.New()
	buf := make([]byte, 0, 64<<10)
	row := make([]float32, m.Cols)
	for i := 0; i < m.Rows; i++ {
		for _, v := range m.RowInto(i, row) {
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(float64(v)))
			if len(buf) == cap(buf) {
				h.Write(buf)
				buf = buf[:0]
			}
		}
	}
	h.Write(buf)
	return fmt.Sprintf("%d×%d:%x", m.Rows, m.Cols, h.Sum(nil)[:8])
}

// featureChunk is how many examples go in one Features message.
const featureChunk = 2048

func (b *Bridge) sendFeatures(ctx context.Context, s int, features FeatureFunc) error {
	if features == nil {
		return fmt.Errorf("%s: stage %q needs the features of stage %q, which this host cannot provide", b.st.Label(), b.stages[s+1].Name, b.stages[s].Name)
	}
	if err := b.st.Features(ctx, &featureSource{ctx: ctx, b: b, stage: s, features: features}); err != nil {
		return err
	}
	b.sent[s] = true
	return nil
}

// featureSource pulls features from the trainer chunk by chunk as the
// plugin stream consumes them, so they never all sit in memory twice.
type featureSource struct {
	ctx      context.Context
	b        *Bridge
	stage    int
	features FeatureFunc
	next     int
}

func (f *featureSource) Next() (*sdk.FeatureChunk, error) {
	if f.next >= len(f.b.train) {
		return nil, io.EOF
	}
	hi := min(f.next+featureChunk, len(f.b.train))
	idx := f.b.train[f.next:hi]
	rows, err := f.features(f.ctx, f.b.stages[f.stage].Name, idx)
	if err != nil {
		return nil, err
	}
	if len(rows) != len(idx) {
		return nil, fmt.Errorf("features: %d rows for %d examples", len(rows), len(idx))
	}
	c := &sdk.FeatureChunk{Stage: f.stage, Indices: make([]int, len(idx))}
	for k := range idx {
		c.Indices[k] = f.next + k
		if k == 0 {
			c.Dim = len(rows[0])
			c.Data = make([]float32, 0, len(idx)*c.Dim)
		}
		if len(rows[k]) != c.Dim {
			return nil, fmt.Errorf("features: rows of %d and %d values", c.Dim, len(rows[k]))
		}
		c.Data = append(c.Data, rows[k]...)
	}
	f.next = hi
	return c, nil
}

// toGroups is a plan's class groups (validated) in the trainer's terms.
func toGroups(g *sdk.Groups) *Groups {
	out := &Groups{Members: make([][]int32, len(g.Members)), Weights: make([]GroupWeight, len(g.Weights))}
	for i, m := range g.Members {
		out.Members[i] = make([]int32, len(m))
		for j, c := range m {
			out.Members[i][j] = int32(c)
		}
	}
	for i, w := range g.Weights {
		out.Weights[i] = GroupWeight{Class: int32(w.Class), Group: int32(w.Group), W: float32(w.W)}
	}
	return out
}

func toFloat32[T float32 | float64](x []T) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// Classes are a label set's classes as strategies see them.
func Classes(set *labels.Set) []sdk.Class {
	out := make([]sdk.Class, len(set.Classes))
	for i, c := range set.Classes {
		out[i] = sdk.Class{Index: c.Index, ID: c.ID, Name: c.Name, WNID: c.WNID}
	}
	return out
}

// NumberedClasses are n classes without a label set: named by names (a data
// set's own class names) where given, else by their index.
func NumberedClasses(n int, names []string) []sdk.Class {
	out := make([]sdk.Class, n)
	for i := range out {
		out[i] = sdk.Class{Index: i, ID: strconv.Itoa(i), Name: strconv.Itoa(i)}
		if i < len(names) {
			out[i].ID, out[i].Name = names[i], names[i]
		}
	}
	return out
}
