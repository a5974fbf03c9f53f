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
}

// Expand returns the grid's runs in a fixed order: model, fraction,
// preset (the presets axis), strategy (in file order) with its sources and
// parameter values, then seed innermost, so that all methods of a block finish close together.
func (g *Grid) Expand() []Run {
	var runs []Run
	exec := Exec{Device: g.Device, Threads: g.Threads, NProc: g.NProc, ChannelsLast: g.ChannelsLast}
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
// into runDir; resume adds --resume. They include --no-store: the grid's
// runner (or `lcl experiment collect`) records the run under its ID, and
// the run must not be recorded a second time by the child.
func (r Run) TrainArgs(runDir string, resume bool) []string {
	c := r.Config
	args := []string{"train",
		"--synsets", c.Labels,
	}
	if c.Data != "" {
		args = append(args, "--data", c.Data)
	}
	args = append(args,
		"--model", c.Model,
		"--strategy", c.Strategy,
	)
	if c.Source != "" {
		args = append(args, "--source", c.Source)
	}
	for _, k := range sortedKeys(c.Params) {
		if IsTrainFlag(k) {
			args = append(args, "--"+k, c.Params[k])
		} else {
			// A strategy's own parameter (a plugin's, ls's alpha).
			args = append(args, "--param", k+"="+c.Params[k])
		}
	}
	args = append(args,
		"--fraction", formatFloat(c.Fraction),
		"--seed", strconv.Itoa(c.Seed),
	)
	if c.Epochs > 0 {
		args = append(args, "--epochs", strconv.Itoa(c.Epochs))
	}
	if c.Preset != "" {
		args = append(args, "--preset", c.Preset)
	}
	for _, k := range sortedKeys(c.Args) {
		args = append(args, "--"+k, c.Args[k])
	}
	if r.Exec.Device != "" {
		args = append(args, "--device", r.Exec.Device)
	}
	if r.Exec.Threads > 0 {
		args = append(args, "--threads", strconv.Itoa(r.Exec.Threads))
	}
	if r.Exec.NProc > 1 {
		args = append(args, "--nproc", strconv.Itoa(r.Exec.NProc))
	}
	if r.Exec.ChannelsLast {
		args = append(args, "--channels-last")
	}
	args = append(args, "--no-store", "--out", runDir)
	if resume {
		args = append(args, "--resume")
	}
	return args
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
