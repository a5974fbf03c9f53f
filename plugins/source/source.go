// Package source serves lcl's built-in similarity sources — semantic,
// visual, simrank, lca and matrix from package similarity — as
// sdk.SimilaritySource implementations, so the lcl binary re-executed as a
// plugin offers them over the same protocol as any third-party source.
//
// A served source runs in its own process: it opens WordNet from
// $LCL_PLUGIN_WORDNET (else $WNHOME, else the Debian path) and the store
// read-only from $LCL_PLUGIN_STORE (else the default folder) when it first
// needs them; the host sets both (Host.Env) and must not hold the store open
// meanwhile (Badger allows one writer or several readers).
package source

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/wordnet"
)

// Version is the built-in sources' version, reported by Describe.
const Version = "1.0.0"

// Environment variables a served built-in reads.
const (
	EnvWordNet = "LCL_PLUGIN_WORDNET"
	EnvStore   = "LCL_PLUGIN_STORE"
)

// Names lists the built-in sources.
func Names() []string {
	specs := similarity.Builtins()
	out := make([]string, 0, len(specs))
	for n := range specs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New returns a built-in source by name, or false.
func New(name string) (sdk.SimilaritySource, bool) {
	b, ok := similarity.Builtins()[name]
	if !ok {
		return nil, false
	}
	e := &env{}
	return &Source{name: name, spec: b.Spec, src: b.New(similarity.Deps{WordNet: e.wordNet, Vectors: e})}, true
}

// Source serves one similarity.Source.
type Source struct {
	name string
	spec similarity.Spec
	src  similarity.Source
}

func (s *Source) Describe(context.Context) (sdk.SourceInfo, error) {
	sp := s.spec
	params := make([]sdk.Param, len(sp.Params))
	for i, q := range sp.Params {
		params[i] = sdk.Param{Name: q.Name, Type: sdk.ParamType(q.Type), Default: q.Default, Help: q.Help}
	}
	return sdk.SourceInfo{Name: s.name, Version: Version, Summary: sp.Summary, Params: params,
		NeedsAttributes: sp.NeedsAttributes}, nil
}

// Compute rebuilds the label set from the request and runs the source with
// package similarity's checks and normalisation.
func (s *Source) Compute(ctx context.Context, req sdk.SimilarityRequest) (*sdk.Matrix, error) {
	set := &labels.Set{Name: req.LabelSet}
	for _, c := range req.Classes {
		set.Classes = append(set.Classes, labels.Class{Index: c.Index, ID: c.ID, Name: c.Name, WNID: c.WNID})
	}
	for _, n := range req.Hierarchy {
		set.Hierarchy = append(set.Hierarchy, labels.Node{ID: n.ID, Name: n.Name, Parent: n.Parent})
	}
	for _, a := range req.Attributes {
		if set.Attributes == nil {
			set.Attributes = map[string]*labels.Attributes{}
		}
		la := &labels.Attributes{Names: a.Names}
		if a.Values != nil {
			for i := 0; i < a.Values.Rows; i++ {
				row := make([]float64, a.Values.Cols)
				for j, x := range a.Values.Row(i) {
					row[j] = float64(x)
				}
				la.Values = append(la.Values, row)
			}
		}
		set.Attributes[a.Name] = la
	}
	res, err := similarity.Compute(ctx, s.src, set, req.Params)
	if err != nil {
		return nil, err
	}
	c := len(req.Classes)
	return &sdk.Matrix{Rows: c, Cols: c, Data: res.Data}, nil
}

// env opens WordNet and the store on first use.
type env struct {
	mu    sync.Mutex
	wn    *wordnet.DB
	store *simstore.Store
}

func (e *env) wordNet() (*wordnet.DB, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wn == nil {
		wn, err := wordnet.Open(os.Getenv(EnvWordNet))
		if err != nil {
			return nil, err
		}
		e.wn = wn
	}
	return e.wn, nil
}

func (e *env) open() (*simstore.Store, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.store == nil {
		dir := os.Getenv(EnvStore)
		if dir == "" {
			dir = simstore.DefaultDir()
		}
		// No store yet reads as an empty one (nothing is created): the
		// sources then say what is missing and which command makes it.
		st, err := simstore.Open(dir, simstore.ReadOnly(), simstore.EmptyIfMissing())
		if err != nil {
			return nil, fmt.Errorf("semantic source: %w", err)
		}
		e.store = st
	}
	return e.store, nil
}

func (e *env) GetVectors(ctx context.Context, labelSet, model string) (*simstore.Vectors, error) {
	st, err := e.open()
	if err != nil {
		return nil, err
	}
	return st.GetVectors(ctx, labelSet, model)
}

func (e *env) List(ctx context.Context, kind string) ([]simstore.Entry, error) {
	st, err := e.open()
	if err != nil {
		return nil, err
	}
	return st.List(ctx, kind)
}
