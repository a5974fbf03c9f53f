package plugins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/digest"
)

// lcl plugins pin: every plugin found, or the named ones only; refused
// plugins and unknown names are errors that write nothing.
func TestPinFound(t *testing.T) {
	dir := t.TempDir()
	a, b := writePlugin(t, dir, "a", 0o755), writePlugin(t, dir, "b", 0o755)
	lock := filepath.Join(t.TempDir(), "plugins.lock")
	pinned, total, err := PinFound(lock, []string{dir}, nil)
	if err != nil || len(pinned) != 2 || total != 2 {
		t.Fatalf("pin all: %+v %d %v", pinned, total, err)
	}
	pins, err := ReadPins(lock)
	if err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"a": a, "b": b} {
		sum, _ := digest.File(path)
		if p, ok := pins.Get(KindStrategy, name); !ok || p.SHA256 != sum || p.Path != path {
			t.Errorf("pin of %s: %+v, want sha256 %s at %s", name, p, sum, path)
		}
	}
	// b changes; pinning b alone updates its line and keeps a's.
	if err := os.WriteFile(b, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	oldA, _ := pins.Get(KindStrategy, "a")
	pinned, total, err = PinFound(lock, []string{dir}, []string{"strategy/b"})
	if err != nil || len(pinned) != 1 || pinned[0].Name != "b" || total != 2 {
		t.Fatalf("pin b: %+v %d %v", pinned, total, err)
	}
	pins, _ = ReadPins(lock)
	sum, _ := digest.File(b)
	if p, _ := pins.Get(KindStrategy, "b"); p.SHA256 != sum {
		t.Errorf("b's pin %+v not updated to %s", p, sum)
	}
	if p, _ := pins.Get(KindStrategy, "a"); p != oldA {
		t.Errorf("a's pin changed: %+v", p)
	}
	before, _ := os.ReadFile(lock)
	if _, _, err := PinFound(lock, []string{dir}, []string{"c"}); err == nil || !strings.Contains(err.Error(), `no plugin "c" on the search path `+dir) {
		t.Errorf("unknown name: %v", err)
	}
	if err := os.Chmod(a, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, _, err := PinFound(lock, []string{dir}, nil); err == nil || !strings.Contains(err.Error(), `strategy plugin "a" (`+a+`): refused, not pinned: `) {
		t.Errorf("refused plugin: %v", err)
	}
	if after, _ := os.ReadFile(lock); string(after) != string(before) {
		t.Errorf("a failed pin changed the lock file:\n%s\nwas\n%s", after, before)
	}
}
