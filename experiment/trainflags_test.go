package experiment

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/simstore"
)

// trainDefaults are lcl train's defaults of the flags TrainConfig reads.
var trainDefaults = map[string]string{"synsets": "", "data": "", "model": "cnn", "strategy": "sl", "fraction": "1", "seed": "1",
	"epochs": "0", "preset": "", "source": "semantic", "matrix": "", "similarity-key": "", "device": "cpu", "threads": "0"}

// commandLine is what lcl train's flag parser makes of args: every flag
// with its value, those given marked Set, defaults for the others; and the
// strategy parameters (--epsilon) merged as train merges them.
func commandLine(t *testing.T, args []string) ([]TrainFlag, map[string]string) {
	t.Helper()
	given := map[string]string{}
	var order []string
	for i := 1; i < len(args); i++ { // args[0] is "train"
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			t.Fatalf("%v: %q is no flag", args, args[i])
		}
		v := "true"
		if name != "no-store" && name != "resume" {
			i++
			v = args[i]
		}
		given[name] = v
		order = append(order, name)
	}
	var flags []TrainFlag
	for name, def := range trainDefaults {
		if _, ok := given[name]; !ok {
			flags = append(flags, TrainFlag{Name: name, Value: def})
		}
	}
	params := map[string]string{}
	for _, name := range order {
		flags = append(flags, TrainFlag{Name: name, Value: given[name], Set: true})
		if name == "epsilon" {
			params[name] = given[name]
		}
	}
	return flags, params
}

// The run an lcl train command line trains is the grid's run it came from:
// same configuration, same key.
func TestTrainConfigInvertsTrainArgs(t *testing.T) {
	g, err := Load("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range g.Expand() {
		r.Exec.NProc = 2
		flags, params := commandLine(t, r.TrainArgs("runs/"+r.ID, true))
		c, err := TrainConfig(flags, params, r.Config.Strategy == "lcl")
		if err != nil {
			t.Fatal(err)
		}
		want := r.Config
		if want.Params == nil {
			want.Params = map[string]string{}
		}
		if !reflect.DeepEqual(c, want) || c.ID() != r.ID {
			t.Errorf("%s: TrainConfig(TrainArgs) = %+v (%s), want %+v", r.Describe(), c, c.ID(), want)
		}
	}
}

func TestTrainConfig(t *testing.T) {
	base := []TrainFlag{{Name: "synsets", Value: "fashion-mnist", Set: true}, {Name: "data", Value: ""}, {Name: "model", Value: "cnn"},
		{Name: "strategy", Value: "lcl", Set: true}, {Name: "fraction", Value: "0.02", Set: true}, {Name: "seed", Value: "1"},
		{Name: "epochs", Value: "0"}, {Name: "preset", Value: ""}, {Name: "source", Value: "semantic"},
		{Name: "matrix", Value: ""}, {Name: "similarity-key", Value: ""}}
	with := func(extra ...TrainFlag) []TrainFlag { return append(append([]TrainFlag(nil), base...), extra...) }
	set := func(name, value string) TrainFlag { return TrainFlag{Name: name, Value: value, Set: true} }
	want := simstore.RunConfig{Labels: "fashion-mnist", Model: "cnn", Strategy: "lcl", Fraction: 0.02, Seed: 1, Source: "semantic",
		Params: map[string]string{"epsilon": "0.9"}}
	for _, tc := range []struct {
		name       string
		flags      []TrainFlag
		similarity bool
		edit       func(*simstore.RunConfig)
	}{
		{"defaults", base, true, nil},
		{"no similarity: no source", base, false, func(c *simstore.RunConfig) { c.Source = "" }},
		{"execution flags left out",
			with(set("device", "cuda"), set("threads", "4"), set("out", "runs/x"), set("resume", "true"), set("nproc", "2"), set("store", "/s"),
				set("json", "true"), set("workers", "3"), set("dist-bind", "any"), set("require-pinned", "true"), set("plugin-timeout", "1m")),
			true, nil},
		{"result flags kept", with(set("batch", "16"), set("lr", "0.1"), set("precision", "bf16")), true,
			func(c *simstore.RunConfig) {
				c.Args = map[string]string{"batch": "16", "lr": "0.1", "precision": "bf16"}
			}},
		{"unset flags left out", with(TrainFlag{Name: "batch", Value: "0"}), true, nil},
		{"epochs and preset when given", with(set("epochs", "3"), set("preset", "goyal")), true,
			func(c *simstore.RunConfig) { c.Epochs, c.Preset = 3, "goyal" }},
		{"a matrix file replaces the source", with(set("matrix", "s.npy")), true,
			func(c *simstore.RunConfig) { c.Source, c.Args = "", map[string]string{"matrix": "s.npy"} }},
		{"a store key replaces the source", with(set("similarity-key", "sim/x")), true,
			func(c *simstore.RunConfig) { c.Source, c.Args = "", map[string]string{"similarity-key": "sim/x"} }},
		{"a matrix a strategy does not use is no setting", with(set("matrix", "s.npy")), false,
			func(c *simstore.RunConfig) { c.Source = "" }},
		{"params and strategy flags are fields", with(set("param", "[epsilon=0.9]"), set("epsilon", "0.9"), set("source", "semantic")), true, nil},
	} {
		w := want
		w.Params = maps.Clone(want.Params)
		if tc.edit != nil {
			tc.edit(&w)
		}
		got, err := TrainConfig(tc.flags, map[string]string{"epsilon": "0.9"}, tc.similarity)
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, w)
		}
	}
	if _, err := TrainConfig(with(set("seed", "x")), nil, false); err == nil || !strings.Contains(err.Error(), `--seed "x"`) {
		t.Errorf("a seed that is no number: %v", err)
	}
}
