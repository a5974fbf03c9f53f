// Package api holds the Go types and interfaces of the plugin protocol. Plugin
// authors see them through package sdk (type aliases); they live here so the
// shims in plugins/internal/shim and sdk.Serve can share them without an
// import cycle.
package api

import (
	"context"
	"errors"
	"io"

	"github.com/lcl-project/lcl/internal/coefs"
)

// Strategy decides, stage by stage and epoch by epoch, what each training
// example is trained on. The host calls Describe, then Begin once per run,
// then Plan for every epoch of every stage (every step when Stage.PerStep),
// Observe after every epoch, and Features after a stage that asks for them.
type Strategy interface {
	Describe(ctx context.Context) (StrategyInfo, error)
	Begin(ctx context.Context, run Run) ([]Stage, error)
	Plan(ctx context.Context, at PlanAt) (*Plan, error)
	Observe(ctx context.Context, m Metrics) error
	// Features receives every training example's features, chunk by chunk,
	// from the model trained in a stage with Stage.Features set.
	Features(ctx context.Context, chunks FeatureStream) error
}

// SimilaritySource computes a C×C class similarity matrix for a label set.
type SimilaritySource interface {
	Describe(ctx context.Context) (SourceInfo, error)
	Compute(ctx context.Context, req SimilarityRequest) (*Matrix, error)
}

// Param describes a parameter: its name as given on the command line
// (--param name=value), its type, its default as a string (checked against
// the type by ParseParams), and one line of help.
type Param struct {
	Name    string    `json:"name"`
	Type    ParamType `json:"type"`
	Default string    `json:"default"`
	Help    string    `json:"help"`
}

// ParamType is the type of a parameter's value. Its strings are what the
// protocol and `lcl plugins list --json` carry.
type ParamType string

// The parameter types. A Param whose Type is "" is a string.
const (
	ParamFloat  ParamType = "float"
	ParamInt    ParamType = "int"
	ParamBool   ParamType = "bool"
	ParamString ParamType = "string"
	// ParamFloats is a comma-separated list of floats ("" is an empty list).
	ParamFloats ParamType = "floats"
)

// StrategyInfo is what a strategy says about itself.
type StrategyInfo struct {
	Name            string   `json:"name"`
	Version         string   `json:"version"`
	Summary         string   `json:"summary"`
	Params          []Param  `json:"params"`
	MaxPeers        int      `json:"models"` // most peers a stage trains (proto and JSON: models)
	Stages          []string `json:"stages"`
	NeedsSimilarity bool     `json:"needs_similarity"`
}

// SourceInfo is what a similarity source says about itself.
type SourceInfo struct {
	Name            string  `json:"name"`
	Version         string  `json:"version"`
	Summary         string  `json:"summary"`
	Params          []Param `json:"params"`
	NeedsAttributes bool    `json:"needs_attributes"`
}

// Matrix is a Rows×Cols matrix of float32, row-major.
//
// A matrix holds its values (Data) or computes them row by row (Fill, with
// Data nil): a strategy returns its targets that way so the SDK writes each
// row as it is made, and 21,843-class targets (1.9 GB) never exist whole in
// the plugin. Matrices a plugin receives always hold their values.
type Matrix struct {
	Rows, Cols int
	Data       []float32
	// Fill, used when Data is nil, writes row i into dst (Cols values).
	Fill func(i int, dst []float32)
}

// NewMatrix returns a zero rows×cols matrix.
func NewMatrix(rows, cols int) *Matrix {
	return &Matrix{Rows: rows, Cols: cols, Data: make([]float32, rows*cols)}
}

// NewRowMatrix returns a rows×cols matrix whose rows fill computes on
// demand (see Matrix).
func NewRowMatrix(rows, cols int, fill func(i int, dst []float32)) *Matrix {
	return &Matrix{Rows: rows, Cols: cols, Fill: fill}
}

// At returns element (i, j) (of a Fill matrix: by computing row i).
func (m *Matrix) At(i, j int) float32 {
	if m.Data == nil && m.Fill != nil {
		return m.Row(i)[j]
	}
	return m.Data[i*m.Cols+j]
}

// Set sets element (i, j) of a matrix that holds its values.
func (m *Matrix) Set(i, j int, v float32) { m.Data[i*m.Cols+j] = v }

// Row returns row i: sharing Data's storage, or (Fill) freshly computed.
func (m *Matrix) Row(i int) []float32 {
	if m.Data == nil && m.Fill != nil {
		dst := make([]float32, m.Cols)
		m.Fill(i, dst)
		return dst
	}
	return m.Data[i*m.Cols : (i+1)*m.Cols]
}

// RowInto returns row i: Data's row (shared, dst unused) or, for a Fill
// matrix, dst filled with it.
func (m *Matrix) RowInto(i int, dst []float32) []float32 {
	if m.Data == nil && m.Fill != nil {
		dst = dst[:m.Cols]
		m.Fill(i, dst)
		return dst
	}
	return m.Data[i*m.Cols : (i+1)*m.Cols]
}

// Dense returns m holding its values: m itself, or a Fill matrix computed.
func (m *Matrix) Dense() *Matrix {
	if m == nil || m.Data != nil || m.Fill == nil {
		return m
	}
	d := NewMatrix(m.Rows, m.Cols)
	for i := 0; i < m.Rows; i++ {
		m.Fill(i, d.Data[i*m.Cols:(i+1)*m.Cols])
	}
	return d
}

// Clone returns a deep copy holding its values.
func (m *Matrix) Clone() *Matrix {
	if m == nil {
		return nil
	}
	if m.Data == nil && m.Fill != nil {
		return m.Dense()
	}
	return &Matrix{Rows: m.Rows, Cols: m.Cols, Data: append([]float32(nil), m.Data...)}
}

// Class is one class of a label set.
type Class struct {
	Index int
	ID    string
	Name  string
	WNID  string // "" when the label set has no WordNet mapping
}

// Attributes are per-class attribute values: Values is C×len(Names), NaN = missing.
type Attributes struct {
	Name   string
	Names  []string
	Values *Matrix
}

// Node is one node of a label set's own class hierarchy.
type Node struct {
	ID, Name, Parent string // Parent "" for a root
}

// SimilarityRequest asks a source for the matrix of a label set.
type SimilarityRequest struct {
	LabelSet   string
	Classes    []Class
	Attributes []Attributes
	Hierarchy  []Node // nil when the label set has none
	Params     map[string]string
}

// Run is what a strategy learns at the start of a training run.
type Run struct {
	Classes []Class
	// Similarity is C×C, nil unless the strategy needs one. Treat it as
	// read-only: it may be the host's own matrix.
	Similarity    *Matrix
	NumExamples   int
	Labels        []int // class index of each training example
	Epochs        int   // epochs of a plain (sl) run; stages derive theirs
	StepsPerEpoch int   // 0 when unknown
	Model         string
	Params        map[string]string
}

// Stage is one phase of training. Stages run in order.
type Stage struct {
	Name     string
	Epochs   int
	Peers    int    // peers: the models trained together (dml: 2; proto: models)
	Teacher  int    // stage whose final model is the frozen teacher; -1 none
	Fresh    bool   // newly initialised weights, else continue the previous stage's model
	Features bool   // after this stage the host sends every example's features
	PerStep  bool   // Plan is asked every optimiser step, not once per epoch
	Model    string // architecture ("" = the run's)
	// ClassProbs asks for the class probabilities of each epoch in the
	// next epoch's PlanAt (online label smoothing).
	ClassProbs bool
	// Levels are coarser partitions of the classes, finest first, each
	// nested in the next: the trainer builds every model of the stage with
	// one more trainable linear head per level on the head's input features
	// (HAF's level heads; Coefs.Consistency, Dissimilar and Geometric need
	// them). Constant for the stage, since the heads exist before the
	// optimizer, a resumed checkpoint and the moving average are made.
	Levels []Level
}

// Level is one partition of the classes into Groups groups: Group[c] is
// the group of class c, in [0, Groups); every group holds a class.
type Level struct {
	Groups int
	Group  []int
}

// PlanAt says which plan is asked for; Epoch and Step are 0-based within the
// stage and the epoch.
type PlanAt struct {
	Stage, Epoch, Step int
	// With Stage.ClassProbs, from epoch 1 on: over the training examples
	// the stage's first model classified correctly in the epoch before,
	// the sums of their softmax outputs by true class (C×C row-major, row =
	// true class) and their number per class (C); nil otherwise.
	ClassProbSums []float64
	ClassCounts   []int64
}

// Coefs weight each model's loss terms (per-sample sum over classes,
// batch mean):
//
//	SoftCE·CE(Targets[y], p) + HardCE·CE(onehot(y), p)
//	+ KD·T²·KL(softmax(teacher/T) ‖ softmax(student/T))     (T = KDTemperature)
//	+ Mutual·mean_peers KL(p_peer ‖ p_self)     (peer predictions held constant)
//	+ Group·(−Σ_g W[y,g]·log Σ_{c∈g} p_c)       (Plan.Groups)
//	+ Cosine·Σ_c (cos(f, V_c) − cos(V_y, V_c))²  (Plan.Classifier V)
//	+ Consistency·Σ_l JSD(level l−1 summed into level l, level l)   (Stage.Levels)
//
// and HAF's two batch terms, Dissimilar and Geometric (internal/coefs).
// With per-example weights w the batch loss is Σ w·l / Σ w (the trainer's rule).
// Coefs is the one Go form of the coefficients (internal/coefs), which the
// trainer uses too; on the wire it is the message Coefficients (its fields'
// `proto` tags name them; KDTemperature is `temperature`, unrenamed, so
// plugins in other languages keep their code).
type Coefs = coefs.Coefs

// Plan is what to train on for one epoch (or step) of a stage.
type Plan struct {
	// Targets is C×C: row y is the target distribution of an example of
	// class y. Nil means one-hot. A Fill matrix is computed row by row as it
	// is sent, before Plan's answer leaves the plugin.
	Targets *Matrix
	// Weights are per-example loss weights (len = number of examples); nil = all 1.
	Weights []float64
	// Subset lists the example indices trained this epoch; nil = all.
	Subset []int
	Coefs  Coefs
	// Groups are the class groups of the group term (Coefs.Group), nil
	// when it is 0. On the wire: the message ClassGroups.
	Groups *Groups
	// Classifier, when not nil, is a fixed classifier: C×k class vectors
	// (row c: class c's), k at most the model's feature width. The trainer
	// maps them into the feature space by a fixed random orthonormal map
	// (their norms and cosines kept), sets the model's head (one linear
	// layer) to them with a zero bias and does not train it. The cosine
	// term (Coefs.Cosine) needs it.
	Classifier *Matrix
}

// Groups are class groups and the weights of their log-probabilities: the
// group term of an example of class y is −Σ_g W[y,g]·log Σ_{c∈g} p_c.
// MBM's hierarchical cross-entropy (the built-in hxe) is a group per node
// of the class hierarchy with W the weights along y's path.
type Groups struct {
	// Members lists the classes of each group (G = len(Members)).
	Members [][]int
	// Weights are W's entries (C×G); W is 0 elsewhere.
	Weights []GroupWeight
}

// GroupWeight is one entry W[Class][Group] of the group term's weights.
type GroupWeight struct {
	Class, Group int
	W            float64
}

// Metrics are one peer's figures after an epoch (Peer: proto field model).
type Metrics struct {
	Stage, Epoch, Peer int
	Values             map[string]float64
}

// FeatureChunk holds the features of some examples: Data is len(Indices)×Dim.
type FeatureChunk struct {
	Stage, Peer, Dim int
	Indices          []int
	Data             []float32
}

// FeatureStream yields chunks until it returns io.EOF.
type FeatureStream interface {
	Next() (*FeatureChunk, error)
}

// ChunkSlice is a FeatureStream over chunks already in memory.
type ChunkSlice []*FeatureChunk

// Next implements FeatureStream; it consumes the slice.
func (s *ChunkSlice) Next() (*FeatureChunk, error) {
	if len(*s) == 0 {
		return nil, io.EOF
	}
	c := (*s)[0]
	*s = (*s)[1:]
	return c, nil
}

// ErrNoFeatures is returned by Features of a strategy that asks for none.
var ErrNoFeatures = errors.New("this strategy takes no features")
