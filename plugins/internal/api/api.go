// Package api holds the Go types and interfaces of the plugin protocol. Plugin
// authors see them through package sdk (type aliases); they live here so the
// shims in plugins/internal/shim and sdk.Serve can share them without an
// import cycle.
package api

import (
	"context"
	"errors"
	"io"
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
// (--param name=value), its type (float, int, bool, string, floats), its
// default as a string, and one line of help.
type Param struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Default string `json:"default"`
	Help    string `json:"help"`
}

// StrategyInfo is what a strategy says about itself.
type StrategyInfo struct {
	Name            string   `json:"name"`
	Version         string   `json:"version"`
	Summary         string   `json:"summary"`
	Params          []Param  `json:"params"`
	Models          int      `json:"models"` // most models trained at once
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

// Matrix is a Rows×Cols matrix of float64, row-major.
type Matrix struct {
	Rows, Cols int
	Data       []float64
}

// NewMatrix returns a zero rows×cols matrix.
func NewMatrix(rows, cols int) *Matrix {
	return &Matrix{Rows: rows, Cols: cols, Data: make([]float64, rows*cols)}
}

// At returns element (i, j).
func (m *Matrix) At(i, j int) float64 { return m.Data[i*m.Cols+j] }

// Set sets element (i, j).
func (m *Matrix) Set(i, j int, v float64) { m.Data[i*m.Cols+j] = v }

// Row returns row i, sharing storage.
func (m *Matrix) Row(i int) []float64 { return m.Data[i*m.Cols : (i+1)*m.Cols] }

// Clone returns a deep copy.
func (m *Matrix) Clone() *Matrix {
	if m == nil {
		return nil
	}
	return &Matrix{Rows: m.Rows, Cols: m.Cols, Data: append([]float64(nil), m.Data...)}
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
	Classes       []Class
	Similarity    *Matrix // C×C, nil unless the strategy needs one
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
	Models   int    // models trained together (dml: 2)
	Teacher  int    // stage whose final model is the frozen teacher; -1 none
	Fresh    bool   // newly initialised weights, else continue the previous stage's model
	Features bool   // after this stage the host sends every example's features
	PerStep  bool   // Plan is asked every optimiser step, not once per epoch
	Model    string // architecture ("" = the run's)
}

// PlanAt says which plan is asked for; Epoch and Step are 0-based within the
// stage and the epoch.
type PlanAt struct {
	Stage, Epoch, Step int
}

// Coefficients weight each model's loss terms (per-sample sum over classes,
// batch mean):
//
//	SoftCE·CE(Targets[y], p) + HardCE·CE(onehot(y), p)
//	+ KD·T²·KL(softmax(teacher/T) ‖ softmax(student/T))
//	+ Mutual·mean_peers KL(p_peer ‖ p_self)     (peer predictions held constant)
//
// With per-example weights w the batch loss is Σ w·l / Σ w (the trainer's rule).
type Coefficients struct {
	SoftCE, HardCE, KD, Temperature, Mutual float64
}

// Plan is what to train on for one epoch (or step) of a stage.
type Plan struct {
	// Targets is C×C: row y is the target distribution of an example of
	// class y. Nil means one-hot.
	Targets *Matrix
	// Weights are per-example loss weights (len = number of examples); nil = all 1.
	Weights []float64
	// Subset lists the example indices trained this epoch; nil = all.
	Subset []int
	Coef   Coefficients
}

// Metrics are one model's figures after an epoch.
type Metrics struct {
	Stage, Epoch, Model int
	Values              map[string]float64
}

// FeatureChunk holds the features of some examples: Data is len(Indices)×Dim.
type FeatureChunk struct {
	Stage, Model, Dim int
	Indices           []int
	Data              []float32
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
