package crash

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// supervised runs this test binary as a supervised program in mode (see
// TestSupervisedChild) and returns its exit status and stderr.
func supervised(t *testing.T, mode, state string) (int, string) {
	t.Helper()
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^TestSupervisedChild$")
	cmd.Env = append(os.Environ(), "LCL_TEST_SUPERVISE="+mode, "XDG_STATE_HOME="+state)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// TestSupervisedChild is not a test: with LCL_TEST_SUPERVISE set the test
// binary plays lcl's main: Supervise, then in the child what the mode says.
func TestSupervisedChild(t *testing.T) {
	mode := os.Getenv("LCL_TEST_SUPERVISE")
	if mode == "" {
		return
	}
	if code, ok := Supervise(true, func(env []string) []string { return append(env, "LCL_TEST_CHILD=1") }); ok {
		os.Exit(code)
	}
	if os.Getenv("LCL_TEST_CHILD") != "1" {
		os.Exit(9) // not run under the supervisor
	}
	switch mode {
	case "goroutine": // a panic in a goroutine nobody recovers (a library's)
		go func() { panic("a library's goroutine failed") }()
		time.Sleep(10 * time.Second)
	case "fatal": // a fatal runtime error no recover can catch
		m := map[int]int{}
		for range 4 {
			go func() {
				for i := 0; ; i++ {
					m[i%64] = i
				}
			}()
		}
		time.Sleep(10 * time.Second)
	case "exit3":
		os.Exit(3)
	case "sigint": // wait for the signal the parent passes on
		ch := make(chan os.Signal, 1)
		signalNotify(ch)
		os.Stdout.WriteString("waiting\n")
		select {
		case <-ch:
			os.Exit(130)
		case <-time.After(10 * time.Second):
			os.Exit(4)
		}
	}
	os.Exit(0)
}

// Crashes no recover can catch end with ExitCode and one line naming a
// report that holds the runtime's output (issue 23, item 12: they exited
// 2, the usage-error code, with no report).
func TestSuperviseReportsUncaughtCrashes(t *testing.T) {
	for _, c := range []struct{ mode, what string }{ // what: the line's start
		{"goroutine", "panic: a library's goroutine failed"},
		{"fatal", "fatal runtime error (its message is on stderr above) in github.com/lcl-project/lcl/internal/crash.TestSupervisedChild.func"},
	} {
		state := t.TempDir()
		code, stderr := supervised(t, c.mode, state)
		if code != ExitCode {
			t.Errorf("%s: exit %d, want %d; stderr %q", c.mode, code, ExitCode, stderr)
			continue
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		m := regexp.MustCompile(`^lcl: internal error \(a bug in lcl, please report it\): (.*) \(full report in (\S+)\)$`).FindStringSubmatch(last)
		if m == nil || !strings.HasPrefix(m[1], c.what) {
			t.Errorf("%s: last line %q, want one naming %q and the report", c.mode, last, c.what)
			continue
		}
		if filepath.Dir(m[2]) != filepath.Join(state, "lcl") {
			t.Errorf("%s: report at %s, want it in %s/lcl", c.mode, m[2], state)
		}
		raw, err := os.ReadFile(m[2])
		if err != nil || !strings.Contains(string(raw), m[1]) || !strings.Contains(string(raw), "goroutine ") || !strings.Contains(string(raw), "supervise_test.go:") {
			t.Errorf("%s: report %v:\n%.500s", c.mode, err, raw)
		}
	}
}

// Other exits pass through unchanged; the child really is supervised.
func TestSupervisePassesExitStatus(t *testing.T) {
	if code, stderr := supervised(t, "exit3", t.TempDir()); code != 3 || stderr != "" {
		t.Errorf("exit %d, stderr %q; want 3 and nothing", code, stderr)
	}
	if code, _ := supervised(t, "plain", t.TempDir()); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}

// SIGINT sent to the supervisor (the process its caller started) reaches
// the child once.
func TestSuperviseForwardsSIGINT(t *testing.T) {
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^TestSupervisedChild$")
	cmd.Env = append(os.Environ(), "LCL_TEST_SUPERVISE=sigint")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 8)
	if n, _ := out.Read(buf); string(buf[:n]) != "waiting\n" {
		t.Fatalf("child said %q", buf[:n])
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d after SIGINT, want the child's 130", code)
	}
}

func signalNotify(ch chan os.Signal) { signal.Notify(ch, syscall.SIGINT) }
