// Package models names the architectures lcl trains: a Registry maps a name
// such as "cnn" or "resnet18" to a builder of a torch.Spec for a given input
// shape and class count. The networks themselves are built by trainer/torch
// with torchvision's parameter names (conv1, layer1.0.downsample.0, fc), so
// checkpoints compare with PyTorch's.
package models

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

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
}

// Registry maps names to models. The zero value is empty; Builtin returns
// one holding lcl's architectures.
type Registry struct {
	models map[string]Model
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

// Get resolves "name" or "name:key=value,key=value" for an input.
func (r *Registry) Get(spec string, in Input) (torch.Spec, error) {
	name, optStr, _ := strings.Cut(spec, ":")
	m, ok := r.models[name]
	if !ok {
		names := make([]string, 0, len(r.models))
		for _, m := range r.List() {
			names = append(names, m.Name)
		}
		return torch.Spec{}, fmt.Errorf("models: unknown model %q (known: %s)", name, strings.Join(names, ", "))
	}
	opt := Options{}
	if optStr != "" {
		for kv := range strings.SplitSeq(optStr, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !slices.Contains(m.Options, k) {
				return torch.Spec{}, fmt.Errorf("models: %s: bad option %q (options: %s)", name, kv, strings.Join(m.Options, ", "))
			}
			opt[k] = v
		}
	}
	if in.C <= 0 || in.H <= 0 || in.W <= 0 || in.NumClasses < 2 {
		return torch.Spec{}, fmt.Errorf("models: %s: bad input %d×%d×%d with %d classes", name, in.C, in.H, in.W, in.NumClasses)
	}
	s, err := m.Build(in, opt)
	if err != nil {
		return torch.Spec{}, fmt.Errorf("models: %s: %w", name, err)
	}
	s.InC, s.InH, s.InW, s.NumClasses = in.C, in.H, in.W, in.NumClasses
	return s, nil
}

func (o Options) int(key string, def int) (int, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("option %s=%q: want a positive integer", key, v)
	}
	return n, nil
}

func (o Options) float(key string, def float32) (float32, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 32)
	if err != nil || f < 0 || f >= 1 {
		return 0, fmt.Errorf("option %s=%q: want a number in [0,1)", key, v)
	}
	return float32(f), nil
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
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("option %s=%q: want sizes like 256x128", key, v)
		}
		out = append(out, n)
	}
	return out, nil
}
