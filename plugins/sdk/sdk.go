// Package sdk is what a plugin author imports: the Strategy and
// SimilaritySource interfaces, their Go types, parameter helpers, plan
// checks, and Serve, which runs an implementation as an lcl plugin. A
// plugin's main is one call:
//
//	func main() { sdk.Serve(sdk.ServeConfig{Strategy: &myStrategy{}}) }
//
// The executable must be named lcl-strategy-NAME or lcl-similarity-NAME and
// sit in $LCL_PLUGIN_PATH or ~/.lcl/plugins. The host sees a remote plugin
// through the same interfaces, and lcl's built-in strategies implement them
// in-process too. See docs/plugins.md.
package sdk

import (
	"context"

	"github.com/lcl-project/lcl/plugins/internal/api"
)

// The protocol's Go types; see their documentation in the aliased package.
type (
	// Strategy decides, stage by stage and epoch by epoch, what each training
	// example is trained on. The host calls Describe, then Begin once per run,
	// then Plan for every epoch of every stage (every step when Stage.PerStep),
	// Observe after every epoch, and Features after a stage that asks for them.
	Strategy = api.Strategy
	// SimilaritySource computes a C×C class similarity matrix for a label set.
	SimilaritySource = api.SimilaritySource

	Param             = api.Param
	ParamType         = api.ParamType
	StrategyInfo      = api.StrategyInfo
	SourceInfo        = api.SourceInfo
	Matrix            = api.Matrix
	Class             = api.Class
	Attributes        = api.Attributes
	SimilarityRequest = api.SimilarityRequest
	Node              = api.Node
	Run               = api.Run
	Stage             = api.Stage
	Level             = api.Level
	PlanAt            = api.PlanAt
	Coefs             = api.Coefs
	Plan              = api.Plan
	Groups            = api.Groups
	GroupWeight       = api.GroupWeight
	Metrics           = api.Metrics
	FeatureChunk      = api.FeatureChunk
	FeatureStream     = api.FeatureStream
	ChunkSlice        = api.ChunkSlice
	Values            = api.Values
	// UnknownParamError is ParseParams' error for a parameter not declared.
	UnknownParamError = api.UnknownParamError
)

// The parameter types (Param.Type).
const (
	ParamFloat  = api.ParamFloat
	ParamInt    = api.ParamInt
	ParamBool   = api.ParamBool
	ParamString = api.ParamString
	ParamFloats = api.ParamFloats
)

// Base is embedded in a strategy to supply the calls most strategies do not
// need: Observe ignores the metrics and Features answers ErrNoFeatures (the
// host only sends features to a stage that sets Stage.Features). With it a
// strategy writes Describe, Begin and Plan:
//
//	type myStrategy struct {
//		sdk.Base
//		...
//	}
type Base struct{}

// Observe ignores the metrics.
func (Base) Observe(context.Context, Metrics) error { return nil }

// Features answers ErrNoFeatures: a strategy that embeds Base and sets
// Stage.Features overrides it.
func (Base) Features(context.Context, FeatureStream) error { return ErrNoFeatures }

// ErrNoFeatures is what Features returns in a strategy that asks for none.
var ErrNoFeatures = api.ErrNoFeatures

// RowSumTolerance is how far a target row may sum from 1.
const RowSumTolerance = api.RowSumTolerance

// MaxGroupCells bounds the product of a plan's group count and class
// count (Plan.Groups): the trainer holds the groups as dense matrices.
const MaxGroupCells = api.MaxGroupCells

// NewMatrix returns a zero rows×cols matrix.
func NewMatrix(rows, cols int) *Matrix { return api.NewMatrix(rows, cols) }

// NewRowMatrix returns a rows×cols matrix whose rows fill computes when the
// SDK sends it (a strategy's large targets: they are never held whole).
// fill may be called for several rows at once from different goroutines.
func NewRowMatrix(rows, cols int, fill func(i int, dst []float32)) *Matrix {
	return api.NewRowMatrix(rows, cols, fill)
}

// ParseParams checks specs (unique names, known types, every default valid
// for its type), then raw (name → value) against them, and fills in
// defaults; unknown names and values of the wrong type are errors naming the
// parameter. Read the values with the getters, then check Values.Err, which
// reports a name the code read that no Param declares.
func ParseParams(specs []Param, raw map[string]string) (*Values, error) {
	return api.ParseParams(specs, raw)
}

// ValidatePlan is the host's check of every plan: targets C×C, finite,
// non-negative, rows summing to 1; one weight per example; subset indices in
// range and distinct; sane coefficients. Plugins may call it on their own plans.
func ValidatePlan(p *Plan, classes, examples, peers int) error {
	return api.ValidatePlan(p, classes, examples, peers)
}

// ValidStageName reports whether a stage name is plain: 1 to 64 letters,
// digits, '_', '-' or '.', starting with a letter or digit. Stage names
// become folder names (lcl plan writes OUT/STAGE/).
func ValidStageName(name string) bool { return api.ValidStageName(name) }

// ValidateStages checks what Begin returned.
func ValidateStages(stages []Stage) error { return api.ValidateStages(stages) }

// MaxLevels bounds a stage's levels (Stage.Levels).
const MaxLevels = api.MaxLevels

// ValidateLevels checks a stage's levels for c classes: at most MaxLevels,
// each a partition into 2 to c groups, every group used, each nested in the
// next.
func ValidateLevels(levels []Level, c int) error { return api.ValidateLevels(levels, c) }

// ValidateSimilarity checks a similarity matrix for c classes: c×c and finite.
func ValidateSimilarity(m *Matrix, c int) error { return api.ValidateSimilarity(m, c) }
