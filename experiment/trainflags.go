package experiment

import (
	"fmt"
	"strconv"

	"github.com/lcl-project/lcl/simstore"
)

// TrainFlag is one flag of an `lcl train` command line, as TrainConfig
// reads it.
type TrainFlag struct {
	Name  string // without the dashes
	Value string // as given, else the flag's default
	Set   bool   // given on the command line
}

// execFlags are the train flags (and global flags) that say where or how a
// run executes, not what it computes: a run's configuration leaves them
// out, as a grid's does (Exec).
var execFlags = map[string]bool{
	"device": true, "threads": true, "workers": true, "eval-batch": true, "checkpoint-every": true,
	"out": true, "resume": true, "no-store": true, "nproc": true, "dist-timeout": true, "dist-backend": true, "dist-bind": true,
	"require-pinned": true, "trust-model": true,
	// The GPU path's settings of how a run computes (--precision changes
	// what it computes, and stays).
	"channels-last": true, "tf32": true, "cudnn-benchmark": true, "metrics-every": true,
	"plugin-timeout": true, "store": true, "wordnet": true, "json": true, "quiet": true,
}

// TrainConfig is the configuration of the run an `lcl train` command line
// trains, keyed as a grid's run of the same settings is (the inverse of
// Run.TrainArgs): the flags that change the result, as given. params are
// the strategy's parameters (--param and --epsilon merged); similarity says
// whether the strategy used a similarity matrix: only then do --source,
// --matrix and --similarity-key belong to the run.
func TrainConfig(flags []TrainFlag, params map[string]string, similarity bool) (simstore.RunConfig, error) {
	c := simstore.RunConfig{Params: params}
	byName := map[string]TrainFlag{}
	for _, fl := range flags {
		byName[fl.Name] = fl
	}
	var err error
	number := func(name string, parse func(string) error) {
		if fl, ok := byName[name]; ok && err == nil && fl.Value != "" {
			if e := parse(fl.Value); e != nil {
				err = fmt.Errorf("--%s %q: %w", name, fl.Value, e)
			}
		}
	}
	number("fraction", func(v string) (e error) { c.Fraction, e = strconv.ParseFloat(v, 64); return })
	number("seed", func(v string) (e error) { c.Seed, e = strconv.Atoi(v); return })
	if byName["epochs"].Set {
		number("epochs", func(v string) (e error) { c.Epochs, e = strconv.Atoi(v); return })
	}
	if err != nil {
		return simstore.RunConfig{}, err
	}
	c.Labels, c.Data, c.Model, c.Strategy = byName["synsets"].Value, byName["data"].Value, byName["model"].Value, byName["strategy"].Value
	if byName["preset"].Set {
		c.Preset = byName["preset"].Value
	}
	if similarity && byName["matrix"].Value == "" && byName["similarity-key"].Value == "" {
		c.Source = byName["source"].Value
	}
	for _, fl := range flags {
		switch fl.Name {
		case "synsets", "data", "model", "fraction", "strategy", "seed", "epochs", "preset", "param", "epsilon", "source":
			continue // fields of their own
		case "matrix", "similarity-key":
			if !similarity {
				continue
			}
		}
		if !fl.Set || execFlags[fl.Name] {
			continue
		}
		if c.Args == nil {
			c.Args = map[string]string{}
		}
		c.Args[fl.Name] = fl.Value
	}
	return c, nil
}
