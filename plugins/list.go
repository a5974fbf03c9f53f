package plugins

import (
	"context"
	"sort"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// Descriptor is one line of `lcl plugins list`.
type Descriptor struct {
	Kind    string      `json:"kind"`
	Name    string      `json:"name"`
	Version string      `json:"version,omitempty"`
	Summary string      `json:"summary,omitempty"`
	Path    string      `json:"path"` // "built-in" or the executable
	Params  []sdk.Param `json:"params,omitempty"`
	Error   string      `json:"error,omitempty"` // set when the plugin could not be described
}

// List starts every built-in and every plugin on the search path, asks
// each to describe itself and stops it. A plugin that fails is listed with
// its error rather than failing the list.
func (h *Host) List(ctx context.Context) []Descriptor {
	type item struct{ kind, name string }
	var items []item
	for _, k := range []string{KindStrategy, KindSimilarity} {
		for _, n := range BuiltinNames(k) {
			items = append(items, item{k, n})
		}
	}
	dirs := h.Dirs
	if dirs == nil {
		dirs = SearchPath()
	}
	for _, f := range Discover(dirs) {
		if !isBuiltin(f.Kind, f.Name) {
			items = append(items, item{f.Kind, f.Name})
		}
	}
	out := make([]Descriptor, 0, len(items))
	for _, it := range items {
		d := Descriptor{Kind: it.kind, Name: it.name}
		d.Path, _ = h.Resolve(it.kind, it.name)
		switch it.kind {
		case KindStrategy:
			s, err := h.Strategy(it.name)
			if err != nil {
				d.Error = err.Error()
				break
			}
			info, err := s.Describe(ctx)
			s.Close()
			if err != nil {
				d.Error = err.Error()
				break
			}
			d.Version, d.Summary, d.Params = info.Version, info.Summary, info.Params
		case KindSimilarity:
			s, err := h.Source(it.name)
			if err != nil {
				d.Error = err.Error()
				break
			}
			info, err := s.Describe(ctx)
			s.Close()
			if err != nil {
				d.Error = err.Error()
				break
			}
			d.Version, d.Summary, d.Params = info.Version, info.Summary, info.Params
		}
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind == KindStrategy
		}
		return out[i].Name < out[j].Name
	})
	return out
}
