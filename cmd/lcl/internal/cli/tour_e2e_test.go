//go:build e2e

package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every command of the README's tour runs as written on a fresh store, in
// an empty folder with the repository's experiments/ (the long ones with
// the README's small settings).
func TestReadmeTour(t *testing.T) {
	needWordNet(t)
	cmds := tourCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("the tour has %d commands", len(cmds))
	}
	dir := t.TempDir()
	grids, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "experiments", "*.yaml"))
	if err != nil || len(grids) == 0 {
		t.Fatalf("experiments/*.yaml: %v", err)
	}
	os.MkdirAll(filepath.Join(dir, "experiments"), 0o755)
	for _, g := range grids {
		raw, _ := os.ReadFile(g)
		os.WriteFile(filepath.Join(dir, "experiments", filepath.Base(g)), raw, 0o644)
	}
	t.Chdir(dir)
	t.Setenv("LCL_TEST_CLI", "1") // a grid's runs are this test binary running the real lcl
	t.Setenv("LCL_PLUGIN_PATH", t.TempDir())
	store := filepath.Join(dir, "store")
	for _, args := range cmds {
		args = quick(args)
		start := time.Now()
		code, out, errs := runLCL(context.Background(), t, append([]string{"--store", store}, args...)...)
		t.Logf("lcl %s: exit %d in %s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("lcl %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errs)
		}
	}
	for _, want := range []string{"plots", "curriculum/curriculum.csv", "runs/lcl/metrics.csv", "runs/lcl/result.json", "report/report.html"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("the tour left no %s: %v", want, err)
		}
	}
	if ev, _ := filepath.Glob(filepath.Join(dir, "runs", "lcl", "events.out.tfevents.*")); len(ev) != 1 {
		t.Errorf("runs/lcl holds TensorBoard event files %v, want one", ev)
	}
}
