// engine.hpp: the engine of shim.h (staged input, mixed precision, metrics
// that stay on the device), through which every training step and
// evaluation runs; its C ABI (lt_engine_*) and the device functions are
// shim.cpp's. Streams
// and events go through c10's device-generic interfaces (VirtualGuardImpl,
// c10::Event), so this compiles without CUDA headers against Debian's CPU
// libtorch 1.13 and against PyTorch 2.x, and works with whichever CUDA
// runtime the libtorch it links was built with.
#pragma once

#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/cuda.h>

#include <deque>

#ifdef LT_DEVICE_ALLOCATOR
// PyTorch ≥ 2.9: caching-allocator statistics through c10::DeviceAllocator
// (build-shim.sh defines LT_DEVICE_ALLOCATOR when a probe compiles).
#include <c10/core/CachingDeviceAllocator.h>
#endif

#include "amp.hpp"
#include "common.hpp"
#include "step.hpp"

struct lt_engine {
	torch::Device dev{torch::kCPU};
	lts::StepOpts opts;
	int norm_c = 0;
	Tensor scale, bias; // uint8 → normalised float: x*scale[c] + bias[c], shaped 1×C×1×1 on dev

	struct Staged {
		Tensor x, y, w;
		bool u8 = false;
		std::unique_ptr<c10::Event> ready; // recorded on the copy stream (CUDA)
	};
	std::deque<Staged> queue;
	std::unique_ptr<c10::impl::VirtualGuardImpl> impl; // CUDA only
	std::unique_ptr<c10::Stream> copy;                 // side stream of the host-to-device copies

	// Sums since the last lt_engine_metrics, per peer.
	std::vector<Tensor> loss_dev, correct_dev;
	std::vector<double> loss_host;
	std::vector<int64_t> correct_host;
	int64_t n = 0;
	// Class probabilities since the last lt_engine_class_probs (C×C float64
	// sums, C int64 counts), when steps asked for them.
	Tensor cp_sum, cp_count;

	bool cuda() const { return dev.is_cuda(); }

	// take pops the oldest staged batch and makes the current stream wait
	// for its copy; its memory is recorded on the current stream so the
	// caching allocator does not hand it to the copy stream before the
	// work queued here has used it.
	Staged take() {
		if (queue.empty()) throw std::logic_error("no staged batch: call lt_engine_put first");
		Staged s = std::move(queue.front());
		queue.pop_front();
		if (cuda()) {
			auto cur = impl->getStream(dev);
			s.ready->block(cur);
			for (auto *t : {&s.x, &s.y, &s.w})
				if (t->defined()) impl->recordDataPtrOnStream(t->storage().data_ptr(), cur);
		}
		return s;
	}

	// input is the normalised float32 batch of a staged one.
	Tensor input(const Staged &s) const {
		if (!s.u8) return s.x;
		return s.x.to(torch::kFloat32).mul_(scale).add_(bias);
	}
};

namespace lts {

// stage_copy copies n bytes at src to a new tensor of the given shape and
// type on the engine's device: through pinned memory and the copy stream on
// CUDA (not waiting), plainly on the CPU.
inline Tensor stage_copy(lt_engine *e, const void *src, at::IntArrayRef shape, torch::ScalarType dt) {
	auto host = torch::TensorOptions().dtype(dt);
	if (!e->cuda()) {
		auto t = torch::empty(shape, host);
		std::memcpy(t.data_ptr(), src, t.nbytes());
		return t;
	}
	// The pinned block returns to PyTorch's host cache when t is freed,
	// and is reused only after the copy that reads it has finished.
	auto t = torch::empty(shape, host.pinned_memory(true));
	std::memcpy(t.data_ptr(), src, t.nbytes());
	// Allocated under the copy stream's guard: the block belongs to it.
	auto d = torch::empty(shape, host.device(e->dev));
	d.copy_(t, /*non_blocking=*/true);
	return d;
}

} // namespace lts
