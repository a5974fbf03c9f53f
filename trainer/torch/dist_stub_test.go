//go:build cgo

package torch

import (
	"os"
	"os/exec"
	"testing"
)

// TestDistStubCompiles: dist_stub.cpp, which build-shim.sh links instead of
// dist.cpp when c10d does not compile against a PyTorch (go build never
// compiles it), still defines shim.h's process-group functions with their
// current signatures: a changed lt_pg_* declaration breaks this test here
// rather than the shim build on a GPU machine.
func TestDistStubCompiles(t *testing.T) {
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	cmd := exec.Command(cxx, "-std=c++17", "-fsyntax-only", "-I/usr/include/torch/csrc/api/include", "dist_stub.cpp")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dist_stub.cpp does not compile against shim.h: %v\n%s", err, out)
	}
}
