package experiment

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/lcl-project/lcl/simstore"
)

// Run is one expanded grid point.
type Run struct {
	ID     string // Config.ID()
	Config simstore.RunConfig
	// Exec holds the execution settings passed to lcl train but not digested.
	Exec Exec
}

// Exec says where and how a run executes.
type Exec struct {
	Device       string
	Threads      int
	NProc        int
	ChannelsLast bool
	TestEvery    int
}

// Expand returns the grid's runs in a fixed order: model, fraction,
// preset (the presets axis), strategy (in file order) with its sources and
// parameter values, then seed innermost, so that all methods of a block finish close together.
func (g *Grid) Expand() []Run {
	var runs []Run
	exec := Exec{Device: g.Device, Threads: g.Threads, NProc: g.NProc, ChannelsLast: g.ChannelsLast, TestEvery: g.TestEvery}
	targets := targetsDigests{}
	for _, model := range g.Models {
		for _, frac := range g.Fractions {
			for _, preset := range g.presetAxis() {
				for _, s := range g.Strategies {
					sources := s.Sources
					if len(sources) == 0 {
						sources = []string{""}
					}
					for _, src := range sources {
						for _, params := range paramProduct(s.Params) {
							for _, seed := range g.Seeds {
								c := simstore.RunConfig{
									Labels: g.Labels, Data: g.Data, Model: model, Fraction: frac,
									Strategy: s.Name, Source: src, Params: params, Seed: seed,
									Epochs: g.Epochs, Preset: preset, Args: copyMap(g.Args),
								}
								c.Targets = targets.of(s.Name, matrixOf(params, g.Args))
								runs = append(runs, Run{ID: c.ID(), Config: c, Exec: exec})
							}
						}
					}
				}
			}
		}
	}
	return runs
}

// targetsDigests remembers the TargetsDigest of each file while a grid
// expands: its runs share a few files.
type targetsDigests map[string]string

// of is TargetsDigest(strategy, file), "" for a file that does not read
// (Run.Spec refuses that run, naming the error).
func (t targetsDigests) of(strategy, file string) string {
	key := strategy + "\x00" + file
	d, ok := t[key]
	if !ok {
		d, _ = TargetsDigest(strategy, file)
		t[key] = d
	}
	return d
}

// matrixOf is the --matrix a run's params or args give.
func matrixOf(params, args map[string]string) string {
	if m, ok := params["matrix"]; ok {
		return m
	}
	return args["matrix"]
}

// paramProduct returns the cross product of the parameter lists, keys in
// sorted order; an empty map gives one empty assignment.
func paramProduct(params map[string][]string) []map[string]string {
	out := []map[string]string{nil}
	for _, k := range sortedKeys(params) {
		var next []map[string]string
		for _, base := range out {
			for _, v := range params[k] {
				m := copyMap(base)
				if m == nil {
					m = map[string]string{}
				}
				m[k] = v
				next = append(next, m)
			}
		}
		out = next
	}
	return out
}

// TrainArgs returns the `lcl` arguments that run this configuration, writing
// into runDir ("" leaves --out out); resume adds --resume. They are the
// run's spec (Spec) written back as lcl train's flags (TrainSpec.Args), with
// --no-store: the grid's runner (or `lcl experiment collect`) records the
// run under its ID, and the run must not be recorded a second time by the
// child. A run whose params or args are no settings of lcl train is an
// error (Grid.Check refuses such a grid first).
func (r Run) TrainArgs(runDir string, resume bool) ([]string, error) {
	s, err := r.Spec()
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", r.ID, err)
	}
	s.Exec.Out, s.Exec.Resume, s.Exec.NoStore = runDir, resume, true
	return append([]string{"train"}, s.Args()...), nil
}

// RunDir is where a run writes its checkpoints and logs under root.
func RunDir(root, id string) string { return filepath.Join(root, id) }

// Describe is a one-line summary of a run for listings and logs.
func (r Run) Describe() string {
	c := r.Config
	return fmt.Sprintf("%s %s DR=%s %s seed=%d", c.Labels, c.Model,
		Percent(c.Fraction), c.Method(), c.Seed)
}

// Percent spells a data ratio as a percentage ("10%", "2.5%").
func Percent(f float64) string {
	return strconv.FormatFloat(math.Round(f*1e6)/1e4, 'f', -1, 64) + "%"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
