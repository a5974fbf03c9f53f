package npy

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

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
		{"short", "\x93NUMPY\x01\x00\x46\x00{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }          \n\x00", "needs 32 bytes of data, the file holds 1"},
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

// npyHeader is a version 1.0 header for shape.
func npyHeader(descr, shape string) []byte {
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	h += strings.Repeat(" ", (64-(10+len(h)+1)%64)%64) + "\n"
	return append([]byte{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, byte(len(h)), byte(len(h) >> 8)}, h...)
}

// The audit's crafted files: tiny inputs whose headers announce huge
// arrays. Each must fail at once with a message naming the problem, without
// allocating what the header claims (a file reader, an in-memory reader and
// a stream of unknown length).
func TestReadCraftedShapes(t *testing.T) {
	for _, c := range []struct {
		name, descr, shape string
		data               int
		want               string
	}{
		{"product wraps to 0", "<f8", "(4294967296, 4294967296)", 0, "more than 2147483648 elements"},
		{"product wraps with the item size", "<f8", "(2305843009213693952, 4)", 0, "more than 2147483648 elements"},
		{"8 GiB announced", "<f4", "(46000, 46000)", 16, "needs 8464000000 bytes of data, the file holds 16"},
		{"data shorter than shape", "<f8", "(100, 100)", 80, "needs 80000 bytes of data, the file holds 80"},
		{"1-D", "<f4", "(9999999999,)", 0, "more than 2147483648 elements"},
	} {
		file := append(npyHeader(c.descr, c.shape), make([]byte, c.data)...)
		path := filepath.Join(t.TempDir(), "crafted.npy")
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := ReadFile(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), path+": npy: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: ReadFile: %v; want one line naming the file and %q", c.name, err, c.want)
		}
		// Through a stream nothing can say how long the input is: the
		// buffer grows with the data that arrives.
		_, _, _, err = Read(iotest.OneByteReader(bytes.NewReader(file)))
		if err == nil {
			t.Errorf("%s: Read of a stream accepted it", c.name)
		}
	}
}

func TestReadHeaderLongerThanFile(t *testing.T) {
	in := "\x93NUMPY\x02\x00\xff\xff\x0f\x00{'descr'"
	_, _, _, err := Read(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), "header of 1048575 bytes is longer than the file") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzRead: no input panics, and an accepted one holds every value it returns.
func FuzzRead(f *testing.F) {
	var ok bytes.Buffer
	Write(&ok, 2, 3, []float64{1, 2, 3, 4, 5, 6})
	f.Add(ok.Bytes())
	var ok32 bytes.Buffer
	WriteFloat32(&ok32, 1, 2, []float32{1, 2})
	f.Add(ok32.Bytes())
	f.Add(append(npyHeader("<f8", "(4294967296, 4294967296)"), 0))
	f.Add(append(npyHeader(">f4", "(2, 1)"), 0, 0, 0, 1, 0, 0, 0, 2))
	f.Add([]byte("\x93NUMPY\x01\x00\x46\x00{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }          \n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rows, cols, data, err := Read(bytes.NewReader(in))
		if err != nil {
			return
		}
		if len(data) != rows*cols || 4*len(data) > len(in) {
			t.Fatalf("accepted %d×%d with %d values from %d bytes", rows, cols, len(data), len(in))
		}
		if _, _, _, err := Read(io.MultiReader(bytes.NewReader(in))); err != nil {
			t.Fatalf("a stream of the same bytes fails: %v", err)
		}
	})
}

// Read32 must give what Read gives, rounded to float32, for every layout
// NumPy writes (C and Fortran order, both byte orders, f4 and f8), and
// refuse short data as Read does.
func TestRead32MatchesRead(t *testing.T) {
	py := testdep.PythonModules(t, "numpy")
	dir := t.TempDir()
	script := `import numpy as np, sys
rng = np.random.default_rng(3)
a = rng.standard_normal((300, 700))
d = sys.argv[1]
np.save(d + "/c4.npy", a.astype("<f4"))
np.save(d + "/c8.npy", a.astype("<f8"))
np.save(d + "/f8.npy", np.asfortranarray(a.astype(">f8")))
np.save(d + "/f4.npy", np.asfortranarray(a.astype(">f4")))`
	if out, err := py.Command("-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v: %s", err, out)
	}
	for _, name := range []string{"c4", "c8", "f8", "f4"} {
		path := filepath.Join(dir, name+".npy")
		r, c, want, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r32, c32, got, err := Read32(f)
		f.Close()
		if err != nil || r32 != r || c32 != c || len(got) != len(want) || r != 300 || c != 700 {
			t.Fatalf("%s: Read32 %d×%d (%v), Read %d×%d", name, r32, c32, err, r, c)
		}
		for k := range want {
			if got[k] != float32(want[k]) {
				t.Fatalf("%s: value %d: %g, want %g", name, k, got[k], float32(want[k]))
			}
		}
	}
	short := append(npyHeader("<f4", "(100, 100)"), make([]byte, 80)...)
	if _, _, _, err := Read32(iotest.OneByteReader(bytes.NewReader(short))); err == nil || !strings.Contains(err.Error(), "needs 40000 bytes of data, the file holds 80") {
		t.Errorf("Read32 of short data: %v", err)
	}
}
