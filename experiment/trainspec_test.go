package experiment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/trainer"
)

// parseTrain is what lcl train's flags make of a command line (without
// the leading "train").
func parseTrain(t *testing.T, args ...string) TrainSpec {
	t.Helper()
	s := NewTrainSpec()
	fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
	BindTrainFlags(fs, &s)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return s
}

// The run an lcl train command line trains is the grid's run it came from:
// same configuration, same key; and the grid's run read as a spec directly
// (Run.Spec) is the same spec.
func TestSpecConfigInvertsTrainArgs(t *testing.T) {
	g, err := Load("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range g.Expand() {
		r.Exec.NProc = 2
		s := parseTrain(t, trainArgs(t, r, "runs/"+r.ID, true)[1:]...)
		c, err := s.Config(r.Config.Strategy == "lcl")
		if err != nil {
			t.Fatal(err)
		}
		want := r.Config
		if want.Params == nil {
			want.Params = map[string]string{}
		}
		if !reflect.DeepEqual(c, want) || c.ID() != r.ID {
			t.Errorf("%s: Config(TrainArgs) = %+v (%s), want %+v", r.Describe(), c, c.ID(), want)
		}
		if s.Exec.NProc != 2 || s.Exec.Threads != 2 || s.Exec.Device != "cpu" || !s.Exec.Resume || !s.Exec.NoStore || s.Exec.Out != "runs/"+r.ID {
			t.Errorf("%s: execution settings %+v", r.Describe(), s.Exec)
		}
		direct, err := r.Spec()
		if err != nil {
			t.Fatal(err)
		}
		direct.Exec.Out, direct.Exec.Resume, direct.Exec.NoStore = s.Exec.Out, true, true
		if !reflect.DeepEqual(direct, s) {
			t.Errorf("%s: Run.Spec = %+v, the command line gives %+v", r.Describe(), direct, s)
		}
	}
}

func TestTrainSpecConfig(t *testing.T) {
	base := []string{"--synsets", "fashion-mnist", "--strategy", "lcl", "--fraction", "0.02", "--epsilon", "0.9"}
	want := simstore.RunConfig{Labels: "fashion-mnist", Model: "cnn", Strategy: "lcl", Fraction: 0.02, Seed: 1, Source: "semantic",
		Params: map[string]string{"epsilon": "0.9"}}
	for _, tc := range []struct {
		name       string
		args       []string
		similarity bool
		edit       func(*simstore.RunConfig)
	}{
		{"defaults", nil, true, nil},
		{"no similarity: no source", nil, false, func(c *simstore.RunConfig) { c.Source = "" }},
		{"execution flags left out",
			[]string{"--device", "cuda", "--threads", "4", "--out", "runs/x", "--resume", "--nproc", "2", "--workers", "3",
				"--dist-bind", "any", "--plugin-timeout", "1m", "--channels-last", "--log-every", "5", "--metrics-every", "7"},
			true, nil},
		{"result flags kept", []string{"--batch", "16", "--lr", "0.10", "--precision", "bf16", "--nesterov", "--milestones", "3,6"}, true,
			func(c *simstore.RunConfig) {
				c.Args = map[string]string{"batch": "16", "lr": "0.1", "precision": "bf16", "nesterov": "true", "milestones": "3,6"}
			}},
		{"a default given is kept", []string{"--precision", "fp32", "--momentum", "0"}, true,
			func(c *simstore.RunConfig) { c.Args = map[string]string{"precision": "fp32", "momentum": "0"} }},
		{"epochs and preset when given", []string{"--epochs", "3", "--preset", "goyal"}, true,
			func(c *simstore.RunConfig) { c.Epochs, c.Preset = 3, "goyal" }},
		{"a matrix file replaces the source", []string{"--matrix", "s.npy"}, true,
			func(c *simstore.RunConfig) { c.Source, c.Args = "", map[string]string{"matrix": "s.npy"} }},
		{"a store key replaces the source", []string{"--similarity-key", "sim/x"}, true,
			func(c *simstore.RunConfig) { c.Source, c.Args = "", map[string]string{"similarity-key": "sim/x"} }},
		{"a matrix a strategy does not use is no setting", []string{"--matrix", "s.npy"}, false,
			func(c *simstore.RunConfig) { c.Source = "" }},
		{"optimiser and model selection", []string{"--optimizer", "adamw", "--betas", "0.9,0.99", "--eps", "1e-7", "--clip-grad-norm", "1",
			"--ema-decay", "0.999", "--val-fraction", "0.1", "--select", "loss", "--patience", "3", "--test-every-epoch"}, true,
			func(c *simstore.RunConfig) {
				c.Args = map[string]string{"optimizer": "adamw", "betas": "0.9,0.99", "eps": "1e-07", "clip-grad-norm": "1", "ema-decay": "0.999",
					"val-fraction": "0.1", "select": "loss", "patience": "3", "test-every-epoch": "true"}
			}},
		{"params merge", []string{"--param", "epsilon=0.9", "--param", "per-step=true"}, true,
			func(c *simstore.RunConfig) { c.Params["per-step"] = "true" }},
		{"init and its skips", []string{"--init", "w.safetensors", "--init-skip", "fc,head", "--init-skip", "aux"}, true,
			func(c *simstore.RunConfig) {
				c.Args = map[string]string{"init": "w.safetensors", "init-skip": "[fc,head,aux]"}
			}},
	} {
		w := want
		w.Params = map[string]string{"epsilon": "0.9"}
		if tc.edit != nil {
			tc.edit(&w)
		}
		s := parseTrain(t, append(append([]string(nil), base...), tc.args...)...)
		got, err := s.Config(tc.similarity)
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, w)
		}
	}
	s := parseTrain(t, "--epsilon", "0.9", "--param", "epsilon=0.99")
	if _, err := s.Config(true); err == nil || !strings.Contains(err.Error(), "--epsilon 0.9 and --param epsilon=0.99 disagree") {
		t.Errorf("disagreeing epsilons: %v", err)
	}
}

// The flags fill typed fields; a value that does not parse names its flag.
func TestBindTrainFlags(t *testing.T) {
	s := parseTrain(t, "--epochs", "3", "--lr", "0.5", "--nesterov=false", "--schedule", "cosine", "--dist-timeout", "30s",
		"--seed", "7", "--init-skip", "fc")
	o := s.Settings
	if o.Epochs != 3 || o.Schedule.LR != 0.5 || o.Nesterov || !o.Given("nesterov") || o.Schedule.Kind != "cosine" || o.Given("batch") || o.Given("momentum") ||
		s.Exec.DistTimeout != 30*time.Second || s.Seed != 7 || !reflect.DeepEqual(s.InitSkip, []string{"fc"}) {
		t.Errorf("spec %+v, optim %+v", s, o)
	}
	want := []string{"--seed", "7", "--init-skip", "fc", "--epochs", "3", "--nesterov=false", "--schedule", "cosine", "--lr", "0.5",
		"--dist-timeout", "30s"}
	if got := s.Args(); !reflect.DeepEqual(got, want) {
		t.Errorf("Args() = %q, want %q (the flags given, in the table's order)", got, want)
	}
	for _, tc := range []struct{ args, want string }{
		{"--seed x", `invalid argument "x" for "--seed" flag: invalid syntax`},
		{"--milestones 3,-1", "want positive epochs"},
		{"--param noequals", "want NAME=VALUE"},
		{"--betas 0.9", "want two numbers like 0.9,0.999"},
	} {
		s := NewTrainSpec()
		fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		BindTrainFlags(fs, &s)
		if err := fs.Parse(strings.Fields(tc.args)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.args, err, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fraction", "1.5"}, "--fraction 1.5: want 0 < fraction ≤ 1"},
		{[]string{"--precision", "fp8"}, `--precision "fp8": want fp32, bf16, fp16 or auto`},
		{[]string{"--precision", "bf61"}, `--precision "bf61": want fp32, bf16, fp16 or auto; did you mean bf16?`},
		{[]string{"--device", "cdua"}, `--device "cdua": want cpu, cuda or cuda:N (N: the device's index); did you mean cuda?`},
		{[]string{"--device", "cuda:"}, `--device "cuda:": want cpu, cuda or cuda:N`},
		{[]string{"--device", "gpu"}, `--device "gpu": want cpu, cuda or cuda:N`},
		{[]string{"--dist-backend", "glo"}, `--dist-backend "glo": want gloo (CPU) or nccl (CUDA); did you mean gloo?`},
		{[]string{"--eval-batch", "0"}, "--eval-batch 0: want a whole number from 1 to 1048576"},
		{[]string{"--checkpoint-every", "-1"}, "--checkpoint-every -1: want a whole number ≥ 0"},
		{[]string{"--metrics-every", "-1"}, "--metrics-every -1: want a whole number ≥ 0"},
		{[]string{"--nproc", "0"}, "--nproc 0: want a whole number from 1 to 1024"},
		{[]string{"--log-every", "-1"}, "--log-every -1"},
		{[]string{"--val-fraction", "1"}, "--val-fraction 1: want 0 ≤ fraction < 1"},
		{[]string{"--patience", "3"}, "--patience 3 applies to --val-fraction F, and this run has no validation split"},
		{[]string{"--val-fraction", "0.1", "--select", "top3"}, `--select top3: want top1, top5 or loss; did you mean top1 or top5?`},
	} {
		s := parseTrain(t, tc.args...)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: Validate = %v, want %q", tc.args, err, tc.want)
		}
	}
	for _, d := range []string{"cpu", "cuda", "cuda:0", "cuda:12"} {
		s := parseTrain(t, "--device", d)
		if err := s.Validate(); err != nil {
			t.Errorf("--device %s: %v", d, err)
		}
	}
}

// lcl train --config reads a grid's cell; its args and params are lcl
// train's flags, checked; what it leaves out keeps lcl train's defaults.
func TestLoadTrainSpec(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s, err := LoadTrainSpec(write("ok.yaml", `labels: fashion-mnist
model: "cnn:channels=16x32"
fraction: 0.1
strategy: lcl
source: semantic
params: {epsilon: 0.99, per-step: "false"}
seed: 0
epochs: 2
args: {lr: "0.05", precision: bf16}
threads: 2
channels-last: true
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Synsets != "fashion-mnist" || s.Model != "cnn:channels=16x32" || s.Fraction != 0.1 || s.Seed != 0 || *s.Epsilon != 0.99 ||
		s.Params["per-step"] != "false" || s.Settings.Epochs != 2 || s.Settings.Schedule.LR != 0.05 || s.PrecisionName() != "bf16" ||
		s.Exec.Threads != 2 || !s.Exec.ChannelsLast || s.Exec.Device != "cpu" || s.Exec.EvalBatch != 256 {
		t.Errorf("spec %+v", s)
	}
	c, _ := s.Config(true)
	want := simstore.RunConfig{Labels: "fashion-mnist", Model: "cnn:channels=16x32", Fraction: 0.1, Strategy: "lcl", Source: "semantic",
		Params: map[string]string{"epsilon": "0.99", "per-step": "false"}, Seed: 0, Epochs: 2,
		Args: map[string]string{"lr": "0.05", "precision": "bf16"}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Config = %+v, want %+v", c, want)
	}
	// Defaults: fraction 1, seed 1, the cnn, sl.
	s, err = LoadTrainSpec(write("min.yaml", "labels: mnist\n"))
	if err != nil || s.Fraction != 1 || s.Seed != 1 || s.Model != "cnn" || s.Strategy != "sl" {
		t.Errorf("defaults: %+v %v", s, err)
	}
	for name, tc := range map[string]struct{ text, want string }{
		"unknown key":  {"labels: x\nmodels: [cnn]\n", "line 2: unknown key models; did you mean model? (a run's keys: labels"},
		"unknown flag": {"labels: x\nargs: {learning-rate: 0.1}\n", "args.learning-rate: lcl train has no flag --learning-rate"},
		"bad value":    {"labels: x\nargs: {batch: many}\n", `args.batch: --batch "many": invalid syntax`},
		"bad fraction": {"labels: x\nfraction: 2\n", "--fraction 2: want 0 < fraction ≤ 1"},
		"two runs":     {"labels: x\n---\nlabels: y\n", "line 2: the file holds one run"},
		"empty":        {"", "empty file"},
	} {
		p := write(strings.ReplaceAll(name, " ", "-")+".yaml", tc.text)
		if _, err := LoadTrainSpec(p); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want %q naming the file", name, err, tc.want)
		}
	}
}

// A run directory's lcl-run.json (the runner's) is a cell too: the run it
// gives has the grid run's key.
func TestLoadTrainSpecOfARunDirectory(t *testing.T) {
	g, err := Load("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range g.Expand() {
		path := filepath.Join(t.TempDir(), ConfigFile)
		raw, _ := json.MarshalIndent(r.Config, "", "  ")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := LoadTrainSpec(path)
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := s.Config(r.Config.Strategy == "lcl"); c.ID() != r.ID {
			t.Errorf("%s: %+v, want %+v", r.Describe(), c, r.Config)
		}
	}
}

// A grid's params that are no flag of lcl train are the strategy's own
// (--param NAME=VALUE), both in the command line and in the spec.
func TestStrategyParamsOfAGrid(t *testing.T) {
	r := Cell{Labels: "fashion-mnist", Strategy: "ls", Params: map[string]string{"alpha": "0.2"}}.Run()
	args := strings.Join(trainArgs(t, r, "d", false), " ")
	if !strings.Contains(args, "--param alpha=0.2") {
		t.Errorf("TrainArgs %s", args)
	}
	s, err := r.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Config(false)
	if c.ID() != r.ID {
		t.Errorf("Spec().Config() = %+v, want %+v", c, r.Config)
	}
}

// --randaugment, --trivialaugment and --random-erasing become the data's
// Augment, key the run (its Args) as given, and bad values are refused
// naming the flag.
func TestTrainSpecAugment(t *testing.T) {
	s := parseTrain(t, "--randaugment", "2, 9", "--random-erasing", "0.25")
	a, err := s.Augment()
	if err != nil || a.RandAugmentN != 2 || a.RandAugmentM != 9 || a.TrivialAugment || a.Erasing != 0.25 {
		t.Fatalf("Augment() = %+v, %v", a, err)
	}
	c, err := s.Config(false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Args["randaugment"] != "2,9" || c.Args["random-erasing"] != "0.25" || len(c.Args) != 2 {
		t.Errorf("Args = %v, want randaugment=2,9 random-erasing=0.25", c.Args)
	}
	plain := parseTrain(t)
	if c2, _ := plain.Config(false); c2.ID() == c.ID() {
		t.Errorf("augmented and plain runs share the key %s", c.ID())
	}
	ta := parseTrain(t, "--trivialaugment")
	if a, err := ta.Augment(); err != nil || !a.TrivialAugment || a.String() != "trivialaugment" {
		t.Errorf("--trivialaugment: %+v, %v", a, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--randaugment", "2,9", "--trivialaugment"}, "choose one"},
		{[]string{"--random-erasing", "1.5"}, "--random-erasing 1.5"},
	} {
		s := parseTrain(t, c.args...)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: Validate() = %v, want %q", c.args, err, c.want)
		}
	}
	fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	sp := NewTrainSpec()
	BindTrainFlags(fs, &sp)
	if err := fs.Parse([]string{"--randaugment", "2,31"}); err == nil || !strings.Contains(err.Error(), "randaugment") {
		t.Errorf("--randaugment 2,31: %v", err)
	}
	if err := sp.SetTrainFlag("randaugment", "3"); err == nil {
		t.Errorf("a grid's randaugment: 3 accepted")
	}
}

// A recipe preset's augmentation and mixing apply where the command line
// gives none; a policy or a mixing α given replaces the preset's pair, and
// the run's own configuration (its key) stays what was asked.
func TestApplyPresetFlags(t *testing.T) {
	modern, err := trainer.PresetByName("cifar-modern")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     []string
		aug, mix string
	}{
		{nil, "trivialaugment erasing=0.5", "mixup=1 cutmix=1"},
		{[]string{"--randaugment", "2,9"}, "randaugment=2,9 erasing=0.5", "mixup=1 cutmix=1"},
		{[]string{"--random-erasing", "0.1", "--mixup", "0.2"}, "trivialaugment erasing=0.1", "mixup=0.2"},
		{[]string{"--cutmix", "0.5", "--mix-prob", "0.5"}, "trivialaugment erasing=0.5", "cutmix=0.5 prob=0.5"},
	} {
		s := parseTrain(t, append([]string{"--preset", "cifar-modern"}, tc.args...)...)
		before, err := s.Config(false)
		if err != nil {
			t.Fatal(err)
		}
		eff := s
		if err := eff.ApplyPresetFlags(modern); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		aug, err := eff.Augment()
		if err != nil {
			t.Fatal(err)
		}
		if aug.String() != tc.aug || eff.Mixing().String() != tc.mix {
			t.Errorf("%v: augment %q mix %q, want %q and %q", tc.args, aug, eff.Mixing(), tc.aug, tc.mix)
		}
		if after, _ := s.Config(false); !reflect.DeepEqual(before, after) {
			t.Errorf("%v: the run's configuration changed: %+v, then %+v", tc.args, before, after)
		}
	}
	bad := trainer.Preset{Name: "broken", Flags: map[string]string{"mixupp": "1"}}
	if err := (&TrainSpec{Fraction: 1, Exec: TrainExec{NProc: 1}}).ApplyPresetFlags(bad); err == nil || !strings.Contains(err.Error(), "--mixupp") {
		t.Errorf("a preset with an unknown flag: %v", err)
	}
}

// Every flag of lcl train given a value other than its default: Args
// names each flag, and parses back into the same spec (the one mapping
// from settings to flags that grids, cluster scripts and the runner's log
// use). Defaults give no flags, and a default given to an optional
// setting stays given.
func TestArgsParseBack(t *testing.T) {
	sample := map[string]string{"randaugment": "2,9", "milestones": "3,6", "betas": "0.8,0.99", "param": "alpha=0.5",
		"optim-param": "beta1=0.8", "init-skip": "fc,layer4", "precision": "bf16", "select": "top5"}
	byType := map[string]string{"string": "x", "float": "0.25", "int": "3", "duration": "90s"}
	var args []string
	def := NewTrainSpec()
	for _, f := range trainFlags {
		v, ok := sample[f.name]
		if !ok && f.bind(&def).Type() == "bool" {
			v = strconvNot(f.bind(&def).String())
		} else if !ok {
			v = byType[f.bind(&def).Type()]
		}
		if v == "" {
			t.Fatalf("--%s (%s): no sample value", f.name, f.bind(&def).Type())
		}
		args = append(args, "--"+f.name+"="+v)
	}
	s := parseTrain(t, args...)
	back := s.Args()
	for _, f := range trainFlags {
		if !slices.ContainsFunc(back, func(a string) bool { return a == "--"+f.name || strings.HasPrefix(a, "--"+f.name+"=") }) {
			t.Errorf("Args() lacks --%s: %q", f.name, back)
		}
	}
	if got := parseTrain(t, back...); !reflect.DeepEqual(got, s) {
		t.Errorf("Args() = %q parses into\n%+v\nwant\n%+v", back, got, s)
	}
	if got := def.Args(); len(got) != 0 {
		t.Errorf("the defaults' Args() = %q, want none", got)
	}
	given := parseTrain(t, "--precision", "fp32", "--momentum", "0", "--tf32=false", "--param", "b=2", "--param", "a=1")
	if got, want := given.Args(), []string{"--param", "a=1", "--param", "b=2", "--momentum", "0", "--precision", "fp32", "--tf32=false"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Args() = %q, want %q", got, want)
	}
}

func strconvNot(b string) string {
	if b == "true" {
		return "false"
	}
	return "true"
}
