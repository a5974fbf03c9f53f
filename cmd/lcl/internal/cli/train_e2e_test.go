//go:build e2e

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestTrainKillResume kills lcl train with SIGKILL during epoch 3 of 5 and
// resumes it: the final metrics must equal an uninterrupted run's.
func TestTrainKillResume(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "lcl")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lcl-project/lcl/cmd/lcl").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	args := func(out string) []string {
		return []string{"train", "--synsets", "fashion-mnist", "--model", "cnn", "--fraction", "0.05", "--epochs", "5",
			"--seed", "3", "--threads", "1", "--no-store", "--quiet", "--out", out}
	}
	whole := filepath.Join(dir, "whole")
	if out, err := exec.Command(bin, args(whole)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}

	killed := filepath.Join(dir, "killed")
	cmd := exec.Command(bin, args(killed)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForEpochs(t, killed, 2, 10*time.Minute, func() { cmd.Process.Kill() })
	time.Sleep(300 * time.Millisecond) // into epoch 3
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(killed, "result.json")); err == nil {
		t.Fatal("the killed run finished before the kill")
	}
	if out, err := exec.Command(bin, append(args(killed), "--resume")...).CombinedOutput(); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	a, b := readResult(t, whole), readResult(t, killed)
	if len(a.Epochs) != 5 || len(b.Epochs) != 5 {
		t.Fatalf("epochs: %d and %d", len(a.Epochs), len(b.Epochs))
	}
	for i := range a.Epochs {
		if !reflect.DeepEqual(a.Epochs[i].PeerMetrics, b.Epochs[i].PeerMetrics) {
			t.Errorf("epoch %d: uninterrupted %+v, resumed %+v", i+1, a.Epochs[i].PeerMetrics, b.Epochs[i].PeerMetrics)
		}
	}
	if !reflect.DeepEqual(a.Final[0], b.Final[0]) {
		t.Errorf("final: uninterrupted %+v, resumed %+v", a.Final[0], b.Final[0])
	}
	t.Logf("final top-1 %.4f in both runs", a.Final[0].TestTop1)
}

// waitForEpochs waits until dir/metrics.jsonl holds n finished epochs; after
// timeout it calls stop (if any) and fails the test.
func waitForEpochs(t *testing.T, dir string, n int, timeout time.Duration, stop func()) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl")); bytes.Count(b, []byte("\n")) >= n {
			return
		}
		if time.Now().After(deadline) {
			if stop != nil {
				stop()
			}
			t.Fatalf("%d epochs did not finish in %v", n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
