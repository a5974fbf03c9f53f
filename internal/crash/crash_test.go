package crash

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A goroutine that panics under Handle: one line on stderr naming the
// report, the report holds the stack, exit status ExitCode.
func TestHandleInGoroutine(t *testing.T) {
	if os.Getenv("LCL_TEST_CRASH") != "" {
		done := make(chan bool)
		go func() {
			defer Handle()
			var m map[string]int
			m["x"] = 1 // assignment to entry in nil map
			done <- true
		}()
		<-done
		return
	}
	state := t.TempDir()
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^TestHandleInGoroutine$")
	cmd.Env = append(os.Environ(), "LCL_TEST_CRASH=1", "XDG_STATE_HOME="+state)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != ExitCode {
		t.Fatalf("exit: %v, want status %d", err, ExitCode)
	}
	line := strings.TrimSpace(stderr.String())
	m := regexp.MustCompile(`^lcl: internal error \(a bug in lcl, please report it\): assignment to entry in nil map \(full report in (\S+)\)$`).FindStringSubmatch(line)
	if m == nil || strings.Count(line, "\n") != 0 {
		t.Fatalf("stderr %q, want one line naming the report", line)
	}
	if filepath.Dir(m[1]) != filepath.Join(state, "lcl") {
		t.Errorf("report at %s, want it in %s/lcl", m[1], state)
	}
	raw, err := os.ReadFile(m[1])
	if err != nil || !strings.Contains(string(raw), "crash_test.go") || !strings.Contains(string(raw), "panic: assignment to entry in nil map") {
		t.Fatalf("report: %v\n%s", err, raw)
	}
	if fi, _ := os.Stat(m[1]); fi.Mode().Perm() != 0o600 {
		t.Errorf("report mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestMessageWithoutReport(t *testing.T) {
	if got := Message("boom\nsecond line", ""); got != "lcl: internal error (a bug in lcl, please report it): boom second line (the report could not be written; run again with GOTRACEBACK=all to see it)" {
		t.Errorf("Message = %q", got)
	}
}
