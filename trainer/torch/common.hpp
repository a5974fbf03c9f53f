// common.hpp: what every part of the shim shares: the error convention of
// shim.h (LT_TRY/LT_CATCH), the Net interface every architecture implements,
// and the handles behind the C ABI's opaque types. Included only by shim.cpp
// (see there why the shim is one translation unit).
#pragma once

#include <torch/torch.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "shim.h"

namespace nn = torch::nn;
using torch::Tensor;

// lts: the shim's internals (a named namespace: these headers share one translation unit).
namespace lts {

void set_err(char **err, const char *msg) {
	if (err) *err = strdup(msg ? msg : "unknown error");
}

#define LT_TRY try {
#define LT_CATCH(err, ret)                                         \
	}                                                              \
	catch (const c10::Error &e) {                                  \
		set_err(err, e.what_without_backtrace());                  \
		return ret;                                                \
	}                                                              \
	catch (const std::exception &e) {                              \
		set_err(err, e.what());                                    \
		return ret;                                                \
	}                                                              \
	catch (...) {                                                  \
		set_err(err, "unknown C++ exception");                     \
		return ret;                                                \
	}

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
};


// Entry is one named tensor of a model's or an optimizer's state.
struct Entry {
	std::string name;
	Tensor t;
};

Tensor blob(const float *p, at::IntArrayRef shape) {
	return torch::from_blob(const_cast<float *>(p), shape, torch::kFloat32);
}

// eval_figures counts the top-1 and top-5 hits of logits z (float32) for
// labels y and sums their cross-entropy, with one read from the device.
void eval_figures(const Tensor &z, const Tensor &y, int64_t *top1, int64_t *top5, double *loss_sum) {
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
void copy_out(const Tensor &t, float *dst) {
	if (!dst) return;
	auto c = t.to(torch::kCPU).contiguous();
	std::memcpy(dst, c.data_ptr<float>(), sizeof(float) * c.numel());
}

} // namespace lts

struct lt_tensor {
	Tensor t;
};

struct lt_model {
	std::shared_ptr<lts::Net> net;
	torch::Device device{torch::kCPU};
	int64_t num_classes = 0;
	std::vector<lts::Entry> state;
	bool channels_last = false; // parameters in channels-last format (amp.hpp)
};

