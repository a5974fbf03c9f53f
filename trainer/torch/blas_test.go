//go:build cgo

package torch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBLASKind(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3", "openblas"},
		{"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so", "openblas"},
		{"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0", "reference"},
		{"/home/a b/lib/libblas.so.3", "reference"},
		{"/opt/x/lib/libopenblas.so.0", "openblas"},
		{"/opt/intel/lib/libmkl_rt.so.2", "mkl"},
		{"/usr/lib/x86_64-linux-gnu/blis-openmp/libblas.so.3", "blis"},
		{"/usr/lib/x86_64-linux-gnu/atlas/libblas.so.3", "atlas"},
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", ""},
		{"/usr/lib/libblasfeo.so", ""},
	} {
		if got := blasKind(tc.path); got != tc.want {
			t.Errorf("blasKind(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

// TestLoadedBLAS: the BLAS found in this process is the file the system's
// libblas.so.3 resolves to (Debian's alternatives), and a child whose loader
// is pointed at Netlib's (LD_LIBRARY_PATH) reports the reference BLAS.
func TestLoadedBLAS(t *testing.T) {
	if err := Check(); err != nil {
		t.Fatal(err)
	}
	got, err := LoadedBLAS()
	if err != nil {
		t.Fatal(err)
	}
	const system = "/usr/lib/x86_64-linux-gnu/libblas.so.3"
	if os.Getenv("LD_LIBRARY_PATH") == "" {
		want, err := filepath.EvalSymlinks(system)
		if err != nil {
			t.Fatalf("%s: %v (Debian's libtorch depends on libblas3 | libblas.so.3)", system, err)
		}
		if got.Kind != blasKind(want) {
			t.Errorf("LoadedBLAS = %+v; the loader's %s is %s (%s)", got, system, want, blasKind(want))
		}
	}
	const netlib = "/usr/lib/x86_64-linux-gnu/blas"
	if _, err := os.Stat(filepath.Join(netlib, "libblas.so.3")); err != nil {
		t.Fatalf("Netlib's BLAS: %v (scripts/deps.sh installs libblas3)", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LT_TEST_PRINT_BLAS=1", "LD_LIBRARY_PATH="+netlib)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if f := strings.Fields(string(out)); len(f) != 2 || f[0] != "reference" || !strings.HasPrefix(f[1], netlib+"/") {
		t.Errorf("child with LD_LIBRARY_PATH=%s reports %q; want the reference BLAS from there", netlib, out)
	}
}
