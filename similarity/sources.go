package similarity

import (
	"fmt"
	"sort"
	"strings"
)

// Deps are what the built-in sources need from their host.
type Deps struct {
	WordNet WordNetFunc // for graph wordnet
	Vectors VectorStore // for semantic
}

// Builtin returns the built-in sources by name.
func Builtin(d Deps) map[string]Source {
	return map[string]Source{
		"semantic": Semantic{Store: d.Vectors},
		"visual":   Visual{},
		"simrank":  SimRankSource{WordNet: d.WordNet},
		"lca":      LCA{WordNet: d.WordNet},
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
