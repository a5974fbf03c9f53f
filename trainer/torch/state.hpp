// state.hpp: the state tables of shim.h (lt_state: a model's parameters
// and buffers, an optimizer's per-parameter buffers), read and written
// through the C ABI, and lt_optim, the optimizers (SGD, TensorFlow's
// RMSProp, Adam/AdamW of optim.hpp) that own their state.
#pragma once

#include "common.hpp"
#include "optim.hpp"

#include <cmath>

namespace lts {

inline int32_t dtype_code(c10::ScalarType t) {
	switch (t) {
	case torch::kFloat32: return LT_DTYPE_F32;
	case torch::kInt64: return LT_DTYPE_I64;
	case torch::kFloat64: return LT_DTYPE_F64;
	case torch::kFloat16: return LT_DTYPE_F16;
	case torch::kInt32: return LT_DTYPE_I32;
	case torch::kUInt8: return LT_DTYPE_U8;
	case torch::kBFloat16: return LT_DTYPE_BF16;
	default: throw std::runtime_error(std::string("unsupported dtype ") + c10::toString(t));
	}
}

// entry is tensor i of a state table, which must exist.
inline Entry &entry(lt_state *s, int32_t i) {
	if (i < 0 || i >= (int32_t)s->size()) throw std::out_of_range("state index out of range");
	return (*s)[i];
}

inline int64_t nbytes_of(const Tensor &t) { return (int64_t)(t.numel() * t.element_size()); }

inline void entry_info(const Entry &e, const char **name, int32_t *dtype, int64_t *shape, int32_t *ndim,
                       int64_t *nbytes) {
	*name = e.name.c_str();
	*dtype = dtype_code(e.t.scalar_type());
	if (e.t.dim() > 8) throw std::runtime_error("tensor has more than 8 dimensions");
	*ndim = (int32_t)e.t.dim();
	for (int64_t d = 0; d < e.t.dim(); d++) shape[d] = e.t.size(d);
	*nbytes = nbytes_of(e.t);
}

// entry_read copies e into dst (in NCHW order whatever its memory format).
inline void entry_read(const Entry &e, void *dst, int64_t nbytes) {
	auto t = e.t.detach().to(torch::kCPU).contiguous();
	if (nbytes != nbytes_of(t)) throw std::runtime_error("state read of " + e.name + ": size mismatch");
	std::memcpy(dst, t.data_ptr(), (size_t)nbytes);
}

inline void entry_write(Entry &e, const void *src, int64_t nbytes) {
	auto &t = e.t;
	if (nbytes != nbytes_of(t))
		throw std::runtime_error("state write of " + e.name + ": " + std::to_string(nbytes) +
		                         " bytes for a tensor of " + std::to_string(nbytes_of(t)));
	torch::NoGradGuard ng;
	auto s = torch::from_blob(const_cast<void *>(src), t.sizes(), t.options().device(torch::kCPU));
	t.copy_(s);
}

// fused_sgd_applies says whether fused_sgd can update p: float32 CPU
// tensors laid out alike (the case of every model lcl builds on the CPU).
inline bool fused_sgd_applies(const Tensor &p, const Tensor &g, const Tensor *buf) {
	auto ok = [&](const Tensor &t) {
		return t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous() &&
		       t.numel() == p.numel();
	};
	return ok(p) && ok(g) && (!buf || ok(*buf));
}

// sgd_span is torch.optim.SGD's update (dampening 0) of n elements in one
// pass over memory, instead of the four or five passes (and two temporary
// tensors) of the ATen ops. Rounding follows ATen's CPU kernels exactly:
// add with alpha is a fused multiply-add there, mul_ and add_ are rounded
// separately (this file is compiled without floating-point contraction, so
// the compiler fuses nothing else; vectorising an element-wise loop changes
// no result). The x86-64-v3 clone (AVX2 and FMA: every x86 CPU since 2013,
// Intel or AMD) makes std::fma one instruction and the loop 8 floats wide;
// the default clone calls libm's fmaf. -O3 for these lines only: GCC's -O2
// cost model does not vectorise them.
#pragma GCC push_options
#pragma GCC optimize("O3")
template <bool Buf, bool Nesterov>
inline void sgd_loop(float *__restrict p, const float *__restrict g, float *__restrict buf, int64_t n, float lr,
                     float m, float wd) {
	for (int64_t j = 0; j < n; j++) {
		float d = wd != 0 ? std::fma(wd, p[j], g[j]) : g[j];
		if (Buf) {
			float b = buf[j] * m;
			b = b + d;
			buf[j] = b;
			d = Nesterov ? std::fma(m, b, d) : b;
		}
		p[j] = std::fma(-lr, d, p[j]);
	}
}

// static, not inline: the clones' resolver is per translation unit (only
// shim.cpp includes this header).
static __attribute__((target_clones("arch=x86-64-v3", "default"))) void
sgd_span(float *p, const float *g, float *buf, int64_t n, float lr, float m, float wd, bool nesterov) {
	if (!buf) sgd_loop<false, false>(p, g, buf, n, lr, m, wd);
	else if (nesterov) sgd_loop<true, true>(p, g, buf, n, lr, m, wd);
	else sgd_loop<true, false>(p, g, buf, n, lr, m, wd);
}
#pragma GCC pop_options

inline void fused_sgd(Tensor &p, const Tensor &g, Tensor *buf, double lr, double momentum, double wd,
                      bool nesterov) {
	float *pp = p.data_ptr<float>();
	const float *gp = g.data_ptr<float>();
	float *bp = buf ? buf->data_ptr<float>() : nullptr;
	at::parallel_for(0, p.numel(), 1 << 15, [&](int64_t b, int64_t e) {
		sgd_span(pp + b, gp + b, bp ? bp + b : nullptr, e - b, (float)lr, (float)momentum, (float)wd, nesterov);
	});
}
} // namespace lts

struct lt_optim {
	std::vector<lts::Entry> params; // live parameters
	// State, as read and written through the C ABI: SGD's momentum buffers
	// (<param>.momentum_buffer), or RMSProp's mean squares
	// (<param>.square_avg) followed by its momentum buffers, or Adam's
	// moments and step counts (below).
	lt_state bufs;
	double momentum = 0, wd = 0;
	bool nesterov = false;
	bool rmsprop = false;
	double rho = 0.9, eps = 1.0;
	// Adam/AdamW (optim.hpp): bufs are every parameter's exp_avg, then
	// every exp_avg_sq, then every step count.
	bool adam = false;
	lts::AdamHyper adam_h;
	// clip > 0 scales the gradients to an L2 norm of at most clip before
	// each update (optim.hpp).
	double clip = 0;
	void zero_grad() {
		for (auto &p : params) {
			auto &g = p.t.mutable_grad();
			if (g.defined()) g = Tensor();
		}
	}
	void step(double lr) {
		torch::NoGradGuard ng;
		if (clip > 0) {
			std::vector<Tensor> grads;
			for (auto &p : params)
				if (p.t.grad().defined()) grads.push_back(p.t.grad());
			lts::clip_grad_norm(grads, clip);
		}
		if (adam) return step_adam(lr);
		if (!rmsprop && !params.empty() && params[0].t.is_cuda()) return step_foreach(lr);
		size_t n = params.size();
		for (size_t i = 0; i < n; i++) {
			auto &p = params[i].t;
			auto g = p.grad();
			if (!g.defined()) continue;
			if (rmsprop) {
				// TensorFlow's RMSProp (the Inception papers'): ms <- rho ms +
				// (1-rho) d^2; mom <- momentum mom + lr d / sqrt(ms + eps);
				// p <- p - mom.
				auto d = wd != 0 ? g.add(p, wd) : g;
				auto &ms = bufs[i].t;
				ms.mul_(rho).addcmul_(d, d, 1 - rho);
				auto u = d / (ms + eps).sqrt_();
				if (momentum != 0) {
					auto &mom = bufs[n + i].t;
					mom.mul_(momentum).add_(u, lr);
					p.sub_(mom);
				} else {
					p.add_(u, -lr);
				}
				continue;
			}
			Tensor *buf = momentum != 0 ? &bufs[i].t : nullptr;
			if (lts::fused_sgd_applies(p, g, buf)) {
				lts::fused_sgd(p, g, buf, lr, momentum, wd, nesterov);
				continue;
			}
			auto d = wd != 0 ? g.add(p, wd) : g;
			if (buf) {
				buf->mul_(momentum).add_(d);
				d = nesterov ? d.add(*buf, momentum) : *buf;
			}
			p.add_(d, -lr);
		}
	}
	void step_adam(double lr) {
		size_t n = params.size();
		for (size_t i = 0; i < n; i++) {
			auto &p = params[i].t;
			auto g = p.grad();
			if (!g.defined()) continue; // as torch.optim: no step counted either
			lts::adam_update(p, g, bufs[i].t, bufs[n + i].t, bufs[2 * n + i].t, lr, adam_h);
		}
	}
	// step_foreach is the update on CUDA with multi-tensor kernels
	// (torch.optim.SGD's foreach path, its default there): a few kernel
	// launches instead of five per parameter, the same arithmetic.
	void step_foreach(double lr) {
		std::vector<Tensor> ps, gs, bs;
		for (size_t i = 0; i < params.size(); i++) {
			auto g = params[i].t.grad();
			if (!g.defined()) continue;
			ps.push_back(params[i].t);
			gs.push_back(g);
			if (momentum != 0) bs.push_back(bufs[i].t);
		}
		if (ps.empty()) return;
		std::vector<Tensor> d = wd != 0 ? at::_foreach_add(gs, ps, wd) : gs;
		if (momentum != 0) {
			at::_foreach_mul_(bs, momentum);
			at::_foreach_add_(bs, d);
			d = nesterov ? at::_foreach_add(d, bs, momentum) : bs;
		}
		at::_foreach_add_(ps, d, -lr);
	}
};
