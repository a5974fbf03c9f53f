package similarity

import (
	"fmt"
	"sort"
	"strings"
)

// Deps are what the built-in sources need from their host.
type Deps struct {
	WordNet  WordNetFunc  // for graph wordnet
	Vectors  VectorStore  // for semantic
	Progress ProgressFunc // optional: progress of long computations
	// MaxMemory bounds what a source may plan to hold, in bytes (0:
	// DefaultMaxMemory); a larger computation is refused up front.
	MaxMemory int64
}

// Progress receives units of finished work; Finish ends the report.
type Progress interface {
	Add(n int) error
	Finish() error
}

// ProgressFunc starts a progress report of total units (−1: unknown).
type ProgressFunc func(total int64, desc string) Progress

func (f ProgressFunc) start(total int64, desc string) Progress {
	if f == nil {
		return noProgress{}
	}
	return f(total, desc)
}

type noProgress struct{}

func (noProgress) Add(int) error { return nil }
func (noProgress) Finish() error { return nil }

// A Builtin is a built-in source: its Spec (what it computes, its
// parameters with their defaults) and how it is made from its host's
// dependencies.
type Builtin struct {
	Spec
	New func(d Deps) Source
}

// Builtins are the built-in sources by name: the one place each is
// described (its parameters' defaults are written here only; lcl
// similarity's flags and the served plugins' Describe read them).
func Builtins() map[string]Builtin {
	return map[string]Builtin{
		"semantic": {Spec{Summary: "cosine of the class vectors from `lcl embed` (doc2vec of each class's article)", Params: []Param{
			{Name: "model", Type: "string", Help: "embedding model id (default: the label set's most recent vectors)"}}},
			func(d Deps) Source { return Semantic{Store: d.Vectors, Progress: d.Progress, MaxMemory: d.MaxMemory} }},
		"visual": {Spec{Summary: "cosine of per-class attribute vectors (AwA2, CUB)", NeedsAttributes: true, Params: []Param{
			{Name: "attributes", Type: "string", Default: "continuous", Help: "built-in attribute matrix of the label set (continuous, binary) or a FILE of C rows × A columns"},
			{Name: "missing", Type: "string", Default: MissingMean, Help: "missing attribute values: mean (of the attribute over the other classes) or zero"}}},
			func(Deps) Source { return Visual{} }},
		"simrank": {Spec{Summary: "SimRank on a label graph", Params: []Param{
			graphParam,
			{Name: "decay", Type: "float", Default: "0.8", Help: "decay factor C in (0,1) (networkx uses 0.9)"},
			{Name: "iterations", Type: "int", Default: "1000", Help: "maximum iterations"},
			{Name: "tolerance", Type: "float", Default: "1e-06", Help: "stop when no score changes by more than this"},
			{Name: "variant", Type: "string", Default: VariantJehWidom, Help: "jeh-widom, star (SimRank*, Yu et al. 2013) or undirected (undirected graph with self-loops)"}}},
			func(d Deps) Source {
				return SimRankSource{WordNet: d.WordNet, Progress: d.Progress, MaxMemory: d.MaxMemory}
			}},
		"lca": {Spec{Summary: "similarity of the lowest common ancestor in a label graph", Params: []Param{
			graphParam,
			{Name: "form", Type: "string", Default: FormWuPalmer, Help: "wup (Wu-Palmer) or height (1 − height(LCA)/max height, Bertinetto et al. 2020)"}}},
			func(d Deps) Source { return LCA{WordNet: d.WordNet, Progress: d.Progress, MaxMemory: d.MaxMemory} }},
		"matrix": {Spec{Summary: "a precomputed C×C matrix (CSV, text or .npy) in class order", Params: []Param{
			{Name: "file", Type: "string", Help: "CSV, text or .npy file with the C×C matrix in class order"}}},
			func(Deps) Source { return MatrixFile{} }},
	}
}

// graphParam is shared by simrank and lca.
var graphParam = Param{Name: "graph", Type: "string",
	Help: `wordnet, hierarchy or an edge-list FILE ("child parent" lines) (default: hierarchy where the label set has one, else wordnet)`}

// Lookup returns the built-in source called name.
func Lookup(d Deps, name string) (Source, error) {
	all := Builtins()
	if b, ok := all[name]; ok {
		return b.New(d), nil
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("unknown similarity source %q (built-in: %s)", name, strings.Join(names, ", "))
}
