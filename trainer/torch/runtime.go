package torch

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// Runtime is libtorch's process-wide configuration. Nothing of it is set
// when the library loads: a program sets it once with Init, first thing in
// main (lcl's does), or keeps libtorch's and glibc's defaults. Each field
// changes the whole process, which is why none is set behind the caller's
// back.
type Runtime struct {
	// CPUAllocator is how libtorch gets CPU memory: "caching" (lcl's caching
	// allocator in libtorch, plus glibc's malloc kept from returning memory to
	// the kernel and limited to one arena: allocator.hpp), "malloc" (the
	// malloc tuning only) or "system"/"" (the defaults). A training step
	// allocates the same large buffers every step; with the defaults their
	// pages are faulted in again each time (docs/trainer.md, "Memory
	// allocation").
	CPUAllocator string
	// BLASThreads caps a threaded BLAS's own thread pool (OpenBLAS spins
	// against libtorch's threads otherwise: blas.hpp); 0 leaves it alone.
	BLASThreads int
	// OMPWaitPolicy, when set and $OMP_WAIT_POLICY is not, makes Init
	// re-execute the program (/proc/self/exe, the same arguments) with
	// OMP_WAIT_POLICY set to it: the OpenMP runtime reads the variable when it
	// loads, before main. lcl uses "PASSIVE" (spinning OpenMP threads slowed
	// training 2.4× on 2 shared cores). Never set it in tests or libraries.
	OMPWaitPolicy string
}

// DefaultOMPWaitPolicy is the OpenMP wait policy lcl runs libtorch with
// unless the user set OMP_WAIT_POLICY. Measured on 2 shared cores
// (bench/trainer.sh, docs/trainer.md): with the default (active) policy
// OpenMP threads spin against Go's threads and other processes and the small
// CNN trained 2.4× slower than with PASSIVE.
const DefaultOMPWaitPolicy = "PASSIVE"

// DefaultRuntime is what the lcl command runs with: the caching allocator,
// one BLAS thread, OpenMP threads that sleep when idle. The environment
// overrides the first two for comparisons: LCL_CPU_ALLOCATOR (caching,
// malloc, system) and LCL_BLAS_THREADS (N; 0 leaves the BLAS alone).
func DefaultRuntime() (Runtime, error) {
	rt := Runtime{CPUAllocator: "caching", BLASThreads: 1, OMPWaitPolicy: DefaultOMPWaitPolicy}
	if v := os.Getenv("LCL_CPU_ALLOCATOR"); v != "" {
		switch v {
		case "caching", "malloc", "system":
			rt.CPUAllocator = v
		default:
			return rt, fmt.Errorf("LCL_CPU_ALLOCATOR=%q: want caching, malloc or system", v)
		}
	}
	if v := os.Getenv("LCL_BLAS_THREADS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1024 {
			return rt, fmt.Errorf("LCL_BLAS_THREADS=%q: want a thread count from 0 to 1024", v)
		}
		rt.BLASThreads = n
	}
	return rt, nil
}

// Init applies rt to the process, once. With OMPWaitPolicy to apply it does
// not return on success (the program starts again); otherwise it installs
// the allocator and caps the BLAS threads before any model exists: at once
// in a linked build, when the shim library opens in a lazy one (-tags
// ltlazy: a command that never trains never loads libtorch). It fails
// without libtorch (ErrNoLibtorch), with a shim of another ABI
// (ErrABIMismatch), and when called twice.
func Init(rt Runtime) error {
	if env, added := WithOMPWaitPolicy(os.Environ(), rt.OMPWaitPolicy); added {
		if exe, err := os.Executable(); err == nil {
			// On failure go on with OpenMP's default policy: slower, not wrong.
			_ = syscall.Exec(exe, os.Args, env)
		}
	}
	return startRuntime(rt)
}

// WithOMPWaitPolicy returns env, the environment of a new lcl process, with
// OMP_WAIT_POLICY=policy added when policy is set and this process's
// environment has no OMP_WAIT_POLICY (the user's wins), and whether it
// added it. Init re-executes the program with it; a parent process (lcl's
// supervisor) gives it to its child, which then need not.
func WithOMPWaitPolicy(env []string, policy string) (_ []string, added bool) {
	if policy == "" {
		return env, false
	}
	if _, set := os.LookupEnv("OMP_WAIT_POLICY"); set {
		return env, false
	}
	return append(env, "OMP_WAIT_POLICY="+policy), true
}
