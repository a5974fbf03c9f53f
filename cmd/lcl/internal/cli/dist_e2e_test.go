//go:build e2e

package cli

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// workerOf finds the worker process of the given rank among the children of
// the launcher pid.
func workerOf(t *testing.T, launcher, rank int) int {
	t.Helper()
	// lcl runs as the child of a parent that catches its crashes
	// (crash.Supervise), so the launcher and each worker are two processes:
	// the worker is the topmost process with RANK=rank below the launcher.
	parent, ranked := map[int]int{}, map[int]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, st := range procs {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
		if i := bytes.Index(b, []byte("\nPPid:\t")); i >= 0 {
			f := strings.Fields(string(b[i+7:]))
			if len(f) > 0 {
				parent[pid], _ = strconv.Atoi(f[0])
			}
		}
		env, err := os.ReadFile(filepath.Join(filepath.Dir(st), "environ"))
		if err == nil && bytes.Contains(append([]byte{0}, env...), []byte("\x00RANK="+strconv.Itoa(rank)+"\x00")) {
			ranked[pid] = true
		}
	}
	for pid := range ranked {
		if ranked[parent[pid]] {
			continue
		}
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == launcher {
				return pid
			}
		}
	}
	return 0
}

// TestTrainNProcKillResume: `--nproc 2` trains the small CNN on a part of
// Fashion-MNIST to about the accuracy of one process (batch norm statistics
// are per rank, so not to the same weights); SIGKILL of rank 1 during
// epoch 2 ends the launcher and rank 0 within seconds with an error naming
// rank 1; `--resume` completes the run with the metrics of an uninterrupted
// `--nproc 2` run.
func TestTrainNProcKillResume(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "lcl")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lcl-project/lcl/cmd/lcl").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	args := func(out string, extra ...string) []string {
		return append([]string{"train", "--synsets", "fashion-mnist", "--model", "cnn", "--fraction", "0.05", "--epochs", "3",
			"--batch", "64", "--seed", "3", "--threads", "1", "--no-store", "--out", out}, extra...)
	}
	single, whole := filepath.Join(dir, "single"), filepath.Join(dir, "whole")
	if out, err := exec.Command(bin, args(single)...).CombinedOutput(); err != nil {
		t.Fatalf("single process: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, args(whole, "--nproc", "2")...).CombinedOutput(); err != nil {
		t.Fatalf("--nproc 2: %v\n%s", err, out)
	}
	s, w := readResult(t, single).Final[0], readResult(t, whole).Final[0]
	if w.TestTop1 < 0.7 || math.Abs(s.TestTop1-w.TestTop1) > 0.05 {
		t.Errorf("test top-1: --nproc 2 %.4f, one process %.4f", w.TestTop1, s.TestTop1)
	}

	killed := filepath.Join(dir, "killed")
	cmd := exec.Command(bin, args(killed, "--nproc", "2")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForEpochs(t, killed, 1, 5*time.Minute, func() { cmd.Process.Kill() })
	time.Sleep(500 * time.Millisecond) // into epoch 2
	r0, r1 := workerOf(t, cmd.Process.Pid, 0), workerOf(t, cmd.Process.Pid, 1)
	if r0 == 0 || r1 == 0 {
		cmd.Process.Kill()
		t.Fatalf("workers not found (rank 0 pid %d, rank 1 pid %d)", r0, r1)
	}
	t0 := time.Now()
	if err := exec.Command("kill", "-9", strconv.Itoa(r1)).Run(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	took := time.Since(t0)
	if err == nil || !strings.Contains(stderr.String(), "worker rank 1 of 2") {
		t.Fatalf("launcher after rank 1 was killed: %v\n%s", err, stderr.String())
	}
	if took > 10*time.Second {
		t.Errorf("the launcher took %v to end after rank 1 died", took)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(r0)); err == nil {
		t.Errorf("rank 0 (pid %d) still runs", r0)
	}
	// Nothing the workers started (strategy plugin processes) survives
	// (SIGKILLed by the launcher: allow a moment for the kernel to reap).
	survivors := func() []string {
		var out []string
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, st := range stats {
			b, err := os.ReadFile(st)
			if err != nil {
				continue
			}
			f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			if len(f) > 2 && f[0] != "Z" && (f[2] == strconv.Itoa(r0) || f[2] == strconv.Itoa(r1)) {
				out = append(out, st)
			}
		}
		return out
	}
	for end := time.Now().Add(3 * time.Second); len(survivors()) > 0 && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	if s := survivors(); len(s) > 0 {
		t.Errorf("processes of the workers' process groups survive: %v", s)
	}
	t.Logf("rank 1 killed: launcher ended after %v:\n%s", took, stderr.String())
	if out, err := exec.Command(bin, args(killed, "--nproc", "2", "--resume")...).CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	a, b := readResult(t, whole), readResult(t, killed)
	if len(b.Epochs) != 3 {
		t.Fatalf("resumed run has %d epochs", len(b.Epochs))
	}
	for e := range a.Epochs {
		x, y := a.Epochs[e], b.Epochs[e]
		if x.TestTop1 != y.TestTop1 || math.Abs(x.TrainLoss-y.TrainLoss) > 1e-6 {
			t.Errorf("epoch %d: resumed %+v, uninterrupted %+v", e+1, y.PeerMetrics, x.PeerMetrics)
		}
	}
}
