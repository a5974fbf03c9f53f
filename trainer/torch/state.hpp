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
	std::vector<lts::Entry> bufs;   // momentum buffers, named <param>.momentum_buffer
	double momentum, wd;
	bool nesterov;
	void zero_grad() {
		for (auto &p : params) {
			auto &g = p.t.mutable_grad();
			if (g.defined()) g = Tensor();
		}
	}
	void step(double lr) {
		torch::NoGradGuard ng;
		return step_foreach(lr);
	}
	// step_foreach is the update with multi-tensor kernels (torch.optim.SGD's
	// foreach path, its default on CUDA): a few kernel launches on CUDA
	// instead of five per parameter; on the CPU libtorch runs the same
	// per-tensor operations as a plain loop would.
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
