package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lcl-project/lcl/simstore"
)

// Cell is one run of a grid written out: a grid's keys with one value
// each (labels, data, model, fraction, strategy, source, params, seed,
// epochs, preset, args; and where it runs: device, threads, nproc,
// channels-last). `lcl train --config FILE` reads one; a run directory's
// lcl-run.json (its configuration) is one too.
type Cell struct {
	Labels   string            `yaml:"labels"`
	Data     string            `yaml:"data"`
	Model    string            `yaml:"model"`
	Fraction *float64          `yaml:"fraction"` // nil: 1
	Strategy string            `yaml:"strategy"`
	Source   string            `yaml:"source"`
	Params   map[string]string `yaml:"params"`
	Seed     *int              `yaml:"seed"` // nil: 1
	Epochs   int               `yaml:"epochs"`
	Preset   string            `yaml:"preset"`
	Args     map[string]string `yaml:"args"`

	Device       string `yaml:"device"`
	Threads      int    `yaml:"threads"`
	NProc        int    `yaml:"nproc"`
	ChannelsLast bool   `yaml:"channels-last"`
	TestEvery    int    `yaml:"test-every"`
}

// Run is the cell as a grid's run (lcl train's defaults for what it leaves out).
func (c Cell) Run() Run {
	def := NewTrainSpec()
	rc := simstore.RunConfig{Labels: c.Labels, Data: c.Data, Model: c.Model, Fraction: 1, Strategy: c.Strategy,
		Source: c.Source, Params: copyMap(c.Params), Seed: int(def.Seed), Epochs: c.Epochs, Preset: c.Preset, Args: copyMap(c.Args)}
	if rc.Model == "" {
		rc.Model = def.Model
	}
	if rc.Strategy == "" {
		rc.Strategy = def.Strategy
	}
	if c.Fraction != nil {
		rc.Fraction = *c.Fraction
	}
	if c.Seed != nil {
		rc.Seed = *c.Seed
	}
	rc.Targets, _ = TargetsDigest(rc.Strategy, matrixOf(c.Params, c.Args)) // a file that does not read: Spec says so
	return Run{ID: rc.ID(), Config: rc, Exec: Exec{Device: c.Device, Threads: c.Threads, NProc: c.NProc, ChannelsLast: c.ChannelsLast,
		TestEvery: c.TestEvery}}
}

// LoadTrainSpec reads the Cell in the YAML (or JSON) file at path as a
// TrainSpec. Unknown keys, and args or params that are no flag of
// lcl train, are errors that name their line or key.
func LoadTrainSpec(path string) (TrainSpec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return TrainSpec{}, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var c Cell
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return TrainSpec{}, fmt.Errorf("%s: empty file", path)
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			msgs := make([]string, len(te.Errors))
			for i, m := range te.Errors {
				msgs[i] = yamlMessage(m)
			}
			return TrainSpec{}, fmt.Errorf("%s: %s", path, strings.Join(msgs, "; "))
		}
		return TrainSpec{}, fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return TrainSpec{}, fmt.Errorf("%s: line %d: the file holds one run (one YAML document)", path, extra.Line)
	}
	s, err := c.Run().Spec()
	if err != nil {
		return TrainSpec{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Spec is the run as lcl train runs it: its configuration and execution
// settings typed, its params and args read as lcl train's flags (an
// unknown flag or a bad value is an error naming the key). The spec's
// Config(similarity) is r.Config again, for a strategy that uses its
// similarity source, up to how values are spelt (0.990 reads as 0.99).
func (r Run) Spec() (TrainSpec, error) {
	c := r.Config
	s := NewTrainSpec()
	s.Synsets, s.Data, s.Model, s.Strategy, s.Fraction, s.Seed = c.Labels, c.Data, c.Model, c.Strategy, c.Fraction, int64(c.Seed)
	if c.Source != "" {
		s.Source = c.Source
	}
	if c.Epochs > 0 {
		if err := s.Settings.Set("epochs", strconv.Itoa(c.Epochs)); err != nil {
			return TrainSpec{}, err
		}
	}
	if c.Preset != "" {
		p := c.Preset
		s.Preset = &p
	}
	// A param is a flag of lcl train (epsilon) or else a parameter of the
	// strategy (--param NAME=VALUE), as TrainArgs passes it.
	for _, k := range sortedKeys(c.Params) {
		if !IsTrainFlag(k) {
			if s.Params == nil {
				s.Params = map[string]string{}
			}
			s.Params[k] = c.Params[k]
		} else if err := s.SetTrainFlag(k, c.Params[k]); err != nil {
			return TrainSpec{}, fmt.Errorf("params.%s: %w", k, err)
		}
	}
	for _, k := range sortedKeys(c.Args) {
		if err := s.SetTrainFlag(k, c.Args[k]); err != nil {
			return TrainSpec{}, fmt.Errorf("args.%s: %w", k, err)
		}
	}
	if err := checkTargets(s, c.Targets); err != nil {
		return TrainSpec{}, err
	}
	e := r.Exec
	if e.Device != "" {
		s.Exec.Device = e.Device
	}
	if e.Threads > 0 {
		s.Exec.Threads = e.Threads
	}
	if e.NProc > 0 {
		s.Exec.NProc = e.NProc
	}
	s.Exec.ChannelsLast = e.ChannelsLast
	if e.TestEvery != 0 {
		if err := s.Settings.Set("test-every", strconv.Itoa(e.TestEvery)); err != nil {
			return TrainSpec{}, fmt.Errorf("test-every: %w", err)
		}
	}
	return s, s.Validate()
}

// checkTargets checks that the run's --matrix, for a strategy that trains
// on it as its targets, still has the content its key was made with
// (RunConfig.Targets): a grid that runs for days must not record a
// changed file's run under the old file's key.
func checkTargets(s TrainSpec, want string) error {
	d, err := TargetsDigest(s.Strategy, s.Matrix)
	switch {
	case err != nil:
		return err
	case d != want:
		return fmt.Errorf("--matrix %s: the file changed since the grid was read (its key was made with SHA-256 %.12s…, the file now has %.12s…): read the grid again", s.Matrix, want, d)
	}
	return nil
}
