// Package experiment owns experiment grids: the YAML grid spec, its expansion
// into runs keyed by a digest of their full configuration, the resumable
// runner that launches each run as an `lcl train` subprocess and stores its
// result, and the cluster emitters (Slurm job arrays, Kubernetes indexed Jobs)
// with the collector that imports their results.
package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/internal/suggest"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
	"github.com/lcl-project/lcl/trainer/models"
)

// Grid is a parsed grid file. Every list is one axis of the cross product;
// scalars apply to every run.
type Grid struct {
	// Name labels the grid (job names, report titles); defaults to the file name.
	Name string `yaml:"name"`
	// Labels is the label set, a built-in name or a file (lcl train --synsets).
	Labels string `yaml:"labels"`
	// Data is the dataset folder (lcl train --data).
	Data string `yaml:"data"`
	// Models are model names (lcl train --model).
	Models []string `yaml:"models"`
	// Fractions are the data ratios DR in (0, 1] (lcl train --fraction).
	Fractions []float64 `yaml:"fractions"`
	// Strategies are the training strategies, each with its own parameter lists.
	Strategies []Strategy `yaml:"strategies"`
	// Seeds are the random seeds; every method uses the same seeds.
	Seeds []int `yaml:"seeds"`
	// Epochs is the number of epochs of every run (0: the preset's or train's default).
	Epochs int `yaml:"epochs"`
	// Preset names a training preset (lcl train --preset): optimiser, schedule, batch size.
	Preset string `yaml:"preset"`
	// Presets, instead of Preset, makes the preset an axis: the recipe axis
	// (e.g. [default, cifar-modern]: every method under the model's own
	// preset and a modern recipe). "default" is the model's preset, as no
	// preset at all, so those runs are the runs of a grid without one.
	Presets []string `yaml:"presets"`
	// Args are further `lcl train` flags for every run, without the leading dashes.
	Args map[string]string `yaml:"args"`
	// Device and Threads say where runs execute; they are not part of a run's
	// identity (moving a grid to a GPU does not redo finished runs).
	Device  string `yaml:"device"`
	Threads int    `yaml:"threads"`
	// NProc > 1 trains each run data-parallel on that many local workers (lcl train --nproc).
	NProc int `yaml:"nproc"`
	// ChannelsLast trains and evaluates in the channels-last memory format
	// (lcl train --channels-last): how runs compute, not what, so like
	// Device it is no part of a run's identity.
	ChannelsLast bool `yaml:"channels-last"`
	// TestEvery > 1 evaluates the test set after every TestEvery-th epoch
	// and the last only (lcl train --test-every): what is observed, not
	// what is trained, so no part of a run's identity either.
	TestEvery int `yaml:"test-every"`

	// lines are the file's lines of its keys and values, by path
	// ("preset", "strategies[0].params.beta[1]"), for errors.
	lines map[string]int
}

// Strategy is one entry of a grid's strategies list.
type Strategy struct {
	// Name is the strategy (lcl train --strategy): a built-in (strategy.Names) or a plugin's.
	Name string `yaml:"name"`
	// Sources are similarity sources (lcl train --source); each is one axis value.
	Sources []string `yaml:"sources"`
	// Params maps a train flag (without dashes) to the values to try, e.g. epsilon: [0.9, 0.99].
	// Values keep their YAML spelling, so 0.990 and 0.99 are different runs.
	Params map[string][]string `yaml:"params"`
}

// typeNames strips Go type names from yaml.v3's messages.
var typeNames = regexp.MustCompile(` in type experiment\.\w+| into \[\]?\w+`)

// unknownField matches yaml.v3's message for a key no field takes.
var unknownField = regexp.MustCompile(`^(line \d+): field (\S+) not found in type experiment\.(\w+)$`)

// yamlMessage is one of yaml.v3's type errors as lcl says it: without Go
// type names, and for an unknown key the nearest known keys and the list
// ("line 3: unknown key model; did you mean models? (a grid's keys: ...)").
func yamlMessage(m string) string {
	if sm := unknownField.FindStringSubmatch(m); sm != nil {
		var keys []string
		var what string
		switch sm[3] {
		case "Grid":
			keys, what = yamlKeys(reflect.TypeFor[Grid]()), "a grid's keys"
		case "Strategy":
			keys, what = yamlKeys(reflect.TypeFor[Strategy]()), "a strategy's keys"
		case "Cell":
			keys, what = yamlKeys(reflect.TypeFor[Cell]()), "a run's keys"
		}
		if keys != nil {
			return fmt.Sprintf("%s: unknown key %s%s (%s: %s)", sm[1], sm[2], suggest.DidYouMean(sm[2], keys), what, strings.Join(keys, ", "))
		}
	}
	return typeNames.ReplaceAllString(m, "")
}

// yamlKeys lists the yaml keys of struct type t, in field order.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// flagName is what a key must look like to become an `lcl train` flag.
var flagName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// reserved are train flags the grid sets itself; params and args must not override them.
var reserved = map[string]string{
	"synsets": "labels", "data": "data", "model": "models", "fraction": "fractions",
	"strategy": "strategies[].name", "source": "strategies[].sources", "seed": "seeds",
	"epochs": "epochs", "preset": "preset", "device": "device", "threads": "threads",
	"out": "(set by the runner)", "resume": "(set by the runner)", "nproc": "nproc",
	"channels-last": "channels-last", "test-every": "test-every",
}

// Check catches what would fail every run of the grid before any is
// launched: labels that do not load, a model lcl does not have, and data
// that `lcl train --synsets LABELS --data DATA` would not find (a spec that
// does not parse, a folder that is not there); nothing is read.
func (g *Grid) Check() error {
	if _, err := labels.Load(g.Labels); err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	reg := models.Builtin()
	for _, m := range g.Models {
		if err := reg.Check(m); err != nil {
			return err // "models: unknown model …"
		}
	}
	spec, err := data.SpecFor(g.Labels, g.Data)
	if err == nil {
		err = data.Check(spec)
	}
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return nil
}

// Load reads and validates a grid file.
func Load(path string) (*Grid, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	g, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if g.Name == "" {
		base := path[strings.LastIndexAny(path, `/\`)+1:]
		g.Name = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	}
	return g, nil
}

// Parse decodes and validates a grid. Unknown fields are errors that name
// their line, so a misspelt key never silently shrinks a grid.
func Parse(raw []byte) (*Grid, error) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var g Grid
	if err := dec.Decode(&g); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("empty grid file")
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			msgs := make([]string, len(te.Errors))
			for i, m := range te.Errors {
				msgs[i] = yamlMessage(m)
			}
			return nil, errors.New(strings.Join(msgs, "; "))
		}
		return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("line %d: a grid file holds one YAML document", extra.Line)
	}
	var root yaml.Node
	if yaml.Unmarshal(raw, &root) == nil {
		g.lines = map[string]int{}
		keyLines(&root, "", g.lines)
	}
	if err := g.validate(); err != nil {
		return nil, g.withLine(err)
	}
	if err := g.checkSize(); err != nil {
		return nil, err
	}
	// Every run as lcl train would read it: a value it refuses fails the
	// grid now, not each of its runs later.
	for i, r := range g.Expand() {
		if _, err := r.Spec(); err != nil {
			if at := g.keyOf(r, err); at != "" {
				if inner := errors.Unwrap(err); inner != nil && !strings.HasPrefix(err.Error(), "--") {
					err = inner // "args.K: " or "params.K: ", which at names
				}
				return nil, fmt.Errorf("%s: %w", g.At(at), err)
			}
			return nil, fmt.Errorf("runs[%d]: %w (%s)", i, err, r.Describe())
		}
	}
	return &g, nil
}

// keyLines records the line of every key and sequence item under n, by
// path (a document's keys at the top: "labels", "strategies[0].name").
func keyLines(n *yaml.Node, path string, lines map[string]int) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			keyLines(c, path, lines)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if path != "" {
				p = path + "." + p
			}
			lines[p] = n.Content[i].Line
			keyLines(n.Content[i+1], p, lines)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			lines[p] = c.Line
			keyLines(c, p, lines)
		}
	}
}

// At is path with its line in the grid file ("line 7: preset"), or path
// alone when the grid was not read from a file's text.
func (g *Grid) At(path string) string {
	if n, ok := g.lines[path]; ok {
		return fmt.Sprintf("line %d: %s", n, path)
	}
	return path
}

// withLine adds the line of the key an error of validate starts with
// ("fractions[0]: …" → "line 5: fractions[0]: …").
func (g *Grid) withLine(err error) error {
	path, _, ok := strings.Cut(err.Error(), ": ")
	if _, known := g.lines[path]; !ok || !known {
		return err
	}
	return fmt.Errorf("line %d: %w", g.lines[path], err)
}

// keyOf is the path of the key that gives the value run's spec refuses
// with err ("--NAME …", "args.NAME: …", "params.NAME: …"), "" when none
// is known.
func (g *Grid) keyOf(r Run, err error) string {
	msg := err.Error()
	var name string
	switch {
	case strings.HasPrefix(msg, "args."):
		name, _, _ = strings.Cut(strings.TrimPrefix(msg, "args."), ":")
		return "args." + name
	case strings.HasPrefix(msg, "params."):
		name, _, _ = strings.Cut(strings.TrimPrefix(msg, "params."), ":")
	case strings.HasPrefix(msg, "--"):
		name, _, _ = strings.Cut(strings.TrimPrefix(msg, "--"), " ")
	default:
		return ""
	}
	c := r.Config
	switch name {
	case "preset":
		if i := slices.Index(g.Presets, c.Preset); i >= 0 {
			return fmt.Sprintf("presets[%d]", i)
		}
		return "preset"
	case "fraction":
		return fmt.Sprintf("fractions[%d]", slices.Index(g.Fractions, c.Fraction))
	case "epochs", "threads", "nproc", "device", "test-every":
		return name
	}
	if at := g.ParamKey(r, name); at != "" && strings.Contains(at, ".") {
		return at
	}
	return ""
}

// ParamKey is the path of the key that gives run r its parameter name:
// "args.NAME" or "strategies[I].params.NAME[J]"; "strategies[I]" (the
// run's entry) for one neither gives, or for name "", and "" for a run
// that is no run of g.
func (g *Grid) ParamKey(r Run, name string) string {
	if _, ok := g.Args[name]; ok && name != "" {
		return "args." + name
	}
	i := g.entryOf(r)
	if i < 0 {
		return ""
	}
	if j := slices.Index(g.Strategies[i].Params[name], r.Config.Params[name]); j >= 0 && name != "" {
		return fmt.Sprintf("strategies[%d].params.%s[%d]", i, name, j)
	}
	return fmt.Sprintf("strategies[%d]", i)
}

// entryOf is the index of the strategies entry run came from (-1: none).
func (g *Grid) entryOf(r Run) int {
	c := r.Config
	for i, s := range g.Strategies {
		if s.Name != c.Strategy || (len(s.Sources) > 0 && !slices.Contains(s.Sources, c.Source)) || len(s.Params) != len(c.Params) {
			continue
		}
		ok := true
		for k, v := range c.Params {
			ok = ok && slices.Contains(s.Params[k], v)
		}
		if ok {
			return i
		}
	}
	return -1
}

// MaxRuns bounds the runs one grid may expand to; Parse refuses larger
// grids before expanding them (a 35 KB file can otherwise name millions).
const MaxRuns = 100000

// Size is the number of runs the grid expands to; ok is false when the
// count overflows.
func (g *Grid) Size() (n int, ok bool) {
	k, ok := g.settings()
	if !ok {
		return 0, false
	}
	return bounded.Product(len(g.Models), len(g.Fractions), len(g.Seeds), max(len(g.Presets), 1), k)
}

// DefaultPreset is the name a grid's presets axis gives the model's own
// preset (no --preset).
const DefaultPreset = "default"

// presetAxis is the grid's presets as run configurations spell them
// ("" for DefaultPreset); one entry, Preset, without the axis.
func (g *Grid) presetAxis() []string {
	if len(g.Presets) == 0 {
		return []string{g.Preset}
	}
	out := make([]string, len(g.Presets))
	for i, p := range g.Presets {
		if p != DefaultPreset {
			out[i] = p
		}
	}
	return out
}

// settings counts the strategy settings: sources × parameter values,
// summed over the strategies.
func (g *Grid) settings() (int, bool) {
	sum := 0
	for _, s := range g.Strategies {
		dims := []int{max(len(s.Sources), 1)}
		for _, vs := range s.Params {
			dims = append(dims, len(vs))
		}
		k, ok := bounded.Product(dims...)
		if !ok || sum > math.MaxInt-k {
			return 0, false
		}
		sum += k
	}
	return sum, true
}

func (g *Grid) checkSize() error {
	n, ok := g.Size()
	if ok && n <= MaxRuns {
		return nil
	}
	runs, settings := "more than "+strconv.Itoa(math.MaxInt), "too many"
	if ok {
		runs = strconv.Itoa(n)
	}
	if k, ok := g.settings(); ok {
		settings = strconv.Itoa(k)
	}
	presets := ""
	if len(g.Presets) > 0 {
		presets = fmt.Sprintf(" × %d presets", len(g.Presets))
	}
	return fmt.Errorf("the grid expands to %s runs (%d models × %d fractions × %d seeds%s × %s strategy settings); the limit is %d runs: split it into several grids",
		runs, len(g.Models), len(g.Fractions), len(g.Seeds), presets, settings, MaxRuns)
}

func (g *Grid) validate() error {
	switch {
	case g.Labels == "":
		return fmt.Errorf("labels: required (a built-in label set such as fashion-mnist, or a file)")
	case len(g.Models) == 0:
		return fmt.Errorf("models: at least one model is required")
	case len(g.Fractions) == 0:
		return fmt.Errorf("fractions: at least one data ratio in (0, 1] is required")
	case len(g.Seeds) == 0:
		return fmt.Errorf("seeds: at least one seed is required")
	case len(g.Strategies) == 0:
		return fmt.Errorf("strategies: at least one strategy is required")
	case g.Epochs < 0:
		return fmt.Errorf("epochs: %d is negative", g.Epochs)
	case g.Threads < 0:
		return fmt.Errorf("threads: %d is negative", g.Threads)
	case g.NProc < 0:
		return fmt.Errorf("nproc: %d is negative", g.NProc)
	}
	if err := unique("models", g.Models); err != nil {
		return err
	}
	for i, f := range g.Fractions {
		if !(f > 0 && f <= 1) {
			return fmt.Errorf("fractions[%d]: %v is not in (0, 1]", i, f)
		}
	}
	if err := unique("fractions", g.Fractions); err != nil {
		return err
	}
	if err := unique("seeds", g.Seeds); err != nil {
		return err
	}
	if len(g.Presets) > 0 && g.Preset != "" {
		return fmt.Errorf("preset and presets: give one (presets: [%s, ...] makes the preset an axis)", g.Preset)
	}
	if err := unique("presets", g.Presets); err != nil {
		return err
	}
	for i, p := range g.Presets {
		if p == "" {
			return fmt.Errorf("presets[%d]: empty (%q is the model's own preset)", i, DefaultPreset)
		}
		if _, err := trainer.PresetByName(p); p != DefaultPreset && err != nil {
			return fmt.Errorf("presets[%d]: %v", i, err)
		}
	}
	for _, k := range sortedKeys(g.Args) {
		if err := checkFlag("args", k); err != nil {
			return err
		}
		if !IsTrainFlag(k) {
			return fmt.Errorf("args.%s: lcl train has no flag --%s%s", k, k, suggestFlag(k))
		}
	}
	for i, s := range g.Strategies {
		at := fmt.Sprintf("strategies[%d]", i)
		if s.Name == "" {
			return fmt.Errorf("%s.name: required (%s or a plugin strategy)", at, strings.Join(strategy.Names(), ", "))
		}
		if err := unique(at+".sources", s.Sources); err != nil {
			return err
		}
		for k, vs := range s.Params {
			if err := checkFlag(at+".params", k); err != nil {
				return err
			}
			if _, dup := g.Args[k]; dup {
				return fmt.Errorf("%s.params.%s: also set in args; set it in one place", at, k)
			}
			if len(vs) == 0 {
				return fmt.Errorf("%s.params.%s: empty list (give at least one value)", at, k)
			}
			if err := unique(at+".params."+k, vs); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkFlag(at, k string) error {
	if !flagName.MatchString(k) {
		return fmt.Errorf("%s.%s: not a flag name (lower case letters, digits and dashes, without the leading --)", at, k)
	}
	if field, ok := reserved[k]; ok {
		return fmt.Errorf("%s.%s: --%s is set by the grid's %s field", at, k, k, field)
	}
	return nil
}

func unique[T comparable](at string, vs []T) error {
	seen := make(map[T]int, len(vs))
	for i, v := range vs {
		if j, ok := seen[v]; ok {
			return fmt.Errorf("%s[%d]: %v repeats %s[%d]", at, i, v, at, j)
		}
		seen[v] = i
	}
	return nil
}

// formatFloat spells a fraction the way flags and digests see it.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
