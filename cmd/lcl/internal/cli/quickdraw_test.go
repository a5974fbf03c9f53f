package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/trainer/data"
)

func needQuickDraw(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(data.DefaultQuickDrawDir); err != nil {
		t.Fatalf("Quick, Draw! is not installed (%v): run `make deps` or `scripts/deps.sh quickdraw`", err)
	}
}

// The tests' Quick, Draw! grid: experiments/quickdraw.yaml's kind of grid in
// miniature (a narrow CNN, 3 epochs, DR 25 %, one seed), with a method on each
// kind of target: one-hot, LCL's annealed similarity, MBM's soft labels. The
// test set is evaluated after the last epoch only (test-every: its
// evaluation was most of the runs' time; the report reads untested epochs).
const quickDrawGrid = `name: qd-tiny
labels: quickdraw
data: quickdraw
models: ["cnn:channels=8x16"]
fractions: [0.25]
epochs: 3
seeds: [1]
threads: 1
test-every: 3
strategies:
  - name: sl
  - name: lcl
    sources: [lca]
    params: {epsilon: [0.9]}
  - name: mbm-soft
    sources: [lca]
    params: {beta: [10]}
`

// TestQuickDrawGridTrainsAndReports trains the grid for real (the runner's
// children are this test binary playing lcl) on the installed drawings, and
// reports top-1 and the hierarchical metrics on WordNet for 345 classes.
func TestQuickDrawGridTrainsAndReports(t *testing.T) {
	needWordNet(t)
	needQuickDraw(t)
	ctx := context.Background()
	store := filepath.Join(t.TempDir(), "store")
	if code, out, errs := runLCL(ctx, t, "--store", store, "similarity", "--synsets", "quickdraw", "--source", "lca", "--form", "height"); code != 0 {
		t.Fatalf("similarity: %d %s%s", code, out, errs)
	}
	grid := writeGrid(t, quickDrawGrid)
	t.Setenv("LCL_TEST_CLI", "1")
	code, out, errs := runLCL(ctx, t, "--store", store, "experiment", "run", grid, "--run-dir", filepath.Join(t.TempDir(), "runs"), "--jobs", "1")
	if code != 0 || !strings.Contains(out, "3 runs: 3 trained now, 0 done before, 0 failed") {
		t.Fatalf("run: code %d\n%s%s", code, out, errs)
	}
	st, err := simstore.Open(store, simstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	runs, err := st.ListRuns(ctx)
	st.Close()
	if err != nil || len(runs) != 3 {
		t.Fatalf("%d stored runs, %v", len(runs), err)
	}
	for _, r := range runs {
		if r.Status != "done" || len(r.Top1) != 1 {
			t.Errorf("run %s (%s): status %s, top-1 %v: want done", r.ID, r.Config.Strategy, r.Status, r.Top1)
			continue
		}
		// Chance is 1/345 = 0.3 %; three epochs on 20 drawings per category
		// reach ~5 % with one-hot or MBM targets. LCL is not held to it: its
		// first epoch trains on v(0) = s/Σs, which over 345 classes of a dense
		// similarity puts ~1/345 of the mass on the true class, and two more
		// epochs of a narrow net leave it near chance (docs/experiment.md).
		if r.Config.Strategy != "lcl" && r.Top1[0] < 0.02 {
			t.Errorf("run %s (%s): top-1 %v: want at least 2 %%", r.ID, r.Config.Strategy, r.Top1)
		}
		// Epochs 1 and 2 evaluated no test set: no test figures, not zeros.
		if n := strings.Count(string(r.Epochs), `"top1"`); n != 1 {
			t.Errorf("run %s (%s): %d epochs with test figures, want the last alone: %s", r.ID, r.Config.Strategy, n, r.Epochs)
		}
	}
	code, out, errs = runLCL(ctx, t, "--store", store, "report", "--grid", grid, "--out", filepath.Join(t.TempDir(), "report"))
	if code != 0 {
		t.Fatalf("report: %d %s%s", code, out, errs)
	}
	for _, want := range []string{"| DR | Model | SL | LCL(ε=0.9, lca) | MBM-SOFT(beta=10, lca) |", "Mistake severity (LCA height)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// Every table of the report has its 25 % row, with a positive figure for SL.
	m := regexp.MustCompile(`(?m)^\| 25% \| cnn:channels=8x16 \| \**([0-9.]+)`).FindAllStringSubmatch(out, -1)
	if len(m) < 2 {
		t.Fatalf("report has no 25%% rows:\n%s", out)
	}
	for _, row := range m {
		if v, _ := strconv.ParseFloat(row[1], 64); v <= 0 {
			t.Errorf("row %q: want a positive figure", row[0])
		}
	}
}
