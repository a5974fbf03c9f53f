package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcl-project/lcl/simstore"
)

const cliGrid = `name: tiny
labels: fashion-mnist
data: .
models: [cnn]
fractions: [0.1]
epochs: 2
seeds: [1, 2]
strategies:
  - name: sl
  - name: lcl
    sources: [semantic]
    params: {epsilon: [0.9]}
`

func writeGrid(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExperimentRunSubprocess(t *testing.T) {
	grid := writeGrid(t, cliGrid)
	store := filepath.Join(t.TempDir(), "store")
	runDir := filepath.Join(t.TempDir(), "runs")

	code, out, errs := runLCL(context.Background(), t, "--store", store, "experiment", "run", grid, "--dry-run", "--run-dir", runDir)
	if code != 0 || !strings.Contains(out, "grid tiny: 4 runs") || strings.Count(out, " todo ") != 4 {
		t.Fatalf("dry run: code %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "LCL(ε=0.9, semantic)") || !strings.Contains(out, "lcl train --synsets fashion-mnist") {
		t.Errorf("dry run listing lacks the method or command:\n%s", out)
	}

	t.Setenv("LCL_FAKE_TRAIN", "1")
	code, out, errs = runLCL(context.Background(), t, "--store", store, "experiment", "run", grid, "--run-dir", runDir)
	if code != 0 || !strings.Contains(out, "4 runs: 4 trained now, 0 done before, 0 failed") {
		t.Fatalf("run: code %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "4/4 runs finished") {
		t.Errorf("no grid progress on stderr:\n%s", errs)
	}
	code, out, errs = runLCL(context.Background(), t, "--store", store, "experiment", "run", grid, "--run-dir", runDir)
	if code != 0 || !strings.Contains(out, "0 trained now, 4 done before") {
		t.Fatalf("rerun: code %d\n%s%s", code, out, errs)
	}
	st, err := simstore.Open(store, simstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background())
	if err != nil || len(runs) != 4 {
		t.Fatalf("%d stored runs, %v", len(runs), err)
	}
	for _, r := range runs {
		if r.Status != "done" || len(r.Top1) != 1 || r.Top1[0] < 0.70 || r.Top1[0] > 0.71 {
			t.Errorf("stored run %+v", r)
		}
	}
}

func TestExperimentErrors(t *testing.T) {
	bad := writeGrid(t, strings.Replace(cliGrid, "seeds:", "seed:", 1))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown field", []string{"experiment", "run", bad, "--dry-run"}, 1, "line 7: unknown key seed; did you mean seeds?"},
		{"no grid", []string{"experiment", "run"}, 2, "needs GRID.yaml"},
		{"missing data", []string{"experiment", "run", writeGrid(t, strings.Replace(cliGrid, "data: .", "data: /nonexistent/fm", 1))}, 1, "data: --data /nonexistent/fm: no such folder"},
		{"unknown label set", []string{"experiment", "run", writeGrid(t, strings.Replace(cliGrid, "labels: fashion-mnist", "labels: no-such-set", 1))}, 1, "labels: "},
		// A model or strategy lcl does not have fails the grid, not each run.
		{"unknown model", []string{"experiment", "run", writeGrid(t, strings.Replace(cliGrid, "models: [cnn]", "models: [cnn, cnnn]", 1))}, 1, `models: unknown model "cnnn"; did you mean cnn?`},
		{"unknown strategy", []string{"experiment", "run", writeGrid(t, strings.Replace(cliGrid, "name: sl", "name: lcll", 1))}, 1, `strategies: unknown strategy plugin "lcll"; did you mean lcl?`},
		{"bad target", []string{"experiment", "emit", "--to", "pbs", "--out", t.TempDir(), bad}, 2, "--to must be slurm or kubernetes"},
		{"jobs 0", []string{"experiment", "run", bad, "--jobs", "0"}, 2, "--jobs 0: want 1 or more"},
		{"threads -1", []string{"experiment", "run", bad, "--threads", "-1"}, 2, "--threads -1: want ≥ 0"},
		{"jobs huge", []string{"experiment", "run", bad, "--jobs", "100000000"}, 2, "--jobs 100000000: want 1 or more runs at once, at most 1024"},
		{"threads huge", []string{"experiment", "run", writeGrid(t, cliGrid), "--threads", "100000000"}, 2, "--threads 100000000: want a whole number from 0 to 1024"},
		{"device typo", []string{"experiment", "run", bad, "--device", "cdua"}, 2, `--device "cdua": want cpu, cuda or cuda:N (N: the device's index); did you mean cuda?`},
		{"misspelt target", []string{"experiment", "emit", "--to", "slurn", "--out", t.TempDir(), bad}, 2, `got "slurn"; did you mean slurm?`},
		{"collect nothing there", []string{"experiment", "collect", "/nonexistent/runs"}, 1, "collect: /nonexistent/runs: no such folder"},
		{"no out", []string{"experiment", "emit", "--to", "slurm", bad}, 2, "--out DIR is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runLCL(context.Background(), t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.want) {
				t.Fatalf("code %d, stderr %q; want %d and %q", code, errs, tt.code, tt.want)
			}
		})
	}
}

// A grid's strategy parameters and preset are checked for every run
// before any starts, with lcl train's checks: one line naming the grid
// file, the line and key of the value and, for a misspelt name, the
// nearest one; no run directory, no store record (issue 48, item 6).
func TestExperimentRefusesParamsBeforeAnyRun(t *testing.T) {
	const head = "name: p\nlabels: fashion-mnist\ndata: .\nmodels: [cnn]\nfractions: [1]\nseeds: [1]\nepochs: 1\nstrategies:\n  - name: sl\n"
	for _, tc := range []struct{ name, grid, want string }{
		{"mbm-soft's beta", head + "  - name: mbm-soft\n    sources: [lca]\n    params: {beta: [10, -1]}\n",
			"line 12: strategies[1].params.beta[1]: strategy mbm-soft refuses its parameters (beta=-1): strategy plugin \"mbm-soft\" (built-in): Begin: beta = -1, want a finite value > 0"},
		{"hxe's alpha .nan", head + "  - name: hxe\n    sources: [lca]\n    params:\n      alpha: [.nan]\n",
			`line 13: strategies[1].params.alpha[0]: --param alpha=.nan: strategy hxe: parameter "alpha": ".nan" is not a valid float`},
		{"hxe's alpha nan", head + "  - name: hxe\n    sources: [lca]\n    params:\n      alpha: [0.1, nan]\n",
			`line 13: strategies[1].params.alpha[1]: --param alpha=nan: strategy hxe: parameter "alpha": "nan" is not a finite number`},
		{"ols's misspelt key", head + "  - name: ols\n    params:\n      smoothng: [0.1]\n",
			"line 12: strategies[1].params.smoothng[0]: --param smoothng=0.1: strategy ols takes alpha, smoothing; did you mean smoothing?"},
		{"ols's smoothing", head + "  - name: ols\n    params:\n      alpha: [0.5]\n      smoothing: [0.1, 2]\n",
			"line 13: strategies[1].params.smoothing[1]: strategy ols refuses its parameters (alpha=0.5, smoothing=2)"},
		{"a misspelt preset", head + "preset: cifar-modrn\n",
			`line 10: preset: --preset cifar-modrn: unknown preset "cifar-modrn"; did you mean cifar-modern?`},
		{"an infinite learning rate", head + "args: {lr: inf}\n", "line 10: args.lr: --lr +Inf: want a finite value > 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("LCL_FAKE_TRAIN", "1") // a run that started would succeed
			grid := writeGrid(t, tc.grid)
			dir := t.TempDir()
			store, runs := filepath.Join(dir, "store"), filepath.Join(dir, "runs")
			r := cliRun(t, "--store", store, "experiment", "run", grid, "--run-dir", runs)
			oneLineError(t, tc.name, r, grid, tc.want)
			if n := strings.Count(strings.TrimSpace(r.err), "\n"); n > 0 || !strings.Contains(r.err, grid+": "+tc.want) {
				t.Errorf("stderr %q: want one line %q", r.err, grid+": "+tc.want)
			}
			for _, p := range []string{store, runs} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the refused grid left %s (%v)", p, err)
				}
			}
			// lcl experiment emit refuses the strategy parameters too,
			// before it writes a job file (a range and a name: the check
			// is experiment run's, tested above for every case).
			if tc.name == "mbm-soft's beta" || tc.name == "ols's misspelt key" {
				jobs := filepath.Join(dir, "jobs")
				r := cliRun(t, "experiment", "emit", "--to", "slurm", grid, "--out", jobs)
				if r.code == 0 || !strings.Contains(r.err, grid+": "+tc.want) {
					t.Errorf("emit: exit %d, stderr %q; want %q", r.code, r.err, grid+": "+tc.want)
				}
				if _, err := os.Stat(jobs); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the refused emit left %s (%v)", jobs, err)
				}
			}
		})
	}
}

func TestExperimentEmitCollect(t *testing.T) {
	grid := writeGrid(t, cliGrid)
	out := t.TempDir()
	code, stdout, errs := runLCL(context.Background(), t, "experiment", "emit", "--to", "slurm", grid, "--out", out)
	if code != 0 || !strings.Contains(stdout, "slurm: 4 runs") {
		t.Fatalf("emit: %d %s%s", code, stdout, errs)
	}
	if _, err := os.Stat(filepath.Join(out, "lcl-tiny.sbatch")); err != nil {
		t.Fatal(err)
	}
	// A results folder with one finished run and nothing else.
	store := filepath.Join(t.TempDir(), "store")
	code, stdout, errs = runLCL(context.Background(), t, "--store", store, "experiment", "collect", out)
	if code != 1 || !strings.Contains(errs, "no run directories") {
		t.Fatalf("collect of an empty results folder: %d %s%s", code, stdout, errs)
	}
}

// A grid interrupted with Ctrl-C (SIGINT to the lcl process) in the middle
// of a run, then re-run, trains only the missing runs and resumes the
// interrupted one from its directory.
func TestExperimentInterruptedGridResumes(t *testing.T) {
	grid := writeGrid(t, cliGrid)
	store := filepath.Join(t.TempDir(), "store")
	runDir := filepath.Join(t.TempDir(), "runs")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Runs in order: SL seed 1, SL seed 2 (blocks), LCL seed 1, LCL seed 2.
	cmd := exec.Command(self, "--store", store, "experiment", "run", grid, "--run-dir", runDir)
	cmd.Env = append(os.Environ(), "LCL_TEST_CLI=1", "LCL_FAKE_TRAIN=1", "LCL_FAKE_BLOCK_SEED=2")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var blocked string
	for blocked == "" && time.Now().Before(deadline) {
		matches, _ := filepath.Glob(filepath.Join(runDir, "*", "checkpoint.pt"))
		if len(matches) > 0 {
			blocked = filepath.Dir(matches[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if blocked == "" {
		cmd.Process.Kill()
		t.Fatalf("the second run never started:\n%s", stderr.String())
	}
	cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitCancelled {
		t.Fatalf("interrupted grid: %v, want exit %d\n%s", err, ExitCancelled, stderr.String())
	}

	t.Setenv("LCL_FAKE_TRAIN", "1")
	code, out, errs := runLCL(context.Background(), t, "--store", store, "experiment", "run", grid, "--run-dir", runDir)
	if code != 0 || !strings.Contains(out, "4 runs: 3 trained now, 1 done before, 0 failed") {
		t.Fatalf("second pass: %d\n%s%s", code, out, errs)
	}
	args, err := os.ReadFile(filepath.Join(blocked, "args.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(args)), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "--resume") || !strings.Contains(lines[1], " --resume") {
		t.Errorf("interrupted run's launches:\n%s", args)
	}
}

// Two lcl experiment run processes of one grid on one store and run
// directory: each run is trained once (never twice at once into one
// folder), one runner leaves the run the other trains for later and
// waits for it, and both end with every run done.
func TestTwoGridRunnersShareTheWork(t *testing.T) {
	t.Parallel() // lcl runs only in child processes, which mostly wait (parallelOK)
	grid := writeGrid(t, cliGrid)
	dir := t.TempDir()
	store, runDir := filepath.Join(dir, "store"), filepath.Join(dir, "runs")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	var logs []*bytes.Buffer
	for range 2 {
		cmd := exec.Command(self, "--store", store, "experiment", "run", grid, "--run-dir", runDir)
		cmd.Env = append(os.Environ(), "LCL_TEST_CLI=1", "LCL_FAKE_TRAIN=1", "LCL_FAKE_TRAIN_TIME=1s")
		var stderr bytes.Buffer
		cmd.Stderr, cmd.Stdout = &stderr, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, logs = append(cmds, cmd), append(logs, &stderr)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("runner %d: %v\n%s", i, err, logs[i])
		}
	}
	both := logs[0].String() + logs[1].String()
	if !strings.Contains(both, "another lcl experiment run is training it") {
		t.Errorf("neither runner met the other's run:\n%s", both)
	}
	launches, _ := filepath.Glob(filepath.Join(runDir, "*", "args.txt"))
	if len(launches) != 4 {
		t.Fatalf("%d runs launched, want 4:\n%s", len(launches), both)
	}
	for _, p := range launches {
		if raw, _ := os.ReadFile(p); strings.Count(string(raw), "\n") != 1 {
			t.Errorf("%s: launched %d times:\n%s", filepath.Dir(p), strings.Count(string(raw), "\n"), raw)
		}
	}
	st, err := simstore.Open(store, simstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background())
	if err != nil || len(runs) != 4 {
		t.Fatalf("%d stored runs, %v", len(runs), err)
	}
	for _, r := range runs {
		if r.Status != simstore.RunDone {
			t.Errorf("run %s: %s, want done", r.ID, r.Status)
		}
	}
}
