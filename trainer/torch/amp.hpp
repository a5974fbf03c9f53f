// amp.hpp: mixed precision (autocast) and the device settings of the GPU
// path, written once for Debian's libtorch 1.13 and PyTorch 2.x (the
// switches between them are in compat.hpp).
#pragma once

#include <ATen/autocast_mode.h>

#include "common.hpp"
#include "compat.hpp"

namespace lts {

inline at::ScalarType precision_dtype(int precision) {
	switch (precision) {
	case LT_BF16: return at::kBFloat16;
	case LT_FP16: return at::kHalf;
	default: throw std::invalid_argument("unknown precision " + std::to_string(precision));
	}
}

// check_precision refuses what autocast cannot do on a device: float16
// autocast on the CPU (libtorch 1.13 has no CPU float16 kernels for
// convolutions; use bf16 there).
inline void check_precision(torch::Device dev, int precision) {
	if (precision == LT_FP32) return;
	precision_dtype(precision);
	if (!dev.is_cpu() && !dev.is_cuda())
		throw std::invalid_argument("mixed precision needs a cpu or cuda device, not " + dev.str());
	if (precision == LT_FP16 && dev.is_cpu())
		throw std::invalid_argument("fp16 needs a CUDA device; use bf16 on the CPU");
}

// Autocast turns autocast on for the device's type in its scope (nothing
// for LT_FP32), like Python's `with torch.autocast(device, dtype)`: the
// previous state is restored and the cast cache cleared at the end.
class Autocast {
	bool on_ = false, prev_ = false;
	c10::DeviceType type_ = c10::DeviceType::CPU;
	at::ScalarType prev_dtype_ = at::kFloat;

	static bool enabled(c10::DeviceType t) {
#if LT_AUTOCAST_GENERIC
		return at::autocast::is_autocast_enabled(t);
#else
		return t == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
	}
	static at::ScalarType dtype(c10::DeviceType t) {
#if LT_AUTOCAST_GENERIC
		return at::autocast::get_autocast_dtype(t);
#else
		return t == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
	}
	static void set(c10::DeviceType t, bool on, at::ScalarType d) {
#if LT_AUTOCAST_GENERIC
		at::autocast::set_autocast_dtype(t, d);
		at::autocast::set_autocast_enabled(t, on);
#else
		if (t == c10::DeviceType::CUDA) {
			at::autocast::set_autocast_gpu_dtype(d);
			at::autocast::set_enabled(on);
		} else {
			at::autocast::set_autocast_cpu_dtype(d);
			at::autocast::set_cpu_enabled(on);
		}
#endif
	}

public:
	Autocast(torch::Device dev, int precision) {
		if (precision == LT_FP32) return;
		check_precision(dev, precision);
		type_ = dev.type();
		prev_ = enabled(type_);
		prev_dtype_ = dtype(type_);
		set(type_, true, precision_dtype(precision));
		at::autocast::increment_nesting();
		on_ = true;
	}
	~Autocast() {
		if (!on_) return;
		if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
		set(type_, prev_, prev_dtype_);
	}
	Autocast(const Autocast &) = delete;
	Autocast &operator=(const Autocast &) = delete;
};

// channels_last returns t in the channels-last memory format. A tensor
// whose layout is ambiguous (one channel, or 1x1 spatial size) counts as
// contiguous in either format, so contiguous(ChannelsLast) returns it with
// its NCHW strides, and oneDNN then picks the NCHW kernels for everything
// downstream of it (the small CNN's first convolution on one-channel
// images: its pooling ran 2-4x slower). Like Tensor.to(memory_format=),
// this restrides unless the tensor already suggests channels-last.
inline torch::Tensor channels_last(const torch::Tensor &t) {
	if (t.dim() != 4 || t.suggest_memory_format() == torch::MemoryFormat::ChannelsLast) return t;
	return t.to(t.options(), /*non_blocking=*/false, /*copy=*/false, torch::MemoryFormat::ChannelsLast);
}

// to_channels_last converts a model's 4-d parameters and buffers to the
// channels-last memory format in place (what nn.Module.to(memory_format=
// torch.channels_last) does); its state still reads and writes in NCHW
// order, since entry_read/entry_write go through contiguous()/copy_.
inline void to_channels_last(lt_model *m) {
	torch::NoGradGuard ng;
	for (auto &p : m->net->parameters(true))
		if (p.dim() == 4) p.set_data(channels_last(p.data()));
	for (auto &b : m->net->buffers(true))
		if (b.dim() == 4) b.set_data(channels_last(b.data()));
	m->channels_last = true;
	m->index_state();
}

} // namespace lts
