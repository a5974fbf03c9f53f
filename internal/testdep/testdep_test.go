package testdep

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// fatalTB records the first Fatalf and stops the calling goroutine, as
// testing.T does, so a failing check can be observed from a test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func fails(tb testing.TB, fn func(testing.TB)) string {
	f := &fatalTB{TB: tb}
	done := make(chan struct{})
	go func() { defer close(done); fn(f) }()
	<-done
	return f.msg
}

func TestMissingDependencyNamesTheDebianPackage(t *testing.T) {
	tests := []struct {
		name string
		fn   func(testing.TB)
		want []string
	}{
		{"python missing", func(tb testing.TB) { checkPython(tb, "/nonexistent/python3", []string{"torch", "numpy"}) },
			[]string{"make deps", "apt-get install python3 python3-numpy python3-torch", "torch, numpy"}},
		{"import fails", func(tb testing.TB) { checkPython(tb, "/bin/false", []string{"scipy"}) },
			[]string{"apt-get install python3 python3-scipy"}},
		{"unknown module", func(tb testing.TB) { PythonModules(tb, "no_such_module") },
			[]string{`unknown Python module "no_such_module"`}},
		{"program", func(tb testing.TB) { Program(tb, "chromium-not-here") },
			[]string{`unknown program "chromium-not-here"`}},
	}
	for _, tt := range tests {
		msg := fails(t, tt.fn)
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message %q lacks %q", tt.name, msg, w)
			}
		}
	}
}

// TestPythonIsIsolated: a folder named like a module in the caller's
// working directory or on PYTHONPATH must not shadow the real module.
func TestPythonIsIsolated(t *testing.T) {
	py := PythonModules(t)
	t.Setenv("PYTHONPATH", t.TempDir())
	out := py.Run("import sys, os; print(sys.flags.isolated, '' in sys.path, os.getcwd() in sys.path)")
	if strings.TrimSpace(out) != "1 False False" {
		t.Errorf("isolated, cwd on path, working dir on path = %q, want 1 False False", out)
	}
}
