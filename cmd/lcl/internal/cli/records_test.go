package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/simstore"
)

// storedRuns lists the runs in the store at dir.
func storedRuns(t *testing.T, dir string) []simstore.Run {
	t.Helper()
	st, err := simstore.Open(dir, simstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// Two runs through the real trainer that differ only in a strategy
// parameter are two records, each keyed by its own configuration, and
// lcl report shows both.
func TestTrainRecordsEveryConfiguration(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	sim := filepath.Join(dir, "sim.npy")
	if err := npy.WriteFile(sim, 4, 4, []float64{1, 0.5, 0.2, 0.1, 0.5, 1, 0.3, 0.1, 0.2, 0.3, 1, 0.4, 0.1, 0.1, 0.4, 1}); err != nil {
		t.Fatal(err)
	}
	for _, eps := range []string{"0.9", "0.99"} {
		code, out, errs := runLCL(context.Background(), t, "--store", store, "train", "--data", synth, "--model", "mlp:hidden=16",
			"--strategy", "lcl", "--matrix", sim, "--epsilon", eps, "--epochs", "1", "--batch", "16", "--threads", "1",
			"--out", filepath.Join(dir, "run-"+eps))
		if code != 0 {
			t.Fatalf("ε=%s: train exit %d\n%s\n%s", eps, code, out, errs)
		}
	}
	runs := storedRuns(t, store)
	if len(runs) != 2 {
		t.Fatalf("%d stored runs, want 2: %+v", len(runs), runs)
	}
	seen := map[string]bool{}
	for _, r := range runs {
		c := r.Config
		if r.ID != c.ID() || r.Status != simstore.RunDone || len(r.Top1) != 1 || len(r.Epochs) == 0 {
			t.Errorf("run %+v", r)
		}
		if c.Data != synth || c.Model != "mlp:hidden=16" || c.Strategy != "lcl" || c.Seed != 1 || c.Fraction != 1 || c.Epochs != 1 ||
			c.Args["matrix"] != sim || c.Args["batch"] != "16" || c.Args["threads"] != "" || c.Args["out"] != "" || c.Source != "" {
			t.Errorf("config %+v", c)
		}
		if r.Dir != filepath.Join(dir, "run-"+c.Params["epsilon"]) {
			t.Errorf("run with ε=%s recorded in %s", c.Params["epsilon"], r.Dir)
		}
		seen[c.Params["epsilon"]] = true
	}
	if !seen["0.9"] || !seen["0.99"] {
		t.Errorf("stored ε values %v, want 0.9 and 0.99", seen)
	}
	code, out, errs := runLCL(context.Background(), t, "--store", store, "report")
	if code != 0 || !strings.Contains(out, "2 runs.") || !strings.Contains(out, "| LCL(ε=0.9) | LCL(ε=0.99) |") ||
		!strings.Contains(out, "## synthetic: Top-1") {
		t.Errorf("report: %d\n%s%s", code, out, errs)
	}
}

// A grid run is recorded once, by the grid, through the real trainer; lcl
// report with no selection lists exactly the grid's runs. The grid spells
// lr as 0.10, which `lcl train` reads back as 0.1: a child that recorded
// its own run would key it differently from the grid.
func TestGridRecordsEachRunOnce(t *testing.T) {
	needWordNet(t)
	grid := writeGrid(t, fmt.Sprintf(`name: twice
labels: fashion-mnist
data: %s
models: ["mlp:hidden=16"]
fractions: [1]
epochs: 1
seeds: [1]
threads: 1
args: {batch: "16", lr: "0.10"}
strategies:
  - name: sl
  - name: ls
`, strings.Replace(synth, "classes=4", "classes=10", 1)))
	store := filepath.Join(t.TempDir(), "store")
	t.Setenv("LCL_TEST_CLI", "1") // the children are this test binary running the real lcl
	code, out, errs := runLCL(context.Background(), t, "--store", store, "experiment", "run", grid, "--run-dir", filepath.Join(t.TempDir(), "runs"))
	if code != 0 || !strings.Contains(out, "2 runs: 2 trained now") {
		t.Fatalf("grid: %d\n%s%s", code, out, errs)
	}
	runs := storedRuns(t, store)
	if len(runs) != 2 {
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		t.Fatalf("%d stored runs %v, want the grid's 2", len(runs), ids)
	}
	for _, r := range runs {
		if r.ID != r.Config.ID() || r.Status != simstore.RunDone || r.Config.Labels != "fashion-mnist" || len(r.Top1) != 1 {
			t.Errorf("run %+v", r)
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "result.json")); err != nil {
			t.Errorf("run %s: %v", r.ID, err)
		}
	}
	code, out, errs = runLCL(context.Background(), t, "--store", store, "report")
	if code != 0 || !strings.Contains(out, "2 runs.") || !strings.Contains(out, "| DR | Model | SL | LS |") || strings.Contains(out, "## :") {
		t.Errorf("report: %d\n%s%s", code, out, errs)
	}
}
