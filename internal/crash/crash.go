// Package crash turns a panic into one line on stderr, the full report in
// a file, and an exit code of its own (ExitCode), so a bug in lcl is told
// apart from bad input (exit 1) and from a usage error (exit 2, which is
// also what Go's runtime uses for an unhandled panic).
//
// cli.Run recovers panics of the command's goroutine; every goroutine lcl
// starts itself defers Handle as its first statement; Supervise catches
// the rest (a library's goroutine, a fatal runtime error) from a parent
// process.
package crash

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// ExitCode is lcl's exit status after a panic (EX_SOFTWARE of sysexits.h,
// "internal software error").
const ExitCode = 70

// Handle, deferred at the top of a goroutine, reports a panic of that
// goroutine (Report, then Message on stderr) and exits with ExitCode.
func Handle() {
	if v := recover(); v != nil {
		path, _ := Report(v, debug.Stack())
		fmt.Fprintln(os.Stderr, Message(v, path))
		os.Exit(ExitCode)
	}
}

// Message is the one line printed for a panic whose report is at path ("" if
// it could not be written).
func Message(v any, path string) string {
	what := strings.Join(strings.Fields(fmt.Sprint(v)), " ")
	if len(what) > 200 {
		what = what[:200] + "…"
	}
	where := "the report could not be written; run again with GOTRACEBACK=all to see it"
	if path != "" {
		where = "full report in " + path
	}
	return fmt.Sprintf("lcl: internal error (a bug in lcl, please report it): %s (%s)", what, where)
}

// Report writes the panic value, the command line and the stack to a new
// file, readable only by the user, and returns its path: in
// $XDG_STATE_HOME/lcl (default ~/.local/state/lcl), else the temporary
// folder.
func Report(v any, stack []byte) (string, error) {
	return writeReport(fmt.Sprintf("lcl crashed at %s\ncommand: %q\ngo: %s %s/%s\npanic: %v\n\n%s",
		now(), os.Args, runtime.Version(), runtime.GOOS, runtime.GOARCH, v, stack))
}

func now() string { return time.Now().Format(time.RFC3339) }

// writeReport writes body to a new report file and returns its path.
func writeReport(body string) (string, error) {
	name := fmt.Sprintf("crash-%s-%d.txt", time.Now().Format("20060102-150405"), os.Getpid())
	if dir := stateDir(); dir != "" && os.MkdirAll(dir, 0o700) == nil {
		p := filepath.Join(dir, name)
		if f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			_, werr := f.WriteString(body)
			if cerr := f.Close(); werr == nil && cerr == nil {
				return p, nil
			}
		}
	}
	f, err := os.CreateTemp("", "lcl-crash-*.txt") // 0600, a fresh name
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(body); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

func stateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "lcl")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "lcl")
	}
	return ""
}
