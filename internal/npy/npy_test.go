package npy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
)

func TestRoundTrip(t *testing.T) {
	data := []float64{1, 0.5, -2, 3.25, 0, 1e-300}
	var buf bytes.Buffer
	if err := Write(&buf, 2, 3, data); err != nil {
		t.Fatal(err)
	}
	if hl := buf.Len() - 8*len(data); hl%64 != 0 {
		t.Fatalf("header of %d bytes, want a multiple of 64", hl)
	}
	r, c, got, err := Read(&buf)
	if err != nil || r != 2 || c != 3 {
		t.Fatalf("Read: %d×%d, %v", r, c, err)
	}
	for i := range data {
		if got[i] != data[i] {
			t.Fatalf("value %d: %g, want %g", i, got[i], data[i])
		}
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"magic", "hello world, not npy", "bad magic"},
		{"dtype", "\x93NUMPY\x01\x00\x46\x00{'descr': '<i8', 'fortran_order': False, 'shape': (1, 1), }          \n", "dtype"},
		{"short", "\x93NUMPY\x01\x00\x46\x00{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }          \n\x00", "shorter"},
	}
	for _, tt := range tests {
		_, _, _, err := Read(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
}

// NumPy itself must read what Write writes and vice versa (float32 too).
func TestNumPyInterop(t *testing.T) {
	py := testdep.PythonModules(t, "numpy")
	dir := t.TempDir()
	ours := filepath.Join(dir, "ours.npy")
	if err := WriteFile(ours, 2, 2, []float64{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "theirs.npy")
	script := `import numpy as np, sys
a = np.load(sys.argv[1]); assert a.shape == (2, 2) and a.tolist() == [[1, 2], [3, 4]], a
np.save(sys.argv[2], (a * 0.5).astype(np.float32))`
	if out, err := py.Command("-c", script, ours, theirs).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v: %s", err, out)
	}
	r, c, got, err := ReadFile(theirs)
	if err != nil || r != 2 || c != 2 || got[3] != 2 {
		t.Fatalf("ReadFile: %d×%d %v %v", r, c, got, err)
	}
	if _, err := os.Stat(ours); err != nil {
		t.Fatal(err)
	}
}
