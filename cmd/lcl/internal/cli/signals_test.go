package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Two signals a moment apart count as one: a signal sent to lcl's process
// group reaches lcl directly and, passed on, through the parent that
// catches its crashes (crash.Supervise). The command still stops cleanly
// (exit 130, work kept) instead of being killed by the second.
func TestSignalsCloseTogetherAreOne(t *testing.T) {
	grid := writeGrid(t, cliGrid)
	runDir := filepath.Join(t.TempDir(), "runs")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "--store", filepath.Join(t.TempDir(), "store"), "experiment", "run", grid, "--run-dir", runDir)
	cmd.Env = append(os.Environ(), "LCL_TEST_CLI=1", "LCL_FAKE_TRAIN=1", "LCL_FAKE_BLOCK_SEED=2")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(runDir, "*", "checkpoint.pt")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the blocking run never started:\n%s", stderr.String())
		}
	}
	cmd.Process.Signal(os.Interrupt)
	time.Sleep(50 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitCancelled {
		t.Fatalf("two SIGINTs 50 ms apart: %v, want exit %d (a clean stop)\n%s", err, ExitCancelled, stderr.String())
	}
}
