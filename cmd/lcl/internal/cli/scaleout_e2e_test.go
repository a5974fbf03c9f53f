//go:build e2e

package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Helpers of the scale-out end-to-end tests (a one-machine Slurm cluster,
// nodes as network namespaces), which start daemons and namespaces and so
// need root.

// needRoot skips t unless it runs as root, saying why.
func needRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: %s (run `make e2e` as root)", why)
	}
}

// buildLCL builds this module's lcl into dir.
func buildLCL(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "lcl")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lcl-project/lcl/cmd/lcl").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// worldReadableTemp is a fresh folder that every user may enter (munged
// refuses a socket under a folder others cannot search; t.TempDir's are
// 0700), removed at the end.
func worldReadableTemp(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// daemon is a long-running process started by a test, its output in a file.
type daemon struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startDaemon starts name (in the foreground: the test is its parent) with
// its output in dir/name.out; the returned daemon is stopped by stop.
func startDaemon(t *testing.T, dir string, env []string, name string, args ...string) *daemon {
	t.Helper()
	d := &daemon{name: name, log: filepath.Join(dir, name+".out"), done: make(chan struct{})}
	f, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = exec.Command(name, args...)
	d.cmd.Env = env
	d.cmd.Stdout, d.cmd.Stderr = f, f
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("%s: %v", name, err)
	}
	go func() {
		d.cmd.Wait()
		f.Close()
		close(d.done)
	}()
	return d
}

// running reports whether the daemon still runs.
func (d *daemon) running() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// stop ends the daemon's process group (SIGTERM, SIGKILL after 10 s) and
// returns the tail of its output.
func (d *daemon) stop() string {
	if d.running() {
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
		}
	}
	b, _ := os.ReadFile(d.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// waitFor polls cond every 100 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	for end := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// runFor runs a command with env and a timeout, returning its combined output.
func runFor(timeout time.Duration, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return strings.TrimSpace(out.String()), err
}
