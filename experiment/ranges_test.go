package experiment

import (
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/trainer"
)

// refusedFlags are, for every number flag of lcl train (its own and the
// trainer's settings table's), values Validate refuses, with what the
// one-line error says after "--NAME VALUE: ".
var refusedFlags = map[string][]struct{ v, want string }{
	"fraction":         {{"0", "want 0 < fraction ≤ 1"}, {"-0.5", "want 0 < fraction"}, {"1.5", "want 0 < fraction"}, {"NaN", "want 0 < fraction"}, {"+Inf", "want 0 < fraction"}, {"-Inf", "want 0 < fraction"}},
	"random-erasing":   {{"-0.1", "want a probability"}, {"1.1", "want a probability"}, {"NaN", "want a probability"}, {"+Inf", "want a probability"}, {"-Inf", "want a probability"}},
	"mixup":            {{"-1", "want α ≥ 0"}, {"NaN", "want α ≥ 0"}, {"+Inf", "want α ≥ 0"}, {"-Inf", "want α ≥ 0"}},
	"cutmix":           {{"-1", "want α ≥ 0"}, {"NaN", "want α ≥ 0"}, {"+Inf", "want α ≥ 0"}, {"-Inf", "want α ≥ 0"}},
	"mix-prob":         {{"0", "want a probability"}, {"-0.5", "want a probability"}, {"2", "want a probability"}, {"NaN", "want a probability"}, {"+Inf", "want a probability"}, {"-Inf", "want a probability"}},
	"mix-switch-prob":  {{"0", "want a probability"}, {"-0.5", "want a probability"}, {"2", "want a probability"}, {"NaN", "want a probability"}, {"+Inf", "want a probability"}, {"-Inf", "want a probability"}},
	"epochs":           {{"0", "want a whole number from 1 to 1000000"}, {"-3", "want a whole number from 1"}, {"9223372036854775807", "want a whole number from 1 to 1000000"}},
	"batch":            {{"0", "want a whole number from 1 to 1048576"}, {"-1", "want a whole number from 1"}, {"4294967296", "want a whole number from 1 to 1048576"}},
	"momentum":         {{"-1", "want a finite value ≥ 0"}, {"NaN", "want a finite value ≥ 0"}, {"+Inf", "want a finite value ≥ 0"}, {"-Inf", "want a finite value ≥ 0"}},
	"weight-decay":     {{"-1", "want a finite value ≥ 0"}, {"NaN", "want a finite value ≥ 0"}, {"+Inf", "want a finite value ≥ 0"}, {"-Inf", "want a finite value ≥ 0"}},
	"lr":               {{"0", "want a finite value > 0"}, {"-0.1", "want a finite value > 0"}, {"NaN", "want a finite value > 0"}, {"+Inf", "want a finite value > 0"}, {"-Inf", "want a finite value > 0"}},
	"gamma":            {{"0", "want a finite value > 0"}, {"-1", "want a finite value > 0"}, {"NaN", "want a finite value > 0"}, {"+Inf", "want a finite value > 0"}, {"-Inf", "want a finite value > 0"}},
	"step-size":        {{"0", "want a whole number from 1 to 1000000"}, {"1000001", "want a whole number from 1 to 1000000"}},
	"warmup":           {{"-1", "want a whole number from 0 to 1000000"}, {"1000001", "want a whole number from 0 to 1000000"}},
	"warmup-start-lr":  {{"-1", "want a finite value ≥ 0"}, {"NaN", "want a finite value ≥ 0"}, {"+Inf", "want a finite value ≥ 0"}, {"-Inf", "want a finite value ≥ 0"}},
	"eps":              {{"NaN", "want a finite number"}, {"+Inf", "want a finite number"}, {"-Inf", "want a finite number"}},
	"clip-grad-norm":   {{"-1", "want a finite value ≥ 0"}, {"NaN", "want a finite value ≥ 0"}, {"+Inf", "want a finite value ≥ 0"}, {"-Inf", "want a finite value ≥ 0"}},
	"ema-decay":        {{"1", "want 0 ≤ decay < 1"}, {"-0.5", "want 0 ≤ decay < 1"}, {"NaN", "want 0 ≤ decay < 1"}, {"+Inf", "want 0 ≤ decay < 1"}, {"-Inf", "want 0 ≤ decay < 1"}},
	"val-fraction":     {{"1", "want 0 ≤ fraction < 1"}, {"-0.5", "want 0 ≤ fraction < 1"}, {"NaN", "want 0 ≤ fraction < 1"}, {"+Inf", "want 0 ≤ fraction < 1"}, {"-Inf", "want 0 ≤ fraction < 1"}},
	"patience":         {{"-1", "want a whole number from 0 to 1000000"}, {"1000001", "want a whole number from 0 to 1000000"}},
	"test-every":       {{"-1", "want a whole number from 0 to 1000000"}, {"1000001", "want a whole number from 0 to 1000000"}},
	"checkpoint-every": {{"-1", "want a whole number ≥ 0"}},
	"eval-batch":       {{"0", "want a whole number from 1 to 1048576"}, {"-1", "want a whole number from 1"}, {"1048577", "want a whole number from 1 to 1048576"}},
	"metrics-every":    {{"-1", "want a whole number ≥ 0"}},
	"log-every":        {{"-1", "want a whole number ≥ 0"}},
	"threads":          {{"-1", "want a whole number from 0 to 1024"}, {"100000000", "want a whole number from 0 to 1024"}},
	"workers":          {{"-1", "want a whole number from 0 to 1024"}, {"100000000", "want a whole number from 0 to 1024"}},
	"nproc":            {{"0", "want a whole number from 1 to 1024"}, {"-2", "want a whole number from 1"}, {"100000000", "want a whole number from 1 to 1024"}},
	"plugin-timeout":   {{"-1s", "want a duration ≥ 0"}},
	"dist-timeout":     {{"0s", "want a duration > 0"}, {"-5m", "want a duration > 0"}},
}

// anyValue are the number flags every value of which is a run: why.
var anyValue = map[string]string{
	"seed":    "any 64-bit seed seeds the generators",
	"epsilon": "a strategy's parameter: the strategy checks it (trainrun, lcl train's and the grid's checks)",
}

// TestEveryNumberFlagRefused walks every number flag of lcl train (int,
// float, duration: its own rows and the trainer's settings rows) and
// feeds it the values it must refuse — NaN, ±Inf, negative, 0 and huge
// where its range leaves them out — through the command line and a grid's
// args alike: Validate refuses each with one line naming the flag and the
// value, before anything reads a file.
func TestEveryNumberFlagRefused(t *testing.T) {
	var seen []string
	for _, f := range trainFlags {
		typ := f.bind(&TrainSpec{}).Type()
		if typ != "int" && typ != "float" && typ != "duration" {
			continue
		}
		seen = append(seen, f.name)
		cases, ok := refusedFlags[f.name]
		if _, free := anyValue[f.name]; free {
			if ok {
				t.Errorf("--%s: both refused values and any value", f.name)
			}
			continue
		}
		if !ok {
			t.Errorf("--%s (%s): no refused values here: give its range a check (trainFlags' or the settings table's row)", f.name, typ)
			continue
		}
		var values []string
		for _, c := range cases {
			values = append(values, c.v)
		}
		for _, v := range map[string][]string{"float": {"NaN", "+Inf", "-Inf"}}[typ] {
			if !slices.Contains(values, v) {
				t.Errorf("--%s: %s is not among its refused values %q", f.name, v, values)
			}
		}
		for _, c := range cases {
			s := parseTrain(t, "--"+f.name, c.v)
			if f.name == "mix-prob" || f.name == "mix-switch-prob" {
				s = parseTrain(t, "--mixup", "1", "--cutmix", "1", "--"+f.name, c.v)
			}
			err := s.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), "--"+f.name+" ") || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("--%s %s: Validate = %v, want one line \"--%s …: %s\"", f.name, c.v, err, f.name, c.want)
			}
			// A grid's args key is the same flag, refused by the same check.
			g := "labels: fashion-mnist\nmodels: [cnn]\nfractions: [1]\nseeds: [1]\nstrategies: [{name: sl}]\nargs: {" + f.name + ": \"" + c.v + "\"}\n"
			if f.name == "fraction" || f.name == "epochs" || f.name == "threads" || f.name == "nproc" || f.name == "test-every" {
				continue // a grid's own keys, below
			}
			if f.name == "mix-prob" || f.name == "mix-switch-prob" {
				g = strings.Replace(g, "args: {", "args: {mixup: 1, cutmix: 1, ", 1)
			}
			if _, err := Parse([]byte(g)); err == nil || !strings.Contains(err.Error(), "--"+f.name+" ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("grid args.%s: %s: Parse = %v, want %q", f.name, c.v, err, c.want)
			}
		}
	}
	for name := range refusedFlags {
		if !slices.Contains(seen, name) {
			t.Errorf("refused values of --%s, no such number flag", name)
		}
	}
	if len(seen) < 25 {
		t.Errorf("only %d number flags seen: %q", len(seen), seen)
	}
	// Every row of the trainer's settings table that is a number flag is
	// among them.
	for _, r := range trainer.SettingsTable() {
		if (r.Type == "int" || r.Type == "float") && !r.Flagless && !slices.Contains(seen, r.Name) {
			t.Errorf("settings row --%s is no number flag of lcl train", r.Name)
		}
	}
}

// A grid's own number keys (epochs, threads, nproc, fractions) are refused
// by the checks of the flags they set, naming the key's line.
func TestGridNumberKeysRefused(t *testing.T) {
	const head = "labels: fashion-mnist\nmodels: [cnn]\nseeds: [1]\nstrategies: [{name: sl}]\n"
	for _, tc := range []struct{ grid, want string }{
		{head + "fractions: [1]\nepochs: 9223372036854775807\n", "line 6: epochs: --epochs 9223372036854775807: want a whole number from 1 to 1000000"},
		{head + "fractions: [1]\nthreads: 100000000\n", "line 6: threads: --threads 100000000: want a whole number from 0 to 1024"},
		{head + "fractions: [1]\nnproc: 5000\n", "line 6: nproc: --nproc 5000: want a whole number from 1 to 1024"},
		{head + "fractions: [1]\ntest-every: -1\n", "line 6: test-every: --test-every -1: want a whole number from 0 to 1000000"},
		{head + "fractions: [.nan]\n", "line 5: fractions[0]: NaN is not in (0, 1]"},
		{head + "fractions: [1, .inf]\n", "line 5: fractions[1]: +Inf is not in (0, 1]"},
		{head + "fractions: [1]\npreset: cifar-modrn\n", `line 6: preset: --preset cifar-modrn: unknown preset "cifar-modrn"; did you mean cifar-modern?`},
	} {
		_, err := Parse([]byte(tc.grid))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line %q", tc.grid, err, tc.want)
		}
	}
}
