package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/simstore"
)

func TestLoadExpand(t *testing.T) {
	g, err := Load("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs := g.Expand()
	// 1 model × 2 fractions × (sl + lcl × 2 epsilons) × 2 seeds
	if len(runs) != 12 {
		t.Fatalf("got %d runs, want 12", len(runs))
	}
	ids := map[string]bool{}
	for _, r := range runs {
		if ids[r.ID] {
			t.Errorf("duplicate id %s for %s", r.ID, r.Describe())
		}
		ids[r.ID] = true
		if r.ID != r.Config.ID() {
			t.Errorf("run id %s differs from its config's digest", r.ID)
		}
	}
	// lcl train's flags that differ from its defaults, in its help's order.
	want := []string{"train", "--synsets", "fashion-mnist", "--data", "/usr/share/datasets/fashion-mnist", "--fraction", "0.1",
		"--strategy", "lcl", "--epsilon", "0.99", "--epochs", "2", "--lr", "0.05", "--out", "runs/x", "--resume", "--no-store", "--threads", "2"}
	var got []string
	for _, r := range runs {
		if r.Config.Strategy == "lcl" && r.Config.Params["epsilon"] == "0.99" && r.Config.Fraction == 0.1 && r.Config.Seed == 1 {
			got = trainArgs(t, r, "runs/x", true)
			if m := r.Config.Method(); m != "LCL(ε=0.99, semantic)" {
				t.Errorf("Method() = %q", m)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("TrainArgs:\n got %q\nwant %q", got, want)
	}
	if g.Name != "small" {
		t.Errorf("name %q", g.Name)
	}
}

func TestIDCoversConfigNotExecution(t *testing.T) {
	g, err := Load("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := g.Expand()[0]
	same := base
	same.Exec = Exec{Device: "cuda:0", Threads: 16, NProc: 4}
	if same.Config.ID() != base.ID {
		t.Error("execution settings changed the id")
	}
	changes := []func(c *simstore.RunConfig){
		func(c *simstore.RunConfig) { c.Seed++ },
		func(c *simstore.RunConfig) { c.Fraction = 0.05 },
		func(c *simstore.RunConfig) { c.Epochs++ },
		func(c *simstore.RunConfig) { c.Params = map[string]string{"epsilon": "0.999"} },
		func(c *simstore.RunConfig) { c.Args = map[string]string{"lr": "0.1"} },
		func(c *simstore.RunConfig) { c.Preset = "wrn" },
		func(c *simstore.RunConfig) { c.Data = "/elsewhere" },
	}
	for i, change := range changes {
		c := base.Config
		c.Params = copyMap(c.Params)
		change(&c)
		if c.ID() == base.ID {
			t.Errorf("change %d kept the id %s", i, base.ID)
		}
	}
}

func TestParseErrors(t *testing.T) {
	valid := "labels: fashion-mnist\nmodels: [cnn]\nfractions: [0.1]\nseeds: [1]\nstrategies:\n  - name: sl\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top-level field", valid + "epoch: 3\n", "line 7: unknown key epoch; did you mean epochs? (a grid's keys: name, labels"},
		{"unknown strategy field", "labels: x\nmodels: [cnn]\nfractions: [0.1]\nseeds: [1]\nstrategies:\n  - name: lcl\n    epsilon: [0.9]\n", "line 7: unknown key epsilon (a strategy's keys: name, sources, params)"},
		{"missing labels", "models: [cnn]\nfractions: [0.1]\nseeds: [1]\nstrategies: [{name: sl}]\n", "labels: required"},
		{"fraction out of range", strings.Replace(valid, "[0.1]", "[0.1, 1.5]", 1), "line 3: fractions[1]: 1.5 is not in (0, 1]"},
		{"repeated seed", strings.Replace(valid, "seeds: [1]", "seeds: [1, 2, 1]", 1), "seeds[2]: 1 repeats seeds[0]"},
		{"reserved flag in params", valid + "    params: {seed: [1]}\n", "--seed is set by the grid's seeds field"},
		{"bad flag name", valid + "args: {'--lr': '0.1'}\n", "args.--lr: not a flag name"},
		{"no such train flag", valid + "args: {learning-rate: '0.1'}\n", "args.learning-rate: lcl train has no flag --learning-rate"},
		{"a near train flag", valid + "args: {wieght-decay: '0.1'}\n", "did you mean --weight-decay?"},
		{"a value lcl train refuses", valid + "args: {batch: many}\n", `line 7: args.batch: --batch "many": invalid syntax`},
		{"a range lcl train refuses", valid + "    params: {lr: [0.1, inf]}\n", `line 7: strategies[0].params.lr[1]: --lr +Inf: want a finite value > 0`},
		{"empty param list", valid + "    params: {epsilon: []}\n", "params.epsilon: empty list"},
		{"strategy without name", strings.Replace(valid, "name: sl", "sources: [semantic]", 1), "strategies[0].name: required"},
		{"wrong type", strings.Replace(valid, "seeds: [1]", "seeds: one", 1), "line 4"},
		{"two documents", valid + "---\nlabels: y\n", "one YAML document"},
		{"empty", "", "empty grid file"},
		{"preset and presets", valid + "preset: wrn-cifar\npresets: [default, cifar-modern]\n", "preset and presets: give one"},
		{"unknown preset on the axis", valid + "presets: [default, cifar-modren]\n", `presets[1]: unknown preset "cifar-modren"; did you mean cifar-modern`},
		{"repeated preset", valid + "presets: [default, cifar-modern, default]\n", "presets[2]: default repeats presets[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("labels: x\nmodel: [cnn]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path+": line 2: unknown key model; did you mean models?") {
		t.Fatalf("error %v", err)
	}
}

func TestPercent(t *testing.T) {
	for f, want := range map[float64]string{0.05: "5%", 0.1: "10%", 0.2: "20%", 1: "100%", 0.025: "2.5%"} {
		if got := Percent(f); got != want {
			t.Errorf("Percent(%v) = %q, want %q", f, got, want)
		}
	}
}

// A grid's channels-last reaches every run's command line but not its
// identity: runs finished in NCHW are not redone in channels-last.
func TestChannelsLastIsExecution(t *testing.T) {
	raw, err := os.ReadFile("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := Parse(append(raw, "\nchannels-last: true\n"...))
	if err != nil {
		t.Fatal(err)
	}
	a, b := plain.Expand(), cl.Expand()
	for i := range a {
		if a[i].ID != b[i].ID {
			t.Errorf("run %d: channels-last changed the id %s -> %s", i, a[i].ID, b[i].ID)
		}
		if slices.Contains(trainArgs(t, a[i], "x", false), "--channels-last") {
			t.Errorf("run %d: --channels-last without the grid asking", i)
		}
		if !slices.Contains(trainArgs(t, b[i], "x", false), "--channels-last") {
			t.Errorf("run %d: %q lacks --channels-last", i, trainArgs(t, b[i], "x", false))
		}
	}
	if _, err := Parse([]byte(strings.Replace(string(raw), "args:\n", "args:\n  channels-last: \"true\"\n", 1))); err == nil || !strings.Contains(err.Error(), "channels-last") {
		t.Errorf("channels-last in args: err %v, want it pointed to the grid key", err)
	}
}

// The presets axis (the recipe axis): every run once per preset, "default"
// runs the same runs (same ids) as a grid without a preset, and each run
// trains with its preset.
func TestPresetsAxis(t *testing.T) {
	base := "labels: fashion-mnist\nmodels: [cnn]\nfractions: [0.1]\nseeds: [1, 2]\nstrategies:\n  - name: sl\n  - name: ls\n"
	plain, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	axis, err := Parse([]byte(base + "presets: [default, cifar-modern]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := axis.Size(); n != 8 || len(axis.Expand()) != 8 {
		t.Fatalf("size %d, %d runs; want 8", n, len(axis.Expand()))
	}
	ids := map[string]string{}
	for _, r := range axis.Expand() {
		ids[r.ID] = r.Config.Preset
		args := trainArgs(t, r, "runs/x", false)
		if i := slices.Index(args, "--preset"); (r.Config.Preset == "") != (i < 0) || (i >= 0 && args[i+1] != r.Config.Preset) {
			t.Errorf("%s: preset %q, args %v", r.ID, r.Config.Preset, args)
		}
	}
	for _, r := range plain.Expand() {
		if p, ok := ids[r.ID]; !ok || p != "" {
			t.Errorf("run %s of the grid without presets: in the axis grid %v with preset %q", r.ID, ok, p)
		}
	}
}

// trainArgs is r.TrainArgs, the test failed on an error.
func trainArgs(t *testing.T, r Run, runDir string, resume bool) []string {
	t.Helper()
	args, err := r.TrainArgs(runDir, resume)
	if err != nil {
		t.Fatal(err)
	}
	return args
}

// test-every says how often a run is observed, not what it trains: a grid's
// test-every reaches lcl train as --test-every and leaves every run's ID
// as it was, and lcl train's own flag leaves the run's store key alone.
func TestTestEveryIsNoPartOfARun(t *testing.T) {
	const grid = "labels: fashion-mnist\nmodels: [cnn]\nfractions: [0.1]\nseeds: [1, 2]\nstrategies: [{name: sl}, {name: ls}]\n"
	plain, err := Parse([]byte(grid))
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := Parse([]byte(grid + "test-every: 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := plain.Expand(), sparse.Expand()
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("runs: %d and %d", len(a), len(b))
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			t.Errorf("run %d: ID %s with test-every, %s without", i, b[i].ID, a[i].ID)
		}
		args, err := b[i].TrainArgs("", false)
		if err != nil {
			t.Fatal(err)
		}
		if j := slices.Index(args, "--test-every"); j < 0 || j+1 >= len(args) || args[j+1] != "5" {
			t.Errorf("run %d: lcl %q, want --test-every 5", i, args)
		}
	}
	for _, args := range [][]string{{"--strategy", "sl"}, {"--strategy", "sl", "--test-every", "3"}} {
		s := parseTrain(t, args...)
		c, err := s.Config(false)
		if err != nil {
			t.Fatal(err)
		}
		if c.Args != nil {
			t.Errorf("lcl train %q: run args %v, want none", args, c.Args)
		}
	}
}
