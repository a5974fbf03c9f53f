//go:build e2e

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lcl-project/lcl/internal/npy"
)

func fmnistArgs(t *testing.T, strategy, out string, extra ...string) []string {
	if _, err := os.Stat("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"); err != nil {
		t.Fatalf("Fashion-MNIST is missing (%v): run `make deps` (installs dataset-fashion-mnist)", err)
	}
	sim := filepath.Join(t.TempDir(), "sim.npy")
	data := make([]float64, 100)
	for i := range data {
		data[i] = float64((i*7)%10) / 10
		if i%11 == 0 {
			data[i] = 1
		}
	}
	if err := npy.WriteFile(sim, 10, 10, data); err != nil {
		t.Fatal(err)
	}
	args := []string{"--store", filepath.Join(t.TempDir(), "store"), "train", "--synsets", "fashion-mnist", "--model", "cnn",
		"--strategy", strategy, "--matrix", sim, "--fraction", "0.02", "--epochs", "2", "--threads", "2", "--no-store", "--out", out}
	return append(args, extra...)
}

// Every built-in strategy trains end to end on Fashion-MNIST (CPU).
func TestE2EBuiltinStrategiesTrain(t *testing.T) {
	for _, s := range []string{"sl", "ls", "lcl", "kd", "dml", "cn"} {
		t.Run(s, func(t *testing.T) {
			r := cliRun(t, fmnistArgs(t, s, filepath.Join(t.TempDir(), "run"))...)
			if r.code != 0 || !strings.Contains(r.out, "test top-1") {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.out, r.err)
			}
		})
	}
}

// pluginPID finds the child process serving the built-in strategy name.
func pluginPID(name string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) && bytes.HasSuffix(cmd, []byte("plugins\x00serve\x00strategy\x00"+name+"\x00")) {
			return pid
		}
	}
	return 0
}

// Killing the strategy plugin mid-run stops the run with one line naming
// it; --resume then finishes the run.
func TestE2EKillPluginThenResume(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	args := fmnistArgs(t, "lcl", out, "--epsilon", "0.99", "--epochs", "3")
	done := make(chan cliResult)
	go func() { done <- cliRun(t, args...) }()
	waitForEpochs(t, out, 1, 2*time.Minute, nil)
	pid := pluginPID("lcl")
	if pid == 0 {
		t.Fatal("plugin process not found")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	r := <-done
	lines := strings.Split(strings.TrimSpace(r.err), "\n")
	last := lines[len(lines)-1]
	if r.code != 1 || !strings.Contains(last, `strategy plugin "lcl" (built-in)`) || !strings.Contains(last, "the plugin process died") {
		t.Fatalf("exit %d, last line %q\n%s", r.code, last, r.err)
	}
	r = cliRun(t, append(args, "--resume")...)
	if r.code != 0 || !strings.Contains(r.out, "test top-1") {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.out, r.err)
	}
}
