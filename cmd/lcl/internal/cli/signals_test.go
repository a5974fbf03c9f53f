package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Two signals a moment apart count as one: a signal sent to lcl's process
// group reaches lcl directly and, passed on, through the parent that
// catches its crashes (crash.Supervise). The command still stops cleanly
// (exit 130, work kept) instead of being killed by the second.
func TestSignalsCloseTogetherAreOne(t *testing.T) {
	t.Parallel() // lcl runs only in a child process, which mostly waits (parallelOK)
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

// A second Ctrl-C while lcl stops must not kill it before its checkpoint is
// written (it says so instead); a third soon after the second still does.
func TestSecondSignalKeepsTheCheckpoint(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		signals    int  // SIGINTs, 1.3 s apart (more than sentAgainAfter)
		checkpoint bool // written before lcl ended
	}{
		{"second is answered", 2, true},
		{"third kills", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), "LCL_TEST_SLOW_STOP="+dir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the command never started:\n%s", stderr.String())
				}
			}
			start := time.Now()
			for i := 0; i < tc.signals; i++ {
				if i > 0 {
					time.Sleep(1300 * time.Millisecond)
				}
				cmd.Process.Signal(os.Interrupt)
			}
			err := cmd.Wait()
			_, statErr := os.Stat(filepath.Join(dir, "checkpoint"))
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("%d SIGINTs: %v, want an exit status\n%s", tc.signals, err, stderr.String())
			}
			if tc.checkpoint {
				if exit.ExitCode() != ExitCancelled || statErr != nil {
					t.Fatalf("%d SIGINTs: %v, checkpoint: %v; want exit %d after the checkpoint\n%s", tc.signals, err, statErr, ExitCancelled, stderr.String())
				}
				if !strings.Contains(stderr.String(), "Ctrl-C again within 5s kills lcl without it") {
					t.Errorf("the second Ctrl-C was not answered:\n%s", stderr.String())
				}
				return
			}
			if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
				t.Fatalf("%d SIGINTs: %v, want killed by SIGINT\n%s", tc.signals, err, stderr.String())
			}
			if statErr == nil || time.Since(start) >= slowStop {
				t.Fatalf("%d SIGINTs: lcl ended after %v with its checkpoint written, want killed at once", tc.signals, time.Since(start))
			}
		})
	}
}

// Ctrl-C to `lcl experiment run` when no run is left queued: as its last
// run trains, and as its last run finishes (the child exits 0 with its
// result). Either way lcl exits 130, and a rerun completes the grid: the
// interrupted run resumes, the finished one is recorded done (issue 48,
// items 1 and 2).
func TestGridCtrlCInItsLastRun(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	oneRun := strings.Replace(strings.Replace(cliGrid, "seeds: [1, 2]", "seeds: [1]", 1),
		"  - name: lcl\n    sources: [semantic]\n    params: {epsilon: [0.9]}\n", "", 1)
	for _, tc := range []struct {
		name, env, cue, rerun string
	}{
		{"as it trains", "LCL_FAKE_BLOCK_SEED=1", "checkpoint.pt", "1 trained now, 0 done before"},
		{"as it finishes", "LCL_FAKE_FINISH_SEED=1", "finished", "0 trained now, 1 done before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grid := writeGrid(t, oneRun)
			store := filepath.Join(t.TempDir(), "store")
			runDir := filepath.Join(t.TempDir(), "runs")
			cmd := exec.Command(self, "--store", store, "experiment", "run", grid, "--run-dir", runDir)
			cmd.Env = append(os.Environ(), "LCL_TEST_CLI=1", "LCL_FAKE_TRAIN=1", tc.env)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if m, _ := filepath.Glob(filepath.Join(runDir, "*", tc.cue)); len(m) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the grid's run never wrote %s:\n%s", tc.cue, stderr.String())
				}
			}
			cmd.Process.Signal(os.Interrupt)
			err := cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != ExitCancelled {
				t.Fatalf("Ctrl-C to a one-run grid %s: %v, want exit %d\nstdout: %s\nstderr: %s", tc.name, err, ExitCancelled, stdout.String(), stderr.String())
			}
			t.Setenv("LCL_FAKE_TRAIN", "1")
			code, out, errs := runLCL(context.Background(), t, "--store", store, "experiment", "run", grid, "--run-dir", runDir)
			if code != 0 || !strings.Contains(out, tc.rerun) {
				t.Fatalf("rerun of the grid stopped %s: exit %d, want 0 and %q\n%s%s", tc.name, code, tc.rerun, out, errs)
			}
		})
	}
}
