// blas.hpp: keeps a threaded BLAS from competing with libtorch's threads.
//
// libtorch runs its kernels on its own OpenMP team, but calls BLAS for
// matrix products (linear layers). Debian's libtorch links OpenBLAS, whose
// pthread build keeps a pool of its own that spins (sched_yield) for about
// 2^28 cycles after every call before it sleeps: with a training step every
// few milliseconds it never sleeps, and on 2 cores its spinning took 20–35 %
// of the process's CPU time as system time and slowed training by up to 2x
// (docs/trainer.md, "Where the time goes"). The products of lcl's models are
// small, so one BLAS thread per calling thread costs nothing measurable, while
// libtorch's own team still parallelises convolutions and element-wise work.
//
// OpenBLAS reads OPENBLAS_NUM_THREADS when it loads, before this code runs,
// so the count is changed through its API (looked up at run time: another
// BLAS may be linked). lt_runtime_init (torch.Init) calls it with the
// Runtime's BLASThreads: 1 by default, LCL_BLAS_THREADS=N through
// torch.DefaultRuntime, 0 leaves the BLAS alone.
#pragma once

#include <dlfcn.h>


namespace lts {

// limit_blas_threads returns the count it set (0: none, or no OpenBLAS).
inline int limit_blas_threads(int n) {
	if (n <= 0) return 0;
	using set_fn = void (*)(int);
	if (auto set = reinterpret_cast<set_fn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
		set(n);
		return n;
	}
	return 0;
}

} // namespace lts
