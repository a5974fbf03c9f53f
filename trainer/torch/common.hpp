// common.hpp: what every part of the shim shares: the error convention of
// shim.h (errors.hpp), the Net interface every architecture implements, and
// the handles behind the C ABI's opaque types. Included by shim.cpp (see
// there why the shim is one translation unit) and, through loss.hpp, by the
// tests' build of the loss (internal/shimloss): so every function defined
// in these headers is inline, and two packages linked into one test binary
// define no symbol twice.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "shim.h"

namespace nn = torch::nn;
using torch::Tensor;

// lts: the shim's internals (a named namespace: these headers share one translation unit).
namespace lts {

// Net is the interface every network implements: features() is the
// penultimate representation (after global pooling), head() the classifier,
// logits_features() both in one pass (features only when f is not null).
struct Net : nn::Module {
	virtual Tensor features(const Tensor &x) = 0;
	virtual Tensor head(const Tensor &f) = 0;
	virtual Tensor forward(const Tensor &x) { return head(features(x)); }
	virtual Tensor logits_features(const Tensor &x, Tensor *f) {
		auto ff = features(x);
		if (f) *f = ff;
		return head(ff);
	}
	int64_t feature_dim = 0;
	// single_linear_head is the head's linear layer when the head is that
	// layer alone (the layer a fixed classifier replaces); empty otherwise.
	virtual nn::Linear single_linear_head() { return nn::Linear{nullptr}; }
	// last_linear_head is the head's linear layer on the features when the
	// head is that layer, maybe after parameter-free ones (dropout): the
	// fine classes' weight rows HAF's geometric term aligns the coarsest
	// level below with. Empty otherwise.
	virtual nn::Linear last_linear_head() { return single_linear_head(); }
};

// LevelHead is one of HAF's level heads (lt_model_add_levels): its linear
// layer on the features, the 0/1 matrix summing the finer level's groups
// into this level's (G_{l−1}×G_l, float32; the classes for the first
// level) and each class's group at this level (C, int64).
struct LevelHead {
	nn::Linear head{nullptr};
	Tensor up, group;
};


// wanted_threads is the intra-op thread count lt_set_threads last asked for
// (0: never asked). libtorch's set_num_threads sets OpenMP's count for the
// calling OS thread only; another thread takes the global count once, at its
// first parallel region, and keeps it. Go runs each cgo call on whichever OS
// thread its goroutine sits on, so a call after SetThreads(1) could run on a
// thread that still used 2: a different reduction order, different bits in
// "identical" seeded runs (the random failure of
// TestDeterministicSingleThread under load). sync_threads, at the top of
// every entry of the shim that computes, brings the calling thread to the
// wanted count: one thread-local compare when nothing changed.
inline std::atomic<int32_t> &wanted_threads() {
	static std::atomic<int32_t> n{0};
	return n;
}
inline int32_t &applied_threads() {
	thread_local int32_t n = 0;
	return n;
}
inline void sync_threads() {
	auto want = wanted_threads().load(std::memory_order_acquire);
	if (want > 0 && applied_threads() != want) {
		torch::set_num_threads(want);
		applied_threads() = want;
	}
}

// Entry is one named tensor of a model's or an optimizer's state.
struct Entry {
	std::string name;
	Tensor t;
};

inline Tensor blob(const float *p, at::IntArrayRef shape) {
	return torch::from_blob(const_cast<float *>(p), shape, torch::kFloat32);
}

// eval_figures counts the top-1 and top-5 hits of logits z (float32) for
// labels y and sums their cross-entropy, with one read from the device.
inline void eval_figures(const Tensor &z, const Tensor &y, int64_t *top1, int64_t *top5, double *loss_sum) {
	auto kk = std::min<int64_t>(5, z.size(1));
	auto top = std::get<1>(z.topk(kk, 1));
	auto hit = top.eq(y.unsqueeze(1));
	auto fig = torch::stack({hit.narrow(1, 0, 1).sum().to(torch::kFloat64), hit.sum().to(torch::kFloat64),
	                         torch::nn::functional::cross_entropy(
	                             z, y, nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
	                             .to(torch::kFloat64)})
	               .to(torch::kCPU);
	auto a = fig.accessor<double, 1>();
	*top1 = (int64_t)a[0];
	*top5 = (int64_t)a[1];
	*loss_sum = a[2];
}

// copy_out copies t (any device, any layout) into the caller's float32
// buffer, which holds t.numel() values; nothing when dst is null.
inline void copy_out(const Tensor &t, float *dst) {
	if (!dst) return;
	auto c = t.to(torch::kCPU).contiguous();
	std::memcpy(dst, c.data_ptr<float>(), sizeof(float) * c.numel());
}

// copy_out_i32 copies integer tensor t (class indices, any device) into
// the caller's int32 buffer of t.numel() values.
inline void copy_out_i32(const Tensor &t, int32_t *dst) {
	auto c = t.to(torch::kCPU, torch::kInt32).contiguous();
	std::memcpy(dst, c.data_ptr<int32_t>(), sizeof(int32_t) * c.numel());
}

} // namespace lts

struct lt_tensor {
	Tensor t;
};

// lt_state is a state table of shim.h: the named tensors of a model or of
// an optimizer, read and written in place (state.hpp).
struct lt_state : std::vector<lts::Entry> {};

struct lt_model {
	std::shared_ptr<lts::Net> net;
	torch::Device device{torch::kCPU};
	int64_t num_classes = 0;
	lt_state state;             // parameters, then buffers (index_state)
	bool channels_last = false; // parameters in channels-last format (amp.hpp)
	Tensor fixed_head;          // the head's weight when lt_model_fix_head fixed it (C×d), else undefined
	std::vector<lts::LevelHead> levels; // HAF's level heads, finest first (lt_model_add_levels)

	// index_state lists the network's parameters, then its buffers, in
	// state: the table holds the tensors by handle, so it is listed again
	// whenever they are replaced (channels-last conversion).
	void index_state() {
		state.clear();
		for (auto &p : net->named_parameters(true)) state.push_back({p.key(), p.value()});
		for (auto &b : net->named_buffers(true)) state.push_back({b.key(), b.value()});
	}
};
