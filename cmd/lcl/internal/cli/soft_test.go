package cli

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/simstore"
)

// softCSV is a 4-class target matrix for the synthetic data (synth), with
// lcl store export's header and row labels (the classes are numbered).
const softCSV = "class,0,1,2,3\n0,0.7,0.1,0.1,0.1\n1,0.1,0.7,0.1,0.1\n2,0.05,0.05,0.8,0.1\n3,0.25,0.25,0.25,0.25\n"

// softEntropy is the mean row entropy of softCSV's matrix (nats).
func softEntropy() float64 {
	rows := [][]float64{{0.7, 0.1, 0.1, 0.1}, {0.7, 0.1, 0.1, 0.1}, {0.8, 0.1, 0.05, 0.05}, {0.25, 0.25, 0.25, 0.25}}
	h := 0.0
	for _, r := range rows {
		h += strategy.Entropy(r)
	}
	return h / 4
}

// lcl train --strategy soft trains end to end from a target file: as
// given, every epoch's targets are the file's (their mean entropy, in
// metrics.jsonl); annealed, they sharpen. The store keys the runs by the
// file's content: the same path with other values is another record.
func TestTrainSoftFromFile(t *testing.T) {
	dir := t.TempDir()
	store, file := filepath.Join(dir, "store"), filepath.Join(dir, "targets.csv")
	os.WriteFile(file, []byte(softCSV), 0o644)
	train := func(out string, extra ...string) []float64 {
		args := append([]string{"--store", store, "train", "--data", synth, "--model", "mlp:hidden=16", "--strategy", "soft",
			"--matrix", file, "--epochs", "3", "--batch", "16", "--threads", "1", "--out", out}, extra...)
		code, stdout, errs := runLCL(context.Background(), t, args...)
		if code != 0 {
			t.Fatalf("train exit %d\n%s\n%s", code, stdout, errs)
		}
		return targetEntropies(t, out)
	}
	static := train(filepath.Join(dir, "static"))
	for e, h := range static {
		if math.Abs(h-softEntropy()) > 1e-5 {
			t.Errorf("static epoch %d: target entropy %.6f, the file's %.6f", e, h, softEntropy())
		}
	}
	annealed := train(filepath.Join(dir, "annealed"), "--param", "anneal=0.5")
	if math.Abs(annealed[0]-static[0]) > 1e-9 || !(annealed[1] < annealed[0] && annealed[2] < annealed[1]) {
		t.Errorf("annealed target entropies %v: want the file's first, then falling", annealed)
	}
	os.WriteFile(file, []byte(strings.Replace(softCSV, "0,0.7,0.1", "0,0.6,0.2", 1)), 0o644)
	train(filepath.Join(dir, "edited"))
	st, err := simstore.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var digests []string
	for _, r := range runs {
		if r.Config.Targets == "" || r.Status != simstore.RunDone {
			t.Errorf("run %s: status %s, targets %q", r.ID, r.Status, r.Config.Targets)
		}
		digests = append(digests, r.Config.Targets)
	}
	slices.Sort(digests)
	if len(runs) != 3 || len(slices.Compact(digests)) != 2 {
		t.Errorf("%d records with targets %v: want 3 runs, the edited file's of another digest", len(runs), digests)
	}
}

func targetEntropies(t *testing.T, run string) []float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var ent []float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct {
			TargetEntropy float64 `json:"target_entropy"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		ent = append(ent, m.TargetEntropy)
	}
	return ent
}

// A bad target file is refused, with its line and the reason, before
// anything is written: no run folder, no store.
func TestTrainSoftRefusesBadMatrices(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, text, param, want string }{
		{"a row short of 1", "0.7,0.1,0.1,0.1\n0.1,0.6,0.1,0.1\n0.1,0.1,0.7,0.1\n0.25,0.25,0.25,0.25\n", "",
			"F:2: row 1 sums to 0.9, want 1 within 0.001 (or --param normalize=true to divide each row by its sum)"},
		{"negative", "# targets\n0.7,0.1,0.1,0.1\n0.1,0.7,0.1,0.1\n0.1,0.1,0.9,-0.1\n0.25,0.25,0.25,0.25\n", "normalize=true",
			"F:4: row 2, column 3: -0.1 is negative (targets are probabilities)"},
		{"not finite", "0.7,0.1,0.1,0.1\nnan,0.7,0.1,0.1\n0.1,0.1,0.7,0.1\n0.25,0.25,0.25,0.25\n", "",
			"F:2: row 1, column 0: NaN is not finite"},
		{"3 classes", "0.8,0.1,0.1\n0.1,0.8,0.1\n0.1,0.1,0.8\n", "", "F:1: the first row has 3 values but the run has 4 classes"},
		{"3 rows", "0.7,0.1,0.1,0.1\n0.1,0.7,0.1,0.1\n0.1,0.1,0.7,0.1\n", "", "F:3: 3 rows of 4 values: want 4 rows, one per class (row y is the target of class y)"},
		{"a zero row", "0.7,0.1,0.1,0.1\n0,0,0,0\n0.1,0.1,0.7,0.1\n0.25,0.25,0.25,0.25\n", "normalize=true",
			"F:2: row 1 sums to 0: no target distribution"},
		{"no --matrix", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".csv")
			os.WriteFile(file, []byte(tc.text), 0o644)
			store, out := filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "run")
			args := []string{"--store", store, "train", "--data", synth, "--model", "mlp:hidden=8", "--strategy", "soft",
				"--epochs", "1", "--threads", "1", "--out", out}
			want := "lcl: --strategy soft trains on a C×C target matrix: give it as --matrix FILE (CSV, text or .npy), or --similarity-key KEY"
			if tc.text != "" {
				args = append(args, "--matrix", file)
				want = "lcl: --matrix: " + strings.ReplaceAll(tc.want, "F", file)
			}
			if tc.param != "" {
				args = append(args, "--param", tc.param)
			}
			code, _, errs := runLCL(context.Background(), t, args...)
			if code != 2 || strings.TrimSuffix(errs, "\n") != want {
				t.Errorf("exit %d, %q\nwant exit 2 and the one line %q", code, errs, want)
			}
			for _, p := range []string{out, store} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the refused run left %s (%v)", p, err)
				}
			}
		})
	}
}

// lcl plan --strategy soft writes the file's rows (divided by their sums)
// as epoch 0 and, annealed, LCL's updates of them after; without
// --synsets the file's header does not stop it.
func TestPlanSoft(t *testing.T) {
	dir := t.TempDir()
	file, out := filepath.Join(dir, "targets.csv"), filepath.Join(dir, "plan")
	os.WriteFile(file, []byte(softCSV), 0o644)
	code, stdout, errs := runLCL(context.Background(), t, "--store", filepath.Join(dir, "store"), "plan", "--strategy", "soft",
		"--matrix", file, "--param", "anneal=0.9", "--epochs", "3", "--out", out)
	if code != 0 {
		t.Fatalf("plan exit %d\n%s\n%s", code, stdout, errs)
	}
	v := strategy.LCLInitial(&strategy.Matrix64{N: 4, Data: []float64{0.7, 0.1, 0.1, 0.1, 0.1, 0.7, 0.1, 0.1, 0.05, 0.05, 0.8, 0.1, 0.25, 0.25, 0.25, 0.25}})
	for epoch, name := range []string{"epoch-000.npy", "epoch-001.npy", "epoch-002.npy"} {
		if epoch > 0 {
			strategy.LCLStep(v, 0.9)
		}
		r, c, got := readNpy(t, filepath.Join(out, name))
		if r != 4 || c != 4 {
			t.Fatalf("%s: %d×%d", name, r, c)
		}
		for k, x := range got {
			if math.Abs(x-v.Data[k]) > 1e-6 {
				t.Fatalf("%s[%d] = %g, want %g", name, k, x, v.Data[k])
			}
		}
	}
}
