// state.hpp: named state (parameters, buffers, momentum buffers) read and
// written through the C ABI, and the SGD optimizer that owns momentum state.
#pragma once

#include "common.hpp"

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
	void zero_grad() {
		for (auto &p : params) {
			auto &g = p.t.mutable_grad();
			if (g.defined()) g = Tensor();
		}
	}
	void step(double lr) {
		torch::NoGradGuard ng;
		size_t n = params.size();
		for (size_t i = 0; i < n; i++) {
			auto &p = params[i].t;
			auto g = p.grad();
			if (!g.defined()) continue;
			auto d = wd != 0 ? g.add(p, wd) : g;
			if (rmsprop) {
				// TensorFlow's RMSProp (the Inception papers'): ms <- rho ms +
				// (1-rho) g^2; mom <- momentum mom + lr g / sqrt(ms + eps);
				// p <- p - mom.
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
			if (momentum != 0) {
				auto &buf = bufs[i].t;
				buf.mul_(momentum).add_(d);
				d = nesterov ? d.add(buf, momentum) : buf;
			}
			p.add_(d, -lr);
		}
	}
};
