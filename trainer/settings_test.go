package trainer

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// given is the settings of a command line's NAME VALUE pairs.
func given(t *testing.T, pairs ...string) Settings {
	t.Helper()
	var s Settings
	for i := 0; i < len(pairs); i += 2 {
		if err := s.Set(pairs[i], pairs[i+1]); err != nil {
			t.Fatalf("--%s %s: %v", pairs[i], pairs[i+1], err)
		}
	}
	return s
}

func TestPresetApply(t *testing.T) {
	fm, err := PresetByName("fmnist-cnn") // 20 epochs, batch 128, cosine from 0.05
	if err != nil {
		t.Fatal(err)
	}
	op, err := fm.Apply(1, Settings{})
	if err != nil || op.Epochs != fm.Epochs || op.Batch != fm.Batch || op.Schedule.LR != fm.Schedule.LR || op.Schedule.Kind != fm.Schedule.Kind {
		t.Fatalf("nothing given: %+v %v", op, err)
	}
	// To step from cosine: gamma 0.1 unless given.
	op, err = fm.Apply(1, given(t, "schedule", "step", "step-size", "5", "epochs", "3"))
	if err != nil || op.Schedule.Kind != "step" || op.Schedule.Gamma != 0.1 || op.Schedule.StepSize != 5 || op.Epochs != 3 {
		t.Fatalf("step: %+v %v", op, err)
	}
	op, err = fm.Apply(1, given(t, "schedule", "multistep", "milestones", "2,4", "gamma", "0.5"))
	if err != nil || op.Schedule.Gamma != 0.5 || len(op.Schedule.Milestones) != 2 {
		t.Fatalf("multistep: %+v %v", op, err)
	}
	// goyal scales the learning rate with the global batch unless it is given.
	g, err := PresetByName("goyal")
	if err != nil {
		t.Fatal(err)
	}
	scaled, err := g.Apply(4, Settings{})
	lr, err2 := g.Apply(4, given(t, "lr", "0.3"))
	if err != nil || err2 != nil || scaled.Batch != 4*g.WorkerBatch || scaled.Schedule.LR != g.Schedule.LR*float64(scaled.Batch)/float64(g.RefBatch) || lr.Schedule.LR != 0.3 {
		t.Fatalf("goyal: %+v %+v %v %v", scaled, lr, err, err2)
	}
	for _, tt := range []struct {
		given []string
		want  string
	}{
		{[]string{"optimizer", "adam", "momentum", "0.9"}, "--momentum 0.9 applies to --optimizer sgd or rmsprop, and this run has --optimizer adam: give --optimizer sgd or rmsprop, or drop --momentum"},
		{[]string{"optimizer", "adam", "nesterov", "true"}, "--nesterov true applies to --optimizer sgd, and this run has --optimizer adam"},
		{[]string{"momentum", "0", "nesterov", "true"}, "nesterov needs a momentum"},
		// A schedule's own setting for another schedule (fm's preset: cosine).
		{[]string{"milestones", "3,5"}, "--milestones 3,5 applies to --schedule multistep, and this run has --schedule cosine"},
		{[]string{"schedule", "step", "milestones", "3,5"}, "--milestones 3,5 applies to --schedule multistep, and this run has --schedule step"},
		{[]string{"step-size", "3"}, "--step-size 3 applies to --schedule step"},
		{[]string{"gamma", "0.5", "schedule", "constant"}, "--gamma 0.5 applies to --schedule step or multistep, and this run has --schedule constant"},
		{[]string{"betas", "0.9,0.99"}, "--betas: optimizer sgd has no parameter beta1 (its parameters: momentum, weight_decay, nesterov)"},
		{[]string{"optimizer", "adam", "betas", "0.9,1"}, "adam beta2 1: want 0 ≤ value < 1"},
		{[]string{"optimizer", "radam", "optim-param", "momentum_decay=0.1"}, "--optim-param momentum_decay: optimizer radam has no parameter momentum_decay"},
		{[]string{"optim-param", "weight_decay=0.1"}, "--optim-param weight_decay: set weight_decay with --weight-decay"},
		{[]string{"warmup-start-lr", "0.001"}, "--warmup-start-lr 0.001 applies to --warmup N, and this run has no warm-up"},
	} {
		if _, err := fm.Apply(1, given(t, tt.given...)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.given, err, tt.want)
		}
	}
}

// refused are values each row of the table refuses, with what its one
// check says: every number row refuses NaN and ±Inf (floats) or a huge
// value (whole numbers), and what its range leaves out.
var refused = map[string][]struct{ v, want string }{
	"epochs": {{"0", "want a whole number from 1 to 1000000"}, {"-1", "want a whole number from 1 to 1000000"},
		{"1000001", "want a whole number from 1 to 1000000"}, {"9223372036854775807", "want a whole number from 1 to 1000000"}},
	"batch":        {{"0", "want a whole number from 1 to 1048576"}, {"1048577", "want a whole number from 1 to 1048576"}},
	"momentum":     {{"-0.1", "want a finite value ≥ 0"}, {"NaN", "want a finite value ≥ 0"}, {"+Inf", "want a finite value ≥ 0"}, {"-Inf", "want a finite value ≥ 0"}},
	"weight-decay": {{"-1", "want a finite value ≥ 0"}, {"NaN", "want a finite value ≥ 0"}, {"+Inf", "want a finite value ≥ 0"}, {"-Inf", "want a finite value ≥ 0"}},
	"schedule":     {{"poly", "want constant, step, multistep, cosine"}, {"cosin", "want constant, step, multistep, cosine; did you mean cosine?"}},
	"lr": {{"0", "want a finite value > 0"}, {"-1", "want a finite value > 0"}, {"NaN", "want a finite value > 0"},
		{"+Inf", "want a finite value > 0"}, {"-Inf", "want a finite value > 0"}},
	"gamma": {{"0", "want a finite value > 0 (the factor"}, {"-1", "want a finite value > 0"}, {"NaN", "want a finite value > 0"},
		{"+Inf", "want a finite value > 0"}, {"-Inf", "want a finite value > 0"}},
	"step-size":  {{"0", "want a whole number from 1 to 1000000 epochs"}, {"2000000", "want a whole number from 1 to 1000000 epochs"}},
	"milestones": {{"5,3", "want increasing epochs up to 1000000 (e.g. 60,120,160)"}, {"3,1000001", "want increasing epochs up to 1000000"}},
	"warmup":     {{"-1", "want a whole number from 0 to 1000000 epochs (0: none)"}, {"1000001", "want a whole number from 0 to 1000000 epochs"}},
	"warmup-start-lr": {{"-0.1", "want a finite value ≥ 0 (0: from LR/1000, ramping per step)"}, {"NaN", "want a finite value ≥ 0"},
		{"+Inf", "want a finite value ≥ 0"}, {"-Inf", "want a finite value ≥ 0"}},
	"optimizer":   {{"adamx", "want sgd, rmsprop, adam, adamw, radam or nadam; did you mean adam"}, {"lamb", "want sgd, rmsprop"}},
	"betas":       {{"NaN,0.999", "want a finite number"}, {"0.9,+Inf", "want a finite number"}, {"-Inf,0.9", "want a finite number"}},
	"eps":         {{"NaN", "want a finite number"}, {"+Inf", "want a finite number"}, {"-Inf", "want a finite number"}},
	"optim-param": {{"momentum_decay=NaN", "want a finite number"}, {"momentum_decay=+Inf", "want a finite number"}, {"momentum_decay=-Inf", "want a finite number"}},
	"clip-grad-norm": {{"-1", "want a finite value ≥ 0 (0: no clipping)"}, {"NaN", "want a finite value ≥ 0"},
		{"+Inf", "want a finite value ≥ 0"}, {"-Inf", "want a finite value ≥ 0"}},
	"ema-decay": {{"1", "want 0 ≤ decay < 1 (0: none; e.g. 0.9998)"}, {"-0.1", "want 0 ≤ decay < 1"}, {"NaN", "want 0 ≤ decay < 1"},
		{"+Inf", "want 0 ≤ decay < 1"}, {"-Inf", "want 0 ≤ decay < 1"}},
	"val-fraction": {{"1", "want 0 ≤ fraction < 1 (0: no validation split)"}, {"-0.1", "want 0 ≤ fraction < 1"}, {"NaN", "want 0 ≤ fraction < 1"},
		{"+Inf", "want 0 ≤ fraction < 1"}, {"-Inf", "want 0 ≤ fraction < 1"}},
	"select":     {{"top3", "want top1, top5 or loss; did you mean top1"}},
	"patience":   {{"-1", "want a whole number from 0 to 1000000 epochs (0: no early stopping)"}, {"1000001", "want a whole number from 0 to 1000000"}},
	"test-every": {{"-1", "want a whole number from 0 to 1000000 epochs (0 or 1: every epoch)"}, {"1000001", "want a whole number from 0 to 1000000"}},
}

// refusedBase is what row name needs to apply: a schedule of its own, a
// validation split, an optimizer with the parameter.
func refusedBase(name string) []string {
	switch name {
	case "milestones":
		return []string{"schedule", "multistep"}
	case "warmup-start-lr":
		return []string{"warmup", "1"}
	case "select", "patience":
		return []string{"val-fraction", "0.1"}
	case "step-size":
		return []string{"schedule", "step"}
	case "schedule":
		return nil
	case "betas", "eps":
		return []string{"optimizer", "adam"}
	case "optim-param":
		return []string{"optimizer", "nadam"}
	}
	return []string{"schedule", "step", "step-size", "2"}
}

// TestEveryRefusedValue runs every refused value of every row: refused
// with one wording, "--NAME VALUE: want …", whether lcl train checks the
// flag (Settings.Check), a preset takes it (Apply) or the trainer checks a
// run's Optim or ModelSelection. Every row with a flag and a value other
// than true/false has refused values here, and every number row refuses
// NaN and ±Inf (floats) or a value above its range (whole numbers).
func TestEveryRefusedValue(t *testing.T) {
	fm, err := PresetByName("fmnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range SettingsTable() {
		if r.Flagless || r.Type == "bool" {
			continue
		}
		cases, ok := refused[r.Name]
		if !ok || r.check == nil {
			t.Errorf("--%s: no check or no refused value here", r.Name)
		}
		var values []string
		for _, c := range cases {
			values = append(values, c.v)
		}
		numbers := map[string][]string{"float": {"NaN", "+Inf", "-Inf"}}[r.Type]
		for _, v := range numbers {
			if !slices.Contains(values, v) {
				t.Errorf("--%s: %s is not among its refused values %q", r.Name, v, values)
			}
		}
		if r.Type == "int" && !slices.ContainsFunc(values, func(v string) bool { return len(v) >= 7 }) {
			t.Errorf("--%s: no value above its range among %q", r.Name, values)
		}
		for _, c := range cases {
			checkRefused(t, fm, r, c.v, c.want)
		}
	}
	for name := range refused {
		if settingIndex(name) < 0 {
			t.Errorf("refused values of %s, no such row", name)
		}
	}
}

// checkRefused sets row r to v over what it needs and asserts each check
// refuses it with "--NAME VALUE: want".
func checkRefused(t *testing.T, fm Preset, r Setting, v, wantIs string) {
	t.Helper()
	s := given(t, refusedBase(r.Name)...)
	if err := s.Set(r.Name, v); err != nil {
		t.Fatalf("--%s %s does not parse: %v", r.Name, v, err)
	}
	want := "--" + r.Name + " " + s.Value(r.Name) + ": " + wantIs
	errs := map[string]error{"Check": s.Check()}
	if r.Group == groupSelection {
		errs["ModelSelection.Check"] = s.ModelSelection.Check()
	} else {
		_, errs["Apply"] = fm.Apply(1, s)
		run := Settings{Optim: fm.Optim}
		for i, x := range settingsTable {
			if s.given&(1<<i) != 0 {
				if err := x.apply(&run, &s); err != nil {
					t.Fatal(err)
				}
			}
		}
		// (--optim-param's values are the optimizer's parameters in a
		// run: its check names them, as optimizers_test shows.)
		if r.Name != "optim-param" {
			errs["Optim.Validate"] = run.Optim.Validate()
		}
	}
	for by, err := range errs {
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s of --%s %s: %v, want one line %q", by, r.Name, v, err, want)
		}
	}
}

// Adam's settings: the preset's SGD momentum does not carry over, betas and
// epsilon are set or default, clipping and the moving average are kept.
func TestPresetApplyAdam(t *testing.T) {
	fm, err := PresetByName("fmnist-cnn") // SGD, momentum 0.9, Nesterov
	if err != nil {
		t.Fatal(err)
	}
	op, err := fm.Apply(1, given(t, "optimizer", "adamw", "lr", "1e-3", "clip-grad-norm", "1", "ema-decay", "0.999"))
	if err != nil || op.Momentum != 0 || op.Nesterov || op.ClipNorm != 1 || op.EMADecay != 0.999 || op.Optimizer != "adamw" || op.Params != nil {
		t.Fatalf("adamw: %+v %v", op, err)
	}
	op, err = fm.Apply(1, given(t, "optimizer", "adam", "betas", "0.8,0.99", "eps", "1e-6"))
	if err != nil || !maps.Equal(op.Params, map[string]float64{"beta1": 0.8, "beta2": 0.99, "eps": 1e-6}) {
		t.Fatalf("adam: %+v %v", op, err)
	}
	// Any parameter by name; the preset's own (rmsprop's decay and
	// epsilon) are dropped with its optimizer.
	inc, err := PresetByName("inception-resnet-v2")
	if err != nil {
		t.Fatal(err)
	}
	op, err = inc.Apply(1, given(t, "optimizer", "nadam", "optim-param", "momentum_decay=0.01"))
	if err != nil || op.Momentum != 0 || !maps.Equal(op.Params, map[string]float64{"momentum_decay": 0.01}) {
		t.Fatalf("nadam: %+v %v", op, err)
	}
	op, err = inc.Apply(1, given(t, "eps", "0.5"))
	if err != nil || !maps.Equal(op.Params, map[string]float64{"decay": 0.9, "eps": 0.5}) || op.Momentum != 0.9 {
		t.Fatalf("rmsprop: %+v %v", op, err)
	}
	// The preset's Params are not shared with the run's.
	if inc.Params["eps"] != 1 {
		t.Errorf("preset's eps now %v", inc.Params["eps"])
	}
}

// ParseBetas reads --betas: two numbers, spaces allowed.
func TestParseBetas(t *testing.T) {
	if b, err := ParseBetas("0.8, 0.99"); err != nil || !slices.Equal(b, []float64{0.8, 0.99}) {
		t.Errorf("0.8, 0.99: %v %v", b, err)
	}
	for _, bad := range []string{"0.9", "0.9,x", "0.9,0.99,0.999", ""} {
		if _, err := ParseBetas(bad); err == nil || !strings.Contains(err.Error(), "want two numbers like 0.9,0.999") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// The identity written from the rows is the printf identity of the lcl
// before them (checkpoints written then resume: TestOldCheckpointsResume).
func TestIdentityOfTheRows(t *testing.T) {
	for _, tc := range []struct {
		o    Optim
		want string
	}{
		{Optim{Epochs: 4, Batch: 32, Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4, Schedule: Schedule{Kind: "cosine", LR: 0.05, Warmup: 1}},
			"epochs=4 batch=32 momentum=0.9 nesterov=true wd=0.0005 schedule={Kind:cosine LR:0.05 Gamma:0 StepSize:0 Milestones:[] Warmup:1 MinLR:0}"},
		{Optim{Epochs: 1, Batch: 8, Schedule: Schedule{Kind: "multistep", LR: 0.1, Gamma: 0.1, Milestones: []int{30, 60}}, ClipNorm: 1, EMADecay: 0.99},
			"epochs=1 batch=8 momentum=0 nesterov=false wd=0 schedule={Kind:multistep LR:0.1 Gamma:0.1 StepSize:0 Milestones:[30 60] Warmup:0 MinLR:0} clip=1 ema=0.99"},
		{Optim{Epochs: 1, Batch: 8, Optimizer: "adam", Schedule: Schedule{Kind: "constant", LR: 1e-3}, ClipNorm: 2},
			"epochs=1 batch=8 momentum=0 nesterov=false wd=0 schedule={Kind:constant LR:0.001 Gamma:0 StepSize:0 Milestones:[] Warmup:0 MinLR:0} adam betas=0.9,0.999 eps=1e-08 clip=2"},
		{Optim{Epochs: 1, Batch: 8, Schedule: Schedule{Kind: "cosine", LR: 0.1, Warmup: 5, WarmupStart: 0.001}},
			"epochs=1 batch=8 momentum=0 nesterov=false wd=0 schedule={Kind:cosine LR:0.1 Gamma:0 StepSize:0 Milestones:[] Warmup:5 WarmupStart:0.001 MinLR:0}"},
	} {
		if got := tc.o.identity(); got != tc.want {
			t.Errorf("identity\n%s, want\n%s", got, tc.want)
		}
	}
}
