// Package testdep is how a test declares what it needs from outside Go: a
// Python module (PyTorch, networkx, scipy, …) or a program (chromium). Each
// dependency maps to the Debian package that provides it; a missing one
// fails the test with a one-line install hint instead of a traceback, and
// TestDepsInstallsEveryDeclaredPackage checks that `make deps` (or `make
// bench-deps`, for benchmarks) installs every package a test declares, so
// the two cannot drift apart.
//
// Python always runs isolated: Debian's /usr/bin/python3 with -I (no user
// site-packages, no PYTHON* variables, no script or working directory on
// sys.path) in a neutral working directory, so a Go package folder such as
// trainer/torch can never shadow the real `torch` module.
package testdep

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Python is Debian's interpreter; the Debian python3-* packages install into it.
const Python = "/usr/bin/python3"

// pythonModules maps each importable module a test may declare to the Debian
// package that installs it.
var pythonModules = map[string]string{
	"numpy":           "python3-numpy",
	"scipy":           "python3-scipy",
	"networkx":        "python3-networkx",
	"torch":           "python3-torch",
	"torchvision":     "python3-torchvision",
	"gensim":          "python3-gensim",
	"PIL":             "python3-pil",
	"grpc":            "python3-grpcio",
	"google.protobuf": "python3-protobuf",
}

// programs maps each program a test may declare to its Debian package.
var programs = map[string]string{
	"chromium": "chromium",
	"g++":      "g++",
	"bash":     "bash",
	// The scale-out end-to-end tests: a one-machine Slurm cluster, network
	// namespaces, Debian's torchrun. slurm-wlm pulls in slurmctld, slurmd
	// and slurm-client.
	"munged":    "munge",
	"slurmctld": "slurm-wlm",
	"slurmd":    "slurm-wlm",
	"sbatch":    "slurm-wlm",
	"ip":        "iproute2",
	"torchrun":  "python3-torch",
}

// Package returns the Debian package of a declared module or program.
func Package(name string) (string, bool) {
	if p, ok := pythonModules[name]; ok {
		return p, true
	}
	p, ok := programs[name]
	return p, ok
}

// Py runs Python with the modules a test declared.
type Py struct {
	tb    testing.TB
	dir   string
	torch bool // the scripts import torch: they start with onednnGuard
}

// probe caches one import check per module set for the whole test binary.
var probe sync.Map // string → error

// PythonModules fails tb unless Debian's python3 can import every module,
// naming the Debian packages to install; it returns a runner for scripts
// that use them. Every module must be one this package knows (add new ones
// to pythonModules together with scripts/deps.sh).
func PythonModules(tb testing.TB, modules ...string) *Py {
	tb.Helper()
	return checkPython(tb, Python, modules)
}

func checkPython(tb testing.TB, python string, modules []string) *Py {
	tb.Helper()
	pkgs := []string{"python3"}
	for _, m := range modules {
		p, ok := pythonModules[m]
		if !ok {
			tb.Fatalf("testdep: unknown Python module %q: add it and its Debian package to internal/testdep", m)
		}
		pkgs = append(pkgs, p)
	}
	key := python + ":" + strings.Join(modules, ",")
	v, ok := probe.Load(key)
	if !ok {
		var err error
		script := "pass"
		if len(modules) > 0 {
			script = "import " + strings.Join(modules, ", ")
		}
		if _, statErr := os.Stat(python); statErr != nil {
			err = fmt.Errorf("%s is missing", python)
		} else {
			cmd := exec.Command(python, "-I", "-c", script)
			cmd.Dir = os.TempDir()
			if out, runErr := cmd.CombinedOutput(); runErr != nil {
				err = fmt.Errorf("%v: %s", runErr, lastLine(out))
			}
		}
		v, _ = probe.LoadOrStore(key, err)
	}
	if err, _ := v.(error); err != nil {
		what := "Python"
		if len(modules) > 0 {
			what = "Python's " + strings.Join(modules, ", ")
		}
		tb.Fatalf("this test needs %s: run `make deps` (or apt-get install %s): %v",
			what, strings.Join(uniq(pkgs), " "), err)
	}
	return &Py{tb: tb, dir: tb.TempDir(), torch: slices.Contains(modules, "torch")}
}

// onednnGuard is lcl's trainer/torch/onednn_guard.hpp for the PyTorch
// references: on an AMD CPU that hides its cache descriptors (CPUID leaf
// 0x8000001D empty, read by a few machine instructions) oneDNN 3.x crashes or computes
// wrong results, so lcl turns libtorch's use of it off there, and a reference
// must do the same to compare (and to survive: PyTorch 2.6 dies on ResNet-50
// there). LCL_ONEDNN=on|off overrides both sides.
const onednnGuard = `def _lcl_onednn_guard():
    import os, re, platform
    want = os.environ.get("LCL_ONEDNN", "")
    if want == "on":
        return
    off = want == "off"
    if not off and platform.machine() == "x86_64":
        import ctypes, mmap
        # cpuid(leaf (edi), subleaf (esi), uint32 out[4] (rdx)): /proc/cpuinfo
        # is no help, the kernel may list topoext where CPUID clears it.
        code = bytes.fromhex("53 89f8 89f1 4989d0 0fa2 418900 41895804 41894808 4189500c 5b c3")
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(code)
        fn = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32))(
            ctypes.addressof(ctypes.c_char.from_buffer(page)))
        def cpuid(leaf, sub=0):
            out = (ctypes.c_uint32 * 4)()
            fn(leaf, sub, out)
            return list(out)
        _, b, c, d = cpuid(0)
        amd = (b, d, c) == (0x68747541, 0x69746E65, 0x444D4163)  # AuthenticAMD
        if amd and cpuid(0x8000001D)[:3] == [0, 0, 0]:
            import torch
            m = re.search(r"MKL-DNN v(\d+)\.", torch.__config__.show())
            off = m is not None and int(m.group(1)) >= 3
    if off:
        import torch
        torch.backends.mkldnn.enabled = False
_lcl_onednn_guard()
del _lcl_onednn_guard
`

// guarded puts onednnGuard before a script that uses torch: `-c SCRIPT`
// gets it prepended, `FILE args` runs FILE after it with the same sys.argv.
func (p *Py) guarded(args []string) []string {
	if !p.torch || len(args) == 0 {
		return args
	}
	if args[0] == "-c" && len(args) > 1 {
		return append([]string{"-c", onednnGuard + args[1]}, args[2:]...)
	}
	if strings.HasPrefix(args[0], "-") {
		return args
	}
	run := onednnGuard + "import runpy, sys\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name=\"__main__\")\n"
	return append([]string{"-c", run}, args...)
}

// Command is `python3 -I args...` in a fresh empty working directory.
func (p *Py) Command(args ...string) *exec.Cmd {
	cmd := exec.Command(Python, append([]string{"-I"}, p.guarded(args)...)...)
	cmd.Dir = p.dir
	return cmd
}

// Run runs a script (`python3 -I -c script args...`) and returns its
// standard output; on failure it fails the test with the script's output.
func (p *Py) Run(script string, args ...string) string {
	p.tb.Helper()
	cmd := p.Command(append([]string{"-c", script}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		p.tb.Fatalf("python: %v\n%s%s", err, out, stderr.String())
	}
	return string(out)
}

// Program fails tb unless the named program is on PATH, naming its Debian
// package; it returns the program's path.
func Program(tb testing.TB, name string) string {
	tb.Helper()
	pkg, ok := programs[name]
	if !ok {
		tb.Fatalf("testdep: unknown program %q: add it and its Debian package to internal/testdep", name)
	}
	path, err := exec.LookPath(name)
	if err != nil {
		tb.Fatalf("this test needs %s: run `make deps` (or apt-get install %s)", name, pkg)
	}
	return path
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

func uniq(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
