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
// BLAS may be linked). LCL_BLAS_THREADS=N sets N instead (0 leaves the BLAS
// alone).
#pragma once

#include <dlfcn.h>

#include <cstdlib>

namespace lts {

inline int limit_blas_threads() {
	int n = 1;
	if (const char *v = std::getenv("LCL_BLAS_THREADS"); v && *v) n = std::atoi(v);
	if (n <= 0) return 0;
	using set_fn = void (*)(int);
	if (auto set = reinterpret_cast<set_fn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
		set(n);
		return n;
	}
	return 0;
}

} // namespace lts
