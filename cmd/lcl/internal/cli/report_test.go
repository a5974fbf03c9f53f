package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportFromGrid(t *testing.T) {
	grid := writeGrid(t, cliGrid)
	store := filepath.Join(t.TempDir(), "store")
	t.Setenv("LCL_FAKE_TRAIN", "1")
	if code, out, errs := runLCL(context.Background(), t, "--store", store, "experiment", "run", grid, "--run-dir", filepath.Join(t.TempDir(), "runs")); code != 0 {
		t.Fatalf("run: %d %s%s", code, out, errs)
	}
	dir := filepath.Join(t.TempDir(), "report")
	code, out, errs := runLCL(context.Background(), t, "--store", store, "report", "--grid", grid, "--out", dir)
	if code != 0 {
		t.Fatalf("report: %d %s%s", code, out, errs)
	}
	// The fake gives top-1 = 70.<seed>: seeds 1 and 2 → 70.15 ± 0.07 for both methods.
	for _, want := range []string{
		"# Grid tiny",
		"| DR | Model | SL | LCL(ε=0.9, semantic) |",
		"| 10% | cnn | **70.15** ± 0.07 | **70.15** ± 0.07 |",
		"| fashion-mnist | 10% | cnn | LCL(ε=0.9, semantic) | SL | 0.00 |",
		"HTML report: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, name := range []string{"tables.md", "tables.tex", "tables.csv", "ranks.csv", "paired.csv", "report.html",
		"plots/curves-fashion-mnist-cnn-10.png"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	code, out, errs = runLCL(context.Background(), t, "--store", store, "report", "--grid", grid, "--format", "latex")
	if code != 0 || !strings.Contains(out, `\begin{tabular}`) {
		t.Errorf("latex: %d %s%s", code, out, errs)
	}
	if code, _, errs = runLCL(context.Background(), t, "--store", store, "report", "--format", "pdf"); code != 2 || !strings.Contains(errs, "--format must be one of md, latex, csv") {
		t.Errorf("bad format: %d %s", code, errs)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if code, _, errs = runLCL(context.Background(), t, "--store", empty, "report"); code != 1 || !strings.Contains(errs, "no finished runs") {
		t.Errorf("empty store: %d %s", code, errs)
	}
	// A grid none of whose runs ran: how many are missing, and the command that runs them.
	code, _, errs = runLCL(context.Background(), t, "--store", empty, "report", "--grid", grid)
	if code != 1 || !strings.Contains(errs, "selected runs are not finished (or not run yet) and left out") ||
		!strings.Contains(errs, "no finished runs to report: run the grid first (lcl experiment run "+grid+")") {
		t.Errorf("grid not run: %d %s", code, errs)
	}
}
