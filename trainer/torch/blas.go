package torch

import (
	"path/filepath"
	"strings"
)

// BLAS names the BLAS library libtorch's matrix products run on in this
// process, as the dynamic loader resolved it (LoadedBLAS).
type BLAS struct {
	// Kind is "openblas", "mkl", "blis", "atlas", "reference" (Netlib's BLAS,
	// Debian's libblas3) or "" when libtorch loaded no BLAS library (not
	// loaded yet, or one linked in statically, as PyTorch's wheels do).
	Kind string
	// Path is the file that defines sgemm_ for libtorch.
	Path string
}

// Reference reports whether the BLAS is Netlib's unoptimised reference
// implementation. Debian's libtorch depends on "libblas3 | libblas.so.3",
// so a machine that installs libtorch-dev with --no-install-recommends and
// nothing else gets it: the demo's runs then took 3× as long as on
// OpenBLAS (docs/trainer.md, "The BLAS").
func (b BLAS) Reference() bool { return b.Kind == "reference" }

// blasKind classifies a mapped file's path ("" when it is no BLAS). Debian's
// alternatives name every implementation libblas.so.3, in a folder of its
// own: /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 is OpenBLAS,
// /usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0 the reference one.
func blasKind(path string) string {
	base, dir := filepath.Base(path), strings.ToLower(filepath.Dir(path))
	switch {
	case strings.HasPrefix(base, "libopenblas"):
		return "openblas"
	case strings.HasPrefix(base, "libmkl_rt"), strings.HasPrefix(base, "libmkl_core"):
		return "mkl"
	case strings.HasPrefix(base, "libblis"):
		return "blis"
	case !strings.HasPrefix(base, "libblas.so"):
		return ""
	case strings.Contains(dir, "openblas"):
		return "openblas"
	case strings.Contains(dir, "blis"):
		return "blis"
	case strings.Contains(dir, "mkl"):
		return "mkl"
	case strings.Contains(dir, "atlas"):
		return "atlas"
	}
	return "reference"
}
