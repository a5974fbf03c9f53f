package plugins

import (
	"context"
	"sort"
	"sync"

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
	// Describe them a few at a time: each is a process start and a handshake.
	out := make([]Descriptor, len(items))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = h.describe(ctx, it.kind, it.name)
		}()
	}
	wg.Wait()
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind == KindStrategy
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// describe starts one plugin, asks it to describe itself and stops it.
func (h *Host) describe(ctx context.Context, kind, name string) Descriptor {
	d := Descriptor{Kind: kind, Name: name}
	d.Path, _ = h.Resolve(kind, name)
	switch kind {
	case KindStrategy:
		s, err := h.Strategy(name)
		if err != nil {
			d.Error = err.Error()
			return d
		}
		defer s.Close()
		info, err := s.Describe(ctx)
		if err != nil {
			d.Error = err.Error()
			return d
		}
		d.Version, d.Summary, d.Params = info.Version, info.Summary, info.Params
	case KindSimilarity:
		s, err := h.Source(name)
		if err != nil {
			d.Error = err.Error()
			return d
		}
		defer s.Close()
		info, err := s.Describe(ctx)
		if err != nil {
			d.Error = err.Error()
			return d
		}
		d.Version, d.Summary, d.Params = info.Version, info.Summary, info.Params
	}
	return d
}
