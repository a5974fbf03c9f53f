//go:build e2e

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestExperimentRealGrid builds lcl and runs a real 2-run grid (SL and LS,
// 1 epoch on 1% of Fashion-MNIST) through `lcl train` subprocesses, re-runs
// it (nothing left to do), and writes the report.
func TestExperimentRealGrid(t *testing.T) {
	const data = "/usr/share/datasets/fashion-mnist"
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("Fashion-MNIST missing (%v): run `make deps`", err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "lcl")
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	grid := filepath.Join(tmp, "two.yaml")
	os.WriteFile(grid, []byte(`name: two
labels: fashion-mnist
data: `+data+`
models: [cnn]
fractions: [0.01]
epochs: 1
seeds: [1]
threads: 2
device: cpu
strategies:
  - name: sl
  - name: ls
`), 0o644)
	store := filepath.Join(tmp, "store")
	lcl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--store", store}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("lcl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	runs := filepath.Join(tmp, "runs")
	if out := lcl("experiment", "run", grid, "--run-dir", runs); !strings.Contains(out, "2 runs: 2 trained now") {
		t.Fatalf("first pass:\n%s", out)
	}
	if out := lcl("experiment", "run", grid, "--run-dir", runs); !strings.Contains(out, "0 trained now, 2 done before") {
		t.Fatalf("second pass:\n%s", out)
	}
	out := lcl("report", "--grid", grid, "--out", filepath.Join(tmp, "report"))
	if !strings.Contains(out, "| DR | Model | SL | LS |") {
		t.Fatalf("report:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(tmp, "report", "report.html")); err != nil {
		t.Fatal(err)
	}
}
