// allocator.hpp: the caching CPU allocator the shim installs in libtorch.
//
// A training step allocates the same large buffers (activations, gradients,
// workspaces) in the same sizes every step and frees them at its end. With
// glibc's malloc those frees hand the pages back to the kernel (buffers above
// the mmap threshold are munmap'd; a per-thread heap that becomes empty is
// unmapped whole), and the next step takes a page fault on every 4 KiB page
// it touches again: measured on the small CNN, 1.4–2.4 M minor faults and
// 40–60 % of the process's CPU time in the kernel (docs/trainer.md,
// "Memory allocation"). Setting GLIBC_TUNABLES helps only by chance (the mmap
// threshold cannot exceed 32 MiB, and empty per-thread heaps are unmapped
// regardless), jemalloc and tcmalloc need LD_PRELOAD. So the shim keeps freed
// large blocks in per-size-class free lists and hands them out again, the
// way PyTorch's CUDA caching allocator does for GPU memory.
//
// Blocks below kMinCached bytes go straight to malloc (glibc's bins serve
// them without system calls). Sizes are rounded up to a class (at most 1/8
// larger) so that a slightly different batch reuses blocks. The free lists
// hold at most twice as many bytes as were live at the peak (a step that
// frees a block of one size class and then needs one of another has both in
// the cache; with only the peak, some blocks were released and re-allocated
// every step). A block freed beyond that budget first releases the free
// blocks of the size classes used longest ago, and is released itself only
// when no other class has any: a run alternates phases whose buffers differ
// in size (training steps, the epoch's last, smaller batch, evaluation),
// and when the budget filled with an earlier phase's blocks, releasing the
// block just freed made the current phase map and fault in its buffers
// again on every batch. That happened at random (the peak, hence the
// budget, depends on how many batches the loader has staged): one in three
// demo runs side by side evaluated 5x slower, with 7x the page faults.
//
// Mode "system" leaves libtorch's own allocator in place (for comparisons;
// LCL_CPU_ALLOCATOR=system through torch.DefaultRuntime). Thread-safe:
// libtorch allocates from OpenMP worker threads.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

namespace lts {

class CachingCPUAllocator final : public c10::Allocator {
public:
	static constexpr size_t kAlign = 64;             // c10's CPU alignment (AVX-512)
	static constexpr size_t kMinCached = 64 * 1024;  // smaller blocks: plain malloc

	struct Stats {
		int64_t hits = 0, misses = 0;       // cached-size allocations served from / not from a free list
		int64_t live_bytes = 0, peak_bytes = 0, cached_bytes = 0;
	};

	// allocate has two spellings because libtorch changed the signature:
	// const up to 2.2, non-const from 2.3 on. Neither says override, so each
	// overrides the pure virtual of the version it is compiled against.
	c10::DataPtr allocate(size_t n) const { return const_cast<CachingCPUAllocator *>(this)->alloc(n); }
	c10::DataPtr allocate(size_t n) { return alloc(n); }
	// oneDNN (ideep) allocates through raw_allocate/raw_deallocate, which need
	// the data pointer to be the context (it is) and this deleter.
	c10::DeleterFnPtr raw_deleter() const override { return &CachingCPUAllocator::release; }
	// copy_data is pure virtual from libtorch 2.3 on (unused before).
	void copy_data(void *dest, const void *src, std::size_t count) const { std::memcpy(dest, src, count); }

	Stats stats() {
		std::lock_guard<std::mutex> g(mu_);
		return stats_;
	}

	static CachingCPUAllocator *instance() {
		static auto *a = new CachingCPUAllocator(); // never destroyed: tensors may outlive static destruction
		return a;
	}

private:
	static size_t size_class(size_t n) {
		// Round up to a multiple of 2^(floor(log2 n) - 3): at most 12.5 % waste.
		int shift = 63 - __builtin_clzll((unsigned long long)n) - 3;
		size_t q = size_t(1) << shift;
		return (n + q - 1) & ~(q - 1);
	}

	static void *raw_alloc(size_t n) {
		void *p = nullptr;
		if (posix_memalign(&p, kAlign, n == 0 ? kAlign : n) != 0) throw std::bad_alloc();
		return p;
	}

	c10::DataPtr alloc(size_t n) {
		if (n < kMinCached) {
			void *p = raw_alloc(n);
			return {p, p, &CachingCPUAllocator::release, c10::Device(c10::DeviceType::CPU)};
		}
		size_t c = size_class(n);
		void *p = nullptr;
		{
			std::lock_guard<std::mutex> g(mu_);
			use_[c] = ++tick_;
			auto &list = free_[c];
			if (!list.empty()) {
				p = list.back();
				list.pop_back();
				stats_.cached_bytes -= (int64_t)c;
				stats_.hits++;
			} else {
				stats_.misses++;
			}
			stats_.live_bytes += (int64_t)c;
			if (stats_.live_bytes > stats_.peak_bytes) stats_.peak_bytes = stats_.live_bytes;
		}
		if (!p) {
			try {
				p = raw_alloc(c);
			} catch (...) {
				std::lock_guard<std::mutex> g(mu_);
				stats_.live_bytes -= (int64_t)c;
				throw;
			}
			std::lock_guard<std::mutex> g(mu_);
			size_of_[p] = c;
		}
		return {p, p, &CachingCPUAllocator::release, c10::Device(c10::DeviceType::CPU)};
	}

	static void release(void *p) { instance()->give_back(p); }

	void give_back(void *p) {
		std::vector<void *> drop;
		{
			std::lock_guard<std::mutex> g(mu_);
			auto it = size_of_.find(p);
			if (it == size_of_.end()) { // a small block (below kMinCached)
				drop.push_back(p);
			} else {
				size_t c = it->second;
				stats_.live_bytes -= (int64_t)c;
				use_[c] = ++tick_;
				while (stats_.cached_bytes + (int64_t)c > 2 * stats_.peak_bytes && evict_stalest(c, drop)) {
				}
				if (stats_.cached_bytes + (int64_t)c <= 2 * stats_.peak_bytes) {
					free_[c].push_back(p);
					stats_.cached_bytes += (int64_t)c;
				} else {
					size_of_.erase(it);
					drop.push_back(p);
				}
			}
		}
		for (void *q : drop) std::free(q);
	}

	// evict_stalest moves one free block of the size class used longest ago,
	// other than keep, to drop (freed by the caller outside the lock); false
	// when no other class has a free block. Called with mu_ held.
	bool evict_stalest(size_t keep, std::vector<void *> &drop) {
		auto stalest = free_.end();
		for (auto it = free_.begin(); it != free_.end(); ++it)
			if (it->first != keep && !it->second.empty() &&
			    (stalest == free_.end() || use_[it->first] < use_[stalest->first]))
				stalest = it;
		if (stalest == free_.end()) return false;
		void *q = stalest->second.back();
		stalest->second.pop_back();
		stats_.cached_bytes -= (int64_t)stalest->first;
		size_of_.erase(q);
		drop.push_back(q);
		return true;
	}

	std::mutex mu_;
	std::unordered_map<size_t, std::vector<void *>> free_; // size class → free blocks
	std::unordered_map<void *, size_t> size_of_;            // every cached-size block → its class
	std::unordered_map<size_t, uint64_t> use_;              // size class → tick of its last use
	uint64_t tick_ = 0;
	Stats stats_;
};

// install_cpu_allocator sets up CPU memory allocation for the process
// (lt_runtime_init, from torch.Init), by mode:
//   caching (default)  malloc tuned as below, and CachingCPUAllocator as
//                      libtorch's CPU allocator;
//   malloc             only malloc tuned: glibc keeps freed memory instead of
//                      returning it to the kernel (trim threshold 2 GiB) and
//                      serves blocks up to 32 MiB (the most glibc allows)
//                      from its heaps rather than from fresh mmaps; this
//                      covers what libtorch allocates outside its allocator
//                      (oneDNN's scratchpads, small blocks), all threads
//                      share one arena (see below);
//   system             neither (libtorch and glibc defaults, for comparisons).
// It returns whether the caching allocator is in place; an unknown mode is
// an error.
inline bool install_cpu_allocator(const std::string &mode) {
	if (mode != "caching" && mode != "malloc" && mode != "system")
		throw std::invalid_argument("unknown CPU allocator " + mode + " (want caching, malloc or system)");
	if (mode == "system") return false;
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 0x7fffffff);
	// One arena: glibc unmaps a per-thread heap whenever it empties, trim
	// threshold or not, and oneDNN's kernels run on OpenMP's worker threads:
	// their scratch memory was unmapped and faulted in again every step
	// (measured: 470 k page faults and 15 % system time in 3 epochs of the
	// small CNN, 115 k and 5 % with one arena).
	mallopt(M_ARENA_MAX, 1);
#endif
	if (mode == "malloc") return false;
	// Priority 1 outranks libtorch's default CPU allocator (priority 0).
	c10::SetCPUAllocator(CachingCPUAllocator::instance(), /*priority=*/1);
	return true;
}

} // namespace lts
