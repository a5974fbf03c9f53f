//go:build cgo

package torch

// #include "shim.h"
import "C"

import "fmt"

// The runtime and device sections of shim.h: threads, seeds, the process's
// settings (Init), the CPU allocator's counters, CUDA devices and their
// settings, and what the build can do.

// SetThreads sets libtorch's intra-op thread count (n ≤ 0 keeps the default).
func SetThreads(n int) error {
	return callLib("set threads", func(e **C.char) C.int32_t { return C.lt_set_threads(C.int32_t(n), e) })
}

// Threads is libtorch's intra-op thread count.
func Threads() (int, error) {
	var n C.int32_t
	err := callLib("threads", func(e **C.char) C.int32_t { return C.lt_get_threads(&n, e) })
	return int(n), err
}

// ManualSeed seeds libtorch's default generators (initialisation, dropout).
func ManualSeed(seed uint64) error {
	return callLib("manual seed", func(e **C.char) C.int32_t { return C.lt_manual_seed(C.uint64_t(seed), e) })
}

// initRuntime is Init's libtorch part (lt_runtime_init), once the shim's
// ABI is checked.
func initRuntime(rt Runtime) error {
	if err := Check(); err != nil {
		return err
	}
	return runtimeInit(rt)
}

// runtimeInit calls lt_runtime_init without checking the shim first (the
// check itself calls it in a lazy build).
func runtimeInit(rt Runtime) error {
	if rt.BLASThreads < 0 {
		return fmt.Errorf("torch: runtime: BLASThreads %d: want 0 or more", rt.BLASThreads)
	}
	alloc, free := cstr(rt.CPUAllocator)
	defer free()
	var installed, blas C.int32_t
	return call("runtime", func(e **C.char) C.int32_t {
		return C.lt_runtime_init(alloc, C.int32_t(rt.BLASThreads), &installed, &blas, e)
	})
}

// CPUAllocStats reports the caching CPU allocator's counters; ok is false
// when the Runtime (Init) left libtorch's own allocator in place.
func CPUAllocStats() (s AllocStats, ok bool, err error) {
	var out [5]C.int64_t
	var installed C.int32_t
	if err := callLib("cpu allocator stats", func(e **C.char) C.int32_t { return C.lt_cpu_alloc_stats(&out[0], &installed, e) }); err != nil {
		return s, false, err
	}
	if installed == 0 {
		return s, false, nil
	}
	return AllocStats{Hits: int64(out[0]), Misses: int64(out[1]), LiveBytes: int64(out[2]),
		PeakBytes: int64(out[3]), CachedBytes: int64(out[4])}, true, nil
}

// CUDADevices is the number of CUDA devices libtorch sees (0 on CPU builds).
func CUDADevices() (int, error) {
	var n C.int32_t
	err := callLib("cuda device count", func(e **C.char) C.int32_t { return C.lt_cuda_device_count(&n, e) })
	return int(n), err
}

// SetCUDAFlags sets cuDNN's benchmark mode (autotuned convolution
// algorithms) and whether float32 matmuls and convolutions may use TF32
// (torch.backends.cudnn.benchmark, torch.backends.cuda.matmul.allow_tf32,
// torch.backends.cudnn.allow_tf32). No effect on the CPU.
func SetCUDAFlags(cudnnBenchmark, tf32 bool) error {
	return callLib("cuda flags", func(e **C.char) C.int32_t {
		return C.lt_set_cuda_flags(cbool(cudnnBenchmark), cbool(tf32), e)
	})
}

// Synchronize waits for the work queued on device.
func Synchronize(device string) error {
	dev, free := cstr(device)
	defer free()
	return callLib("synchronize", func(e **C.char) C.int32_t { return C.lt_synchronize(dev, e) })
}

// DeviceMemory returns the peak bytes allocated and reserved by the
// device's caching allocator (-1 when the build cannot tell: the CPU, or a
// libtorch older than the device-allocator API); reset starts new peaks.
func DeviceMemory(device string, reset bool) (allocated, reserved int64, err error) {
	dev, free := cstr(device)
	defer free()
	var a, r C.int64_t
	err = callLib("device memory", func(e **C.char) C.int32_t { return C.lt_device_memory(dev, cbool(reset), &a, &r, e) })
	return int64(a), int64(r), err
}

// HasDist reports whether the shim was built with its c10d part (data
// parallelism) and at least one backend; build-shim.sh leaves the part out
// when it does not compile.
func HasDist() bool { return len(DistBackends()) > 0 }

// DistBackends lists the data-parallel backends this build has: "gloo"
// where its libtorch came with Gloo's headers (Debian's libgloo-dev; pip
// wheels have none), "nccl" in CUDA builds compiled with NCCL's header.
func DistBackends() []string {
	if Check() != nil {
		return nil
	}
	b := C.lt_has_dist()
	var out []string
	if b&C.LT_DIST_GLOO != 0 {
		out = append(out, "gloo")
	}
	if b&C.LT_DIST_NCCL != 0 {
		out = append(out, "nccl")
	}
	return out
}
