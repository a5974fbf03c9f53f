package curriculum

import (
	"context"

	"github.com/lcl-project/lcl/internal/coefs"
	"github.com/lcl-project/lcl/plugins/sdk"
)

// Stage is one phase of a run: Peers models (K ≥ 1) trained together for
// Epochs epochs. A later stage may use the final model (peer 0) of an earlier
// stage as a frozen Teacher, or ask for its penultimate features through
// PlanContext.Features.
type Stage struct {
	Name    string
	Epochs  int    // 0 = the run's epoch count
	Peers   int    // 0 = 1
	Teacher string // name of an earlier stage, "" for none
	// Model is the architecture of this stage's models (a models registry
	// name such as "resnet34" or "cnn:channels=16x32"); "" means the run's
	// model. KD uses it for a teacher of another architecture.
	Model string
	// PerStep asks the planner again before every optimiser step, with
	// PlanContext.Step set, and trains that step on the new plan's Targets
	// (the epoch's weights, subset and coefficients stay those of step 0).
	// LCL's optional per-iteration update uses it.
	PerStep bool
	// ClassProbs asks for the class probabilities of each epoch in the
	// next epoch's PlanContext (ClassProbSums, ClassCounts): online label
	// smoothing's targets are made of them.
	ClassProbs bool
	// Levels are coarser partitions of the classes, finest first, each
	// nested in the next (sdk.Stage.Levels): every model of the stage gets
	// one more trainable linear head per level (HAF's).
	Levels []Level
}

// Level is one partition of the classes (sdk.Level): Group[c] is the group
// of class c, in [0, Groups).
type Level = sdk.Level

// Plan is what a Planner decides for one epoch, in the trainer's terms:
// float32 values indexed by the training data set's examples.
type Plan struct {
	// Targets is the C×C row-major soft-target matrix: row y is the target of
	// an example labelled y. nil means one-hot.
	Targets []float32
	// Weights holds one weight per example of the training dataset, indexed by
	// example index (len = Dataset.Len()); nil means uniform.
	Weights []float32
	// Subset restricts this epoch to these example indices (CurriculumNet);
	// nil means the run's whole training set.
	Subset []int
	// Coefs weighs the loss terms; the zero value means SoftCE = 1.
	Coefs Coefs
	// Classifier, when not nil, is a fixed classifier: C×ClassifierDim
	// class vectors, row-major (sdk.Plan.Classifier), which the trainer maps
	// into the feature space and fixes the model's head to.
	Classifier    []float32
	ClassifierDim int
	// Groups are the class groups of the group term (Coefs.Group); nil
	// when the term is off. The trainer puts them on the device with each
	// plan (dense: at most MaxGroupCells groups × classes).
	Groups *Groups
}

// Groups are class groups and the weights of their log-probabilities: the
// group term of the loss is −Σ_g W[y,g]·log Σ_{c∈g} p_c for an example of
// class y. MBM's hierarchical cross-entropy is such a term: a group per
// node of the class hierarchy, W the edge weights along y's path.
type Groups struct {
	// Members lists the classes of each group (G = len(Members)).
	Members [][]int32
	// Weights are W's entries; W is 0 elsewhere.
	Weights []GroupWeight
}

// MaxGroupCells bounds the groups × classes of a plan's Groups (the
// plugin host refuses more: sdk.MaxGroupCells).
const MaxGroupCells = sdk.MaxGroupCells

// GroupWeight is one entry W[Class, Group] of the group term's weights.
type GroupWeight struct {
	Class, Group int32
	W            float32
}

// Coefs weighs the terms of the per-example training loss
//
//	SoftCE·(−Σ_j T_yj log p_j) + HardCE·(−log p_y) + Group·(−Σ_g W_yg log Σ_{c∈g} p_c)
//	+ KD·τ²·KL(q_τ‖p_τ) + Mutual·mean_peers KL(p_peer‖p)
//
// with τ = KDTemperature: the one Go form (internal/coefs, which documents
// the terms), the same type as a plugin's sdk.Coefs and the engine's
// trainer/torch.Coefs, so a plan's coefficients pass unconverted.
type Coefs = coefs.Coefs

// PlanContext tells the planner where the run stands.
type PlanContext struct {
	Stage      Stage
	StageIndex int
	Epoch      int // 0-based within the stage
	Epochs     int // of the stage
	Step       int // 0-based optimiser step within the epoch (0 for the epoch's plan)
	Steps      int // optimiser steps per epoch over the run's training set
	NumClasses int
	// Classes names the classes in label order when the dataset knows them
	// (it has a Classes() []string method); nil otherwise.
	Classes []string
	// Train holds the run's training example indices (after --fraction).
	Train []int
	// Label returns the label of training example i.
	Label func(i int) int
	// Features returns the penultimate features of the final model of an
	// earlier stage for the given training examples (evaluation mode, no
	// augmentation), one row per index.
	Features FeatureFunc
	// With Stage.ClassProbs, from the stage's second epoch on: over the
	// training examples the stage's first model classified correctly in
	// the epoch before (training mode, as the step saw them), the sums of
	// their softmax outputs by true class (C×C row-major, row = true class)
	// and their number per class. nil otherwise.
	ClassProbSums []float64
	ClassCounts   []int64
}

// FeatureFunc returns the features of a finished stage's final model for the
// given dataset indices, one row per index.
type FeatureFunc func(ctx context.Context, stage string, indices []int) ([][]float32, error)

// Planner decides targets, weights, subsets and loss terms: a training
// strategy as the trainer sees it. Plan is called at the start of every
// epoch, also after a resume, so it must be a function of the context (and
// of the state restored by a StatefulPlanner).
type Planner interface {
	Stages() []Stage
	Plan(ctx context.Context, pc PlanContext) (Plan, error)
}

// StatefulPlanner is a Planner whose state goes into checkpoints.
type StatefulPlanner interface {
	Planner
	MarshalState() ([]byte, error)
	UnmarshalState([]byte) error
}

// Observation is a finished epoch as a planner is told it.
type Observation struct {
	StageIndex int
	Epoch      int // 1-based within the stage
	LR         float64
	// Peers holds each peer's metrics (one entry for a single model).
	Peers []PeerMetrics
}

// PeerMetrics are one model's results of an epoch.
type PeerMetrics struct {
	TrainLoss, TrainTop1, TestTop1, TestTop5, TestLoss float64
	// Untested says the epoch did not evaluate the test set (model
	// selection without --test-every-epoch, or an epoch --test-every
	// skips): its test figures are not
	// zeros but absent, and the strategy is not sent them.
	Untested bool
	// Val holds the figures on the validation split (--val-fraction);
	// nil without one.
	Val *ValMetrics
}

// ValMetrics are a model's figures on the validation split.
type ValMetrics struct {
	Top1, Top5, Loss float64
}
