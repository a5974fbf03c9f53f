// Package models names the architectures lcl trains: a Registry maps a name
// such as "cnn" or "resnet18" to a builder of a torch.Spec for a given input
// shape and class count. The networks themselves are built by trainer/torch
// with torchvision's parameter names (conv1, layer1.0.downsample.0, fc), so
// checkpoints compare with PyTorch's.
package models

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/internal/suggest"
	"github.com/lcl-project/lcl/trainer/torch"
)

// Input is what a builder needs to know about the data.
type Input struct {
	C, H, W    int
	NumClasses int
}

// Options are the "name:key=value,..." options of a model name.
type Options map[string]string

// Builder makes the architecture for an input.
type Builder func(in Input, opt Options) (torch.Spec, error)

// Model is one registered architecture.
type Model struct {
	Name    string
	Doc     string
	Options []string // option keys the builder understands
	Build   Builder
	// Reference is the input its published parameter count is for
	// (ImageNet: 3×224×224 and 1000 classes; CIFAR-100: 3×32×32 and 100).
	Reference Input
	// Published is that count in millions as its paper or library states
	// it ("88.79"); "" when there is none.
	Published string
	// Paper marks the nine architectures of the paper's Table 1.
	Paper bool
	// Preset is the optimisation preset a run of the architecture takes
	// when none is named (trainer.Presets: the protocol of its
	// publication), and LargePreset, where set, the one for inputs over 64
	// pixels a side (a family's ImageNet protocol beside its CIFAR one).
	Preset, LargePreset string
}

// DefaultPreset is the preset of m for input in.
func (m Model) DefaultPreset(in Input) string {
	if m.LargePreset != "" && (in.H > 64 || in.W > 64) {
		return m.LargePreset
	}
	return m.Preset
}

// ScriptPreset is the preset of a TorchScript model when none is named:
// nothing is known of its architecture, so the small-image protocol.
const ScriptPreset = "fmnist-cnn"

// ScriptPrefix starts a model name that is a TorchScript file:
// "torchscript:PATH", or "torchscript:PATH@sha256:HEX" to pin the file's
// digest (see NewModel in trainer/torch, and script.go for the checks).
const ScriptPrefix = "torchscript:"

// Registry maps names to models. The zero value is empty; Builtin returns
// one holding lcl's architectures.
type Registry struct {
	models map[string]Model
	// TrustScripts lets a TorchScript model call operators that reach the
	// file system, the network or the terminal (--trust-model); the other
	// checks of a TorchScript file still apply.
	TrustScripts bool
}

// Register adds m, refusing a duplicate name.
func (r *Registry) Register(m Model) error {
	if r.models == nil {
		r.models = map[string]Model{}
	}
	if _, dup := r.models[m.Name]; dup {
		return fmt.Errorf("models: %q registered twice", m.Name)
	}
	r.models[m.Name] = m
	return nil
}

// List returns the registered models sorted by name.
func (r *Registry) List() []Model {
	out := make([]Model, 0, len(r.models))
	for _, m := range r.models {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Model) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Lookup returns the registered model of a name.
func (r *Registry) Lookup(name string) (Model, bool) {
	m, ok := r.models[name]
	return m, ok
}

// Check reports whether spec names a registered model (or a TorchScript
// file, checked when it is read), without building it.
func (r *Registry) Check(spec string) error {
	if strings.HasPrefix(spec, ScriptPrefix) {
		return nil
	}
	name, _, _ := strings.Cut(spec, ":")
	if _, ok := r.models[name]; !ok {
		return r.unknown(name)
	}
	return nil
}

// DefaultPreset is the optimisation preset of the model spec names
// ("name[:options]" or a TorchScript file) for input in when none is
// named; an unknown model is an error.
func (r *Registry) DefaultPreset(spec string, in Input) (string, error) {
	if strings.HasPrefix(spec, ScriptPrefix) {
		return ScriptPreset, nil
	}
	name, _, _ := strings.Cut(spec, ":")
	m, ok := r.models[name]
	if !ok {
		return "", r.unknown(name)
	}
	if m.Preset == "" {
		return "", fmt.Errorf("models: %s has no default preset: name one", name)
	}
	return m.DefaultPreset(in), nil
}

// unknown is the error for a name no model has, with the nearest names.
func (r *Registry) unknown(name string) error {
	names := make([]string, 0, len(r.models))
	for _, m := range r.List() {
		names = append(names, m.Name)
	}
	return fmt.Errorf("models: unknown model %q%s (known: %s)", name, suggest.DidYouMean(name, names), strings.Join(names, ", "))
}

// Get resolves "name", "name:key=value,key=value" or "torchscript:PATH"
// for an input.
func (r *Registry) Get(spec string, in Input) (torch.Spec, error) {
	if rest, ok := strings.CutPrefix(spec, ScriptPrefix); ok {
		qspec := bounded.Quote(spec)
		if in.C <= 0 || in.H <= 0 || in.W <= 0 || in.NumClasses < 2 {
			return torch.Spec{}, fmt.Errorf("models: %s: bad input %d×%d×%d with %d classes", qspec, in.C, in.H, in.W, in.NumClasses)
		}
		ref, err := parseScriptRef(rest)
		if err != nil {
			return torch.Spec{}, fmt.Errorf("models: %s: %w", qspec, err)
		}
		if st, err := os.Stat(ref.path); err != nil || st.IsDir() {
			return torch.Spec{}, fmt.Errorf("models: %s: want a TorchScript file saved by torch.jit.save (%v)", qspec, errOrDir(err))
		}
		if err := checkScriptFile(ref, r.TrustScripts); err != nil {
			return torch.Spec{}, fmt.Errorf("models: %s: %w", qspec, err)
		}
		// Loaded once: the models are built from this checked module, not
		// from the file again (which may have changed since).
		loaded, err := torch.LoadScript(ref.path, in.C, in.H, in.W, in.NumClasses, r.TrustScripts)
		if err != nil {
			return torch.Spec{}, fmt.Errorf("models: %s: %w", qspec, err)
		}
		return torch.Spec{InC: in.C, InH: in.H, InW: in.W, NumClasses: in.NumClasses, Script: ref.path, Loaded: loaded}, nil
	}
	name, optStr, _ := strings.Cut(spec, ":")
	m, ok := r.models[name]
	if !ok {
		return torch.Spec{}, r.unknown(name)
	}
	opt := Options{}
	if optStr != "" {
		for kv := range strings.SplitSeq(optStr, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !slices.Contains(m.Options, k) && k != ProjOption {
				return torch.Spec{}, fmt.Errorf("models: %s: bad option %q (options: %s)", name, kv,
					strings.Join(append(slices.Clone(m.Options), ProjOption), ", "))
			}
			opt[k] = v
		}
	}
	if in.C <= 0 || in.H <= 0 || in.W <= 0 || in.NumClasses < 2 {
		return torch.Spec{}, fmt.Errorf("models: %s: bad input %d×%d×%d with %d classes", name, in.C, in.H, in.W, in.NumClasses)
	}
	// proj is every model's option, read here: the builders never see it.
	proj, err := opt.int(ProjOption, 0)
	if err != nil {
		return torch.Spec{}, fmt.Errorf("models: %s: %w (HAFrame's projection of the features to that many dimensions)", name, err)
	}
	delete(opt, ProjOption)
	s, err := m.Build(in, opt)
	if err != nil {
		return torch.Spec{}, fmt.Errorf("models: %s: %w", name, err)
	}
	s.InC, s.InH, s.InW, s.NumClasses = in.C, in.H, in.W, in.NumClasses
	if proj > 0 {
		if s, err = withProjection(s, proj); err != nil {
			return torch.Spec{}, fmt.Errorf("models: %s on %d×%d×%d: %w", name, in.C, in.H, in.W, err)
		}
	}
	if _, err := s.Check(); err != nil {
		return torch.Spec{}, fmt.Errorf("models: %s on %d×%d×%d: %w", name, in.C, in.H, in.W, err)
	}
	return s, nil
}

func errOrDir(err error) error {
	if err != nil {
		return err
	}
	return errors.New("a directory")
}

// MaxOptionValue bounds every integer option of a model (a depth, a
// width, a layer count): above it the network's description alone would
// take gigabytes before its size could be estimated (depth=60000004), and
// every architecture lcl knows stays far below it (ResNet-1202, widths of
// 2048). What a smaller value makes too large for the machine Estimate
// and CheckFits find.
const MaxOptionValue = 1 << 14

func (o Options) int(key string, def int) (int, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > MaxOptionValue {
		return 0, fmt.Errorf("option %s=%q: want a positive integer up to %d", key, v, MaxOptionValue)
	}
	return n, nil
}

func (o Options) float(key string, def float64) (float64, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f >= 1 {
		return 0, fmt.Errorf("option %s=%q: want a number in [0,1)", key, v)
	}
	return f, nil
}

// ints parses "256x128".
func (o Options) ints(key string, def []int) ([]int, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	var out []int
	for f := range strings.SplitSeq(v, "x") {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 || n > MaxOptionValue || len(out) >= 64 {
			return nil, fmt.Errorf("option %s=%q: want up to 64 sizes like 256x128, each up to %d", key, v, MaxOptionValue)
		}
		out = append(out, n)
	}
	return out, nil
}
