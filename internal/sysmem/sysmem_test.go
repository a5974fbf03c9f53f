package sysmem

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMemTotalAndCgroup(t *testing.T) {
	dir := t.TempDir()
	mi := filepath.Join(dir, "meminfo")
	os.WriteFile(mi, []byte("MemFree:  100 kB\nMemTotal:       16384 kB\n"), 0o644)
	if n, ok := memTotal(mi); !ok || n != 16384<<10 {
		t.Errorf("memTotal = %d, %v", n, ok)
	}
	self := filepath.Join(dir, "cgroup")
	os.WriteFile(self, []byte("0::/lcl.slice\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "fs", "lcl.slice"), 0o755)
	os.WriteFile(filepath.Join(dir, "fs", "lcl.slice", "memory.max"), []byte("1073741824\n"), 0o644)
	if n, ok := cgroupLimit(self, filepath.Join(dir, "fs")); !ok || n != 1<<30 {
		t.Errorf("cgroupLimit = %d, %v", n, ok)
	}
	os.WriteFile(filepath.Join(dir, "fs", "lcl.slice", "memory.max"), []byte("max\n"), 0o644)
	if _, ok := cgroupLimit(self, filepath.Join(dir, "fs")); ok {
		t.Error("memory.max \"max\" read as a limit")
	}
	if n, ok := Total(); !ok || n < 64<<20 {
		t.Errorf("Total on this machine: %d, %v", n, ok)
	}
}
