// optim.hpp: Adam and AdamW, gradient clipping by norm, and the exponential
// moving average of a model's weights. Each follows the Python code of the
// PyTorch whose libtorch it is built against (torch.optim.Adam/AdamW's
// single-tensor path, the default on the CPU; torch.nn.utils.
// clip_grad_norm_; timm's ModelEmaV2) op for op, with the same ATen calls
// and the same double-precision scalars, so the results are bit-identical
// to that PyTorch's (trainer's TestOptimizersMatchPyTorch, against 1.13 and,
// with make test-torch2, 2.6). Where 1.13 and 2.x differ, LT_OPTIM_2X
// (compat.hpp) picks the version's.
#pragma once

#include "common.hpp"
#include "compat.hpp"

#include <cmath>

namespace lts {

// AdamHyper are the settings of Adam (decoupled = false: L2 weight decay
// added to the gradient) or AdamW (decoupled = true: the weights shrink by
// lr·weight_decay before the update).
struct AdamHyper {
	double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0;
	bool decoupled = false;
};

// adam_update is one Adam/AdamW step of parameter p with gradient g:
// torch/optim/adam.py's and adamw.py's _single_tensor_adam(w) with
// amsgrad, maximize and capturable off. step is the parameter's step count
// (a float32 scalar on the CPU, as torch keeps it), exp_avg and exp_avg_sq
// its moments.
inline void adam_update(Tensor &p, Tensor g, Tensor &exp_avg, Tensor &exp_avg_sq, Tensor &step, double lr,
                        const AdamHyper &h) {
	step.add_(1);
	if (h.decoupled) p.mul_(1 - lr * h.wd);
	else if (h.wd != 0) g = g.add(p, h.wd);
#if LT_OPTIM_2X
	exp_avg.lerp_(g, 1 - h.beta1);
#else
	exp_avg.mul_(h.beta1).add_(g, 1 - h.beta1);
#endif
	exp_avg_sq.mul_(h.beta2).addcmul_(g, g, 1 - h.beta2);
	double t = step.item<float>(); // Python: step_t.item()
	double bias_correction1 = 1 - std::pow(h.beta1, t);
	double bias_correction2 = 1 - std::pow(h.beta2, t);
	double step_size = lr / bias_correction1;
#if LT_OPTIM_2X
	double bias_correction2_sqrt = std::pow(bias_correction2, 0.5); // Python: bias_correction2**0.5
#else
	double bias_correction2_sqrt = std::sqrt(bias_correction2); // Python: math.sqrt(bias_correction2)
#endif
	auto denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(h.eps);
	p.addcdiv_(exp_avg, denom, -step_size);
}

// clip_grad_norm scales the gradients grads (together, as one vector) down
// to an L2 norm of at most max_norm: torch.nn.utils.clip_grad_norm_ with
// norm_type 2 (the norm of the gradients' norms; the coefficient
// max_norm/(norm + 1e-6), clamped at 1, applied to every gradient, also
// when it is 1, so the device is never waited for). Returns the norm.
inline Tensor clip_grad_norm(const std::vector<Tensor> &grads, double max_norm) {
	if (grads.empty()) return Tensor();
	std::vector<Tensor> norms;
	norms.reserve(grads.size());
#if LT_OPTIM_2X
	// 2.x: torch._foreach_norm(grads, 2.0) (on the CPU: linalg_vector_norm
	// of each), then linalg.vector_norm of their stack.
	auto norm = [](const Tensor &t) { return at::linalg_vector_norm(t, 2.0); };
#else
	// 1.13: torch.norm(g, 2.0), which is aten::norm over every dimension.
	auto norm = [](const Tensor &t) {
		std::vector<int64_t> d(t.dim());
		for (int64_t i = 0; i < t.dim(); i++) d[i] = i;
		return at::norm(t, at::Scalar(2.0), d, false);
	};
#endif
	for (auto &g : grads) norms.push_back(norm(g.detach()));
	auto total = norm(at::stack(norms));
	auto coef = (total + 1e-6).reciprocal() * max_norm; // Python: max_norm / (total + 1e-6)
	auto clamped = coef.clamp_max(1.0);                 // torch.clamp(coef, max=1.0): the same min(x, 1)
	for (auto &g : grads) g.detach().mul_(clamped);
	return total;
}

// ema_update moves the state of ema (parameters and buffers) towards
// src's: e <- decay*e + (1-decay)*m, computed as timm's ModelEmaV2.update
// does (a new tensor, copied into e: integer buffers such as batch norm's
// num_batches_tracked are truncated back to integers as there).
inline void ema_update(std::vector<Entry> &ema, const std::vector<Entry> &src, double decay) {
	if (ema.size() != src.size()) throw std::invalid_argument("EMA of a model with another state");
	torch::NoGradGuard ng;
	for (size_t i = 0; i < ema.size(); i++) {
		auto &e = ema[i].t;
		const auto &m = src[i].t;
		if (ema[i].name != src[i].name || !e.sizes().equals(m.sizes()))
			throw std::invalid_argument("EMA of a model with another state: " + ema[i].name + " vs " + src[i].name);
		e.copy_(e.mul(decay) + m.mul(1.0 - decay));
	}
}

} // namespace lts
