// state.hpp: the state tables of shim.h (lt_state: a model's parameters
// and buffers, an optimizer's per-parameter buffers), read and written
// through the C ABI. The optimizers that own such tables are optim.hpp's.
#pragma once

#include "common.hpp"

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

} // namespace lts
