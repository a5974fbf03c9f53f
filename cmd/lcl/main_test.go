package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Only help and the version skip the supervisor and libtorch's settings;
// every command that may train (or that printsOnly cannot read) does not.
func TestPrintsOnly(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"version"}, true},
		{[]string{"--json", "version"}, true},
		{[]string{"--store", "/s", "version"}, true},
		{[]string{"--help"}, true},
		{[]string{"help", "train"}, true},
		{[]string{"train", "--help"}, true},
		{[]string{"train", "-h"}, true},
		{[]string{"completion", "bash"}, true},
		{[]string{"train", "--synsets", "fashion-mnist"}, false},
		{[]string{"--store", "version", "train"}, false}, // a store folder named version
		{[]string{"--store-wait", "1m", "version"}, true},
		{[]string{"experiment", "run", "grid.yaml"}, false},
		{[]string{"plugins", "serve", "--", "--help"}, false},
		{[]string{"--quiet"}, true},
		{[]string{"models"}, false},
	} {
		if got := printsOnly(tc.args); got != tc.want {
			t.Errorf("printsOnly(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// An lcl built with -tags ltlazy (make build's) runs the commands that do
// not train without the shim library, so without libtorch: with LCL_SHIM
// naming no file, they still answer, and lcl train refuses with one line
// before writing anything.
func TestLazyBuildStartsWithoutLibtorch(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "lcl")
	build := exec.Command("go", "build", "-tags", "ltlazy", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags ltlazy: %v\n%s", err, out)
	}
	if out, err := exec.Command("ldd", bin).Output(); err != nil || strings.Contains(string(out), "libtorch") {
		t.Fatalf("ldd: %v: want no libtorch linked:\n%s", err, out)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "LCL_SHIM="+filepath.Join(dir, "missing.so"), "LCL_STORE="+filepath.Join(dir, "store"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{{"version"}, {"--help"}, {"plugins", "list"}, {"synsets", "fashion-mnist"}} {
		if out, err := run(args...); err != nil {
			t.Errorf("lcl %v without the shim library: %v\n%s", args, err, out)
		}
	}
	runDir := filepath.Join(dir, "run")
	out, err := run("train", "--synsets", "fashion-mnist", "--epochs", "1", "--fraction", "0.01", "--out", runDir)
	if err == nil || !strings.Contains(out, "the shim library did not open") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("lcl train without the shim library: %v, output %q: want one line naming the shim library", err, out)
	}
	if _, err := os.Stat(runDir); !os.IsNotExist(err) {
		t.Errorf("the refused run left %s behind (%v)", runDir, err)
	}
}
