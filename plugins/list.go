package plugins

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/lcl-project/lcl/internal/crash"
	"github.com/lcl-project/lcl/internal/digest"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/source"
	"github.com/lcl-project/lcl/plugins/strategy"
)

// Descriptor is one line of `lcl plugins list`.
type Descriptor struct {
	Kind    string      `json:"kind"`
	Name    string      `json:"name"`
	Version string      `json:"version,omitempty"`
	Summary string      `json:"summary,omitempty"`
	Path    string      `json:"path"` // "built-in" or the executable
	Params  []sdk.Param `json:"params,omitempty"`
	// Refused says why lcl will not run the plugin (see CheckTrusted).
	Refused string `json:"refused,omitempty"`
	// Pin is the plugin's state in the lock file: "" (not pinned), "ok",
	// "changed" (its SHA-256 differs from the pin) or "moved" (pinned at
	// another path).
	Pin   string `json:"pin,omitempty"`
	Error string `json:"error,omitempty"` // set when the plugin could not be described
}

// ListOptions say what List does beyond reading the search path.
type ListOptions struct {
	// Describe starts each plugin that is not built in and not refused,
	// asks it to describe itself (version, summary, parameters) and stops
	// it. Without it no plugin process is started.
	Describe bool
	// Names, when set, limits the list to plugins of these names.
	Names []string
}

// List lists the built-ins (described in-process: they are lcl's own code)
// and the plugins on the search path with where they are, whether they are
// refused and pinned. It starts no plugin unless opt.Describe is set; a
// plugin that then fails to start or answer is listed with its error
// rather than failing the list. The error is about the lock file.
func (h *Host) List(ctx context.Context, opt ListOptions) ([]Descriptor, error) {
	want := func(name string) bool { return len(opt.Names) == 0 || slices.Contains(opt.Names, name) }
	var out []Descriptor
	for _, k := range []string{KindStrategy, KindSimilarity} {
		for _, n := range BuiltinNames(k) {
			if want(n) {
				out = append(out, describeBuiltin(ctx, k, n))
			}
		}
	}
	pins, perr := ReadPins(h.lockPath())
	dirs := h.Dirs
	if dirs == nil {
		dirs = SearchPath()
	}
	var third []int
	for _, f := range Discover(dirs) {
		if isBuiltin(f.Kind, f.Name) || !want(f.Name) {
			continue
		}
		d := Descriptor{Kind: f.Kind, Name: f.Name, Path: f.Path, Refused: f.Refused}
		if pin, ok := pins.Get(f.Kind, f.Name); ok {
			abs, _ := filepath.Abs(f.Path)
			sum, err := digest.File(f.Path)
			switch {
			case pin.Path != abs:
				d.Pin = "moved"
			case err != nil || sum != pin.SHA256:
				d.Pin = "changed"
			default:
				d.Pin = "ok"
			}
		}
		if d.Refused == "" {
			third = append(third, len(out))
		}
		out = append(out, d)
	}
	if opt.Describe {
		// A few at a time: each is a process start and a handshake.
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for _, i := range third {
			wg.Go(func() {
				defer crash.Handle()
				sem <- struct{}{}
				defer func() { <-sem }()
				h.describe(ctx, &out[i])
			})
		}
		wg.Wait()
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind == KindStrategy
		}
		return out[i].Name < out[j].Name
	})
	return out, perr
}

// describeBuiltin asks a built-in to describe itself without a process.
func describeBuiltin(ctx context.Context, kind, name string) Descriptor {
	d := Descriptor{Kind: kind, Name: name, Path: "built-in"}
	var err error
	switch kind {
	case KindStrategy:
		st, _ := strategy.New(name)
		var info sdk.StrategyInfo
		if info, err = st.Describe(ctx); err == nil {
			d.Version, d.Summary, d.Params = info.Version, info.Summary, info.Params
		}
	case KindSimilarity:
		src, _ := source.New(name)
		var info sdk.SourceInfo
		if info, err = src.Describe(ctx); err == nil {
			d.Version, d.Summary, d.Params = info.Version, info.Summary, info.Params
		}
	}
	if err != nil {
		d.Error = err.Error()
	}
	return d
}

// describe starts one plugin, asks it to describe itself and stops it.
func (h *Host) describe(ctx context.Context, d *Descriptor) {
	var err error
	switch d.Kind {
	case KindStrategy:
		var s *Strategy
		if s, err = h.Strategy(d.Name); err == nil {
			defer s.Close()
			var info sdk.StrategyInfo
			if info, err = s.Describe(ctx); err == nil {
				d.Version, d.Summary, d.Params = info.Version, info.Summary, info.Params
			}
		}
	case KindSimilarity:
		var s *Source
		if s, err = h.Source(d.Name); err == nil {
			defer s.Close()
			var info sdk.SourceInfo
			if info, err = s.Describe(ctx); err == nil {
				d.Version, d.Summary, d.Params = info.Version, info.Summary, info.Params
			}
		}
	}
	if err != nil {
		d.Error = err.Error()
	}
}
