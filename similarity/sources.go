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

// Builtin returns the built-in sources by name.
func Builtin(d Deps) map[string]Source {
	return map[string]Source{
		"semantic": Semantic{Store: d.Vectors, Progress: d.Progress, MaxMemory: d.MaxMemory},
		"visual":   Visual{},
		"simrank":  SimRankSource{WordNet: d.WordNet, Progress: d.Progress, MaxMemory: d.MaxMemory},
		"lca":      LCA{WordNet: d.WordNet, Progress: d.Progress, MaxMemory: d.MaxMemory},
		"matrix":   MatrixFile{},
	}
}

// Lookup returns the built-in source called name.
func Lookup(d Deps, name string) (Source, error) {
	all := Builtin(d)
	if s, ok := all[name]; ok {
		return s, nil
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("unknown similarity source %q (built-in: %s)", name, strings.Join(names, ", "))
}
