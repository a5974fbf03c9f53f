// state.hpp: named state (parameters, buffers, momentum buffers) read and
// written through the C ABI, and the SGD optimizer that owns momentum state.
#pragma once

#include "common.hpp"
#include "optim.hpp"

#include <cmath>

namespace lts {

int32_t dtype_code(c10::ScalarType t) {
	switch (t) {
	case torch::kFloat32: return 0;
	case torch::kInt64: return 1;
	case torch::kFloat64: return 2;
	case torch::kFloat16: return 3;
	case torch::kInt32: return 4;
	case torch::kUInt8: return 5;
	case torch::kBFloat16: return 6;
	default: throw std::runtime_error(std::string("unsupported dtype ") + c10::toString(t));
	}
}


int32_t entry_info(std::vector<Entry> &es, int32_t i, const char **name, int32_t *dtype, int64_t *shape,
                   int32_t *ndim, int64_t *nbytes) {
	if (i < 0 || i >= (int32_t)es.size()) throw std::out_of_range("state index out of range");
	auto &e = es[i];
	*name = e.name.c_str();
	*dtype = dtype_code(e.t.scalar_type());
	if (e.t.dim() > 8) throw std::runtime_error("tensor has more than 8 dimensions");
	*ndim = (int32_t)e.t.dim();
	for (int64_t d = 0; d < e.t.dim(); d++) shape[d] = e.t.size(d);
	*nbytes = (int64_t)(e.t.numel() * e.t.element_size());
	return 0;
}

void entry_read(std::vector<Entry> &es, int32_t i, void *dst, int64_t nbytes) {
	if (i < 0 || i >= (int32_t)es.size()) throw std::out_of_range("state index out of range");
	auto t = es[i].t.detach().to(torch::kCPU).contiguous();
	if (nbytes != (int64_t)(t.numel() * t.element_size()))
		throw std::runtime_error("state read of " + es[i].name + ": size mismatch");
	std::memcpy(dst, t.data_ptr(), (size_t)nbytes);
}

void entry_write(std::vector<Entry> &es, int32_t i, const void *src, int64_t nbytes) {
	if (i < 0 || i >= (int32_t)es.size()) throw std::out_of_range("state index out of range");
	auto &t = es[i].t;
	if (nbytes != (int64_t)(t.numel() * t.element_size()))
		throw std::runtime_error("state write of " + es[i].name + ": " + std::to_string(nbytes) +
		                         " bytes for a tensor of " + std::to_string(t.numel() * t.element_size()));
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

__attribute__((target_clones("arch=x86-64-v3", "default"))) void
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
	// (<param>.square_avg) followed by its momentum buffers.
	std::vector<lts::Entry> bufs;
	double momentum, wd;
	bool nesterov;
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
