// optim.hpp: the optimizers of shim.h (lt_optim) and their update rules,
// one lt_optim kind each (Kind, rules()): SGD, TensorFlow's RMSProp, Adam,
// AdamW, RAdam and NAdam; gradient clipping by norm; the exponential moving
// average of a model's weights. The torch.optim rules follow the Python
// code of the PyTorch whose libtorch this is built against (torch/optim/
// *.py's single-tensor path, the default on the CPU; torch.nn.utils.
// clip_grad_norm_; timm's ModelEmaV2) op for op, with the same ATen calls
// and the same double-precision scalars, so the results are bit-identical
// to that PyTorch's (trainer's TestOptimizersMatchPyTorch, against 1.13
// and, with make test-torch2, 2.6). Where 1.13 and 2.x differ, LT_OPTIM_2X
// (compat.hpp) picks the version's.
//
// A new rule is a function here, a Kind and a row of rules(), and the
// trainer's row of the same number (trainer/optimizers.go).
#pragma once

#include "common.hpp"
#include "compat.hpp"

#include <cmath>

namespace lts {

// update_first_moment is the Adam family's exp_avg <- beta1 exp_avg +
// (1-beta1) g as the PyTorch version writes it.
inline void update_first_moment(Tensor &exp_avg, const Tensor &g, double beta1) {
#if LT_OPTIM_2X
	exp_avg.lerp_(g, 1 - beta1);
#else
	exp_avg.mul_(beta1).add_(g, 1 - beta1);
#endif
}

// py_sqrt is the square root of a Python float as torch.optim takes it:
// math.sqrt(x) in 1.13, x**0.5 (libm's pow) in 2.x.
inline double py_sqrt(double x) {
#if LT_OPTIM_2X
	return std::pow(x, 0.5);
#else
	return std::sqrt(x);
#endif
}

// AdamHyper are the settings of the Adam family: beta1, beta2, eps and
// weight decay (decoupled = false: L2 weight decay added to the gradient;
// true: AdamW's, the weights shrink by lr·weight_decay before the update).
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
	update_first_moment(exp_avg, g, h.beta1);
	exp_avg_sq.mul_(h.beta2).addcmul_(g, g, 1 - h.beta2);
	double t = step.item<float>(); // Python: step_t.item()
	double bias_correction1 = 1 - std::pow(h.beta1, t);
	double bias_correction2 = 1 - std::pow(h.beta2, t);
	double step_size = lr / bias_correction1;
	double bias_correction2_sqrt = py_sqrt(bias_correction2);
	auto denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(h.eps);
	p.addcdiv_(exp_avg, denom, -step_size);
}

// radam_update is one RAdam step (Liu et al. 2020): torch/optim/radam.py's
// _single_tensor_radam (weight decay added to the gradient: 2.x's
// decoupled_weight_decay=False, the only kind 1.13 has). State as Adam's.
inline void radam_update(Tensor &p, Tensor g, Tensor &exp_avg, Tensor &exp_avg_sq, Tensor &step, double lr,
                         const AdamHyper &h) {
	step.add_(1);
	double t = step.item<float>();
	if (h.wd != 0) g = g.add(p, h.wd);
	update_first_moment(exp_avg, g, h.beta1);
	exp_avg_sq.mul_(h.beta2).addcmul_(g, g, 1 - h.beta2);
	double bias_correction1 = 1 - std::pow(h.beta1, t);
	double bias_correction2 = 1 - std::pow(h.beta2, t);
	auto bias_corrected_exp_avg = exp_avg / bias_correction1;
	// The length of the approximated simple moving average, and its limit.
	double rho_inf = 2 / (1 - h.beta2) - 1;
	double rho_t = rho_inf - 2 * t * std::pow(h.beta2, t) / bias_correction2;
	if (rho_t > 5.0) {
		double rect = py_sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
		// Python: sqrt(bias_correction2) / tensor, which is tensor.reciprocal() * scalar.
		auto adaptive_lr = exp_avg_sq.sqrt().add_(h.eps).reciprocal() * py_sqrt(bias_correction2);
		p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, -1.0);
	} else {
		p.add_(bias_corrected_exp_avg * lr, -1.0);
	}
}

// nadam_update is one NAdam step (Dozat 2016): torch/optim/nadam.py's
// _single_tensor_nadam with L2 weight decay. mu_product is the product of
// the momentum schedule so far (a float32 scalar on the CPU, starting at 1).
// 1.13 multiplies the next product by mu twice (mu_product * mu * mu_next,
// in float32); 2.x fixed that (mu_product.item() * mu_next, in double).
inline void nadam_update(Tensor &p, Tensor g, Tensor &exp_avg, Tensor &exp_avg_sq, Tensor &mu_product,
                         Tensor &step, double lr, const AdamHyper &h, double momentum_decay) {
	step.add_(1);
	double t = step.item<float>();
	double bias_correction2 = 1 - std::pow(h.beta2, t);
	if (h.wd != 0) g = g.add(p, h.wd);
	double mu = h.beta1 * (1. - 0.5 * std::pow(0.96, t * momentum_decay));
	double mu_next = h.beta1 * (1. - 0.5 * std::pow(0.96, (t + 1) * momentum_decay));
	mu_product.mul_(mu);
#if LT_OPTIM_2X
	double mu_product_next = mu_product.item<float>() * mu_next;
#else
	double mu_product_next = (mu_product * mu * mu_next).item<float>();
#endif
	update_first_moment(exp_avg, g, h.beta1);
	exp_avg_sq.mul_(h.beta2).addcmul_(g, g, 1 - h.beta2);
	auto denom = exp_avg_sq.div(bias_correction2).sqrt().add_(h.eps);
	p.addcdiv_(g, denom, -lr * (1. - mu) / (1. - mu_product.item<float>()));
	p.addcdiv_(exp_avg, denom, -lr * mu_next / (1. - mu_product_next));
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

// lt_optim is an optimizer of a model's parameters: the rule of its kind
// (lts::rules()) with that rule's parameters v, and the state the rule
// keeps per parameter.
struct lt_optim {
	std::vector<lts::Entry> params; // live parameters
	// The state, as read and written through the C ABI: the rule's state
	// tensors (add_state), each for every parameter in turn.
	lt_state bufs;
	int32_t kind = 0;
	std::vector<double> v; // the rule's parameters, in its order
	// clip > 0 scales the gradients to an L2 norm of at most clip before
	// each update.
	double clip = 0;

	// add_state appends a tensor per parameter, <param>.<what>, made by make.
	template <class Make> void add_state(const char *what, Make make) {
		for (auto &p : params) bufs.push_back({p.name + "." + what, make(p.t)});
	}
	// buf is state tensor k (in add_state's order) of parameter i.
	Tensor &buf(size_t k, size_t i) { return bufs[k * params.size() + i].t; }
	void zero_grad() {
		for (auto &p : params) {
			auto &g = p.t.mutable_grad();
			if (g.defined()) g = Tensor();
		}
	}
	void step(double lr); // after lts::rules()
};

namespace lts {

// zeros is a state tensor like p: zeros_like keeps a channels-last
// parameter's format, as torch.optim's torch.zeros_like(p,
// memory_format=torch.preserve_format).
inline Tensor zeros(const Tensor &p) { return torch::zeros_like(p).detach(); }
// scalar is a step count or product: a float32 scalar on the CPU, as
// torch.optim keeps them (also for parameters on a GPU).
inline Tensor scalar(const Tensor &, float x) { return torch::full({}, x, torch::kFloat32); }

// require throws the rule's complaint about its parameters unless ok.
inline void require(bool ok, const char *what) {
	if (!ok) throw std::invalid_argument(what);
}

// SGD, v = {momentum, weight_decay, nesterov (0 or 1)}: torch.optim.SGD
// with dampening 0. State: <param>.momentum_buffer when momentum != 0.
inline void sgd_init(lt_optim &o) {
	require(o.v[0] >= 0 && o.v[1] >= 0, "SGD needs momentum >= 0 and weight decay >= 0");
	require(o.v[2] == 0 || o.v[0] > 0, "Nesterov momentum requires a momentum > 0");
	if (o.v[0] != 0) o.add_state("momentum_buffer", zeros);
}

// sgd_foreach is SGD on CUDA with multi-tensor kernels (torch.optim.SGD's
// foreach path, its default there): a few kernel launches instead of five
// per parameter, the same arithmetic.
inline void sgd_foreach(lt_optim &o, double lr) {
	double momentum = o.v[0], wd = o.v[1];
	std::vector<Tensor> ps, gs, bs;
	for (size_t i = 0; i < o.params.size(); i++) {
		auto g = o.params[i].t.grad();
		if (!g.defined()) continue;
		ps.push_back(o.params[i].t);
		gs.push_back(g);
		if (momentum != 0) bs.push_back(o.buf(0, i));
	}
	if (ps.empty()) return;
	std::vector<Tensor> d = wd != 0 ? at::_foreach_add(gs, ps, wd) : gs;
	if (momentum != 0) {
		at::_foreach_mul_(bs, momentum);
		at::_foreach_add_(bs, d);
		d = o.v[2] != 0 ? at::_foreach_add(d, bs, momentum) : bs;
	}
	at::_foreach_add_(ps, d, -lr);
}

inline void sgd_step(lt_optim &o, double lr) {
	if (!o.params.empty() && o.params[0].t.is_cuda()) return sgd_foreach(o, lr);
	double momentum = o.v[0], wd = o.v[1];
	bool nesterov = o.v[2] != 0;
	for (size_t i = 0; i < o.params.size(); i++) {
		auto &p = o.params[i].t;
		auto g = p.grad();
		if (!g.defined()) continue;
		Tensor *buf = momentum != 0 ? &o.buf(0, i) : nullptr;
		if (fused_sgd_applies(p, g, buf)) {
			fused_sgd(p, g, buf, lr, momentum, wd, nesterov);
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

// RMSProp as TensorFlow (and the Inception papers) define it, v = {decay,
// eps, momentum, weight_decay}: ms <- decay ms + (1 - decay) d^2 (ms
// starts at 1), mom <- momentum mom + lr d / sqrt(ms + eps), p <- p - mom,
// with d = grad + weight_decay p. State: <param>.square_avg, then
// <param>.momentum_buffer when momentum != 0.
inline void rmsprop_init(lt_optim &o) {
	require(o.v[0] >= 0 && o.v[0] < 1 && o.v[1] > 0 && o.v[2] >= 0 && o.v[3] >= 0,
	        "RMSProp needs 0 <= decay < 1, eps > 0, momentum >= 0 and weight decay >= 0");
	// TensorFlow 1 starts the mean squares at 1.
	o.add_state("square_avg", [](const Tensor &p) { return torch::ones_like(p).detach(); });
	if (o.v[2] != 0) o.add_state("momentum_buffer", zeros);
}

inline void rmsprop_step(lt_optim &o, double lr) {
	double rho = o.v[0], eps = o.v[1], momentum = o.v[2], wd = o.v[3];
	for (size_t i = 0; i < o.params.size(); i++) {
		auto &p = o.params[i].t;
		auto g = p.grad();
		if (!g.defined()) continue;
		auto d = wd != 0 ? g.add(p, wd) : g;
		auto &ms = o.buf(0, i);
		ms.mul_(rho).addcmul_(d, d, 1 - rho);
		auto u = d / (ms + eps).sqrt_();
		if (momentum != 0) {
			auto &mom = o.buf(1, i);
			mom.mul_(momentum).add_(u, lr);
			p.sub_(mom);
		} else {
			p.add_(u, -lr);
		}
	}
}

// The Adam family, v = {beta1, beta2, eps, weight_decay} (NAdam: then
// momentum_decay). State: <param>.exp_avg, <param>.exp_avg_sq, then
// <param>.step (a float32 scalar; lt_pg_broadcast_optim leaves such CPU
// tensors out when the parameters are on a GPU); NAdam's <param>.mu_product
// last. A parameter without a gradient is skipped, its step not counted,
// as torch.optim does.
inline AdamHyper adam_hyper(const lt_optim &o, bool decoupled) {
	return AdamHyper{o.v[0], o.v[1], o.v[2], o.v[3], decoupled};
}

inline void adam_init(lt_optim &o) {
	require(o.v[0] >= 0 && o.v[0] < 1 && o.v[1] >= 0 && o.v[1] < 1 && o.v[2] >= 0 && o.v[3] >= 0,
	        "the Adam family needs 0 <= beta1, beta2 < 1, eps >= 0 and weight decay >= 0");
	o.add_state("exp_avg", zeros);
	o.add_state("exp_avg_sq", zeros);
	o.add_state("step", [](const Tensor &p) { return scalar(p, 0); });
}

template <bool Decoupled> void adam_step(lt_optim &o, double lr) {
	auto h = adam_hyper(o, Decoupled);
	for (size_t i = 0; i < o.params.size(); i++) {
		auto &p = o.params[i].t;
		auto g = p.grad();
		if (g.defined()) adam_update(p, g, o.buf(0, i), o.buf(1, i), o.buf(2, i), lr, h);
	}
}

inline void radam_step(lt_optim &o, double lr) {
	auto h = adam_hyper(o, false);
	for (size_t i = 0; i < o.params.size(); i++) {
		auto &p = o.params[i].t;
		auto g = p.grad();
		if (g.defined()) radam_update(p, g, o.buf(0, i), o.buf(1, i), o.buf(2, i), lr, h);
	}
}

inline void nadam_init(lt_optim &o) {
	adam_init(o);
	require(o.v[4] >= 0, "NAdam needs momentum decay >= 0");
	o.add_state("mu_product", [](const Tensor &p) { return scalar(p, 1); });
}

inline void nadam_step(lt_optim &o, double lr) {
	auto h = adam_hyper(o, false);
	for (size_t i = 0; i < o.params.size(); i++) {
		auto &p = o.params[i].t;
		auto g = p.grad();
		if (g.defined()) nadam_update(p, g, o.buf(0, i), o.buf(1, i), o.buf(3, i), o.buf(2, i), lr, h, o.v[4]);
	}
}

// Kind numbers the rules: shim.h's lt_optim_new takes one, with the rule's
// name (which the caller's table must agree on) and its parameters.
enum Kind : int32_t { SGD, RMSPROP, ADAM, ADAMW, RADAM, NADAM, N_KINDS };

// Rule is one kind of optimizer: its name, the number of parameters it
// takes, init (checks them, throwing std::invalid_argument, and adds the
// state) and step (one update of every parameter with a gradient).
struct Rule {
	const char *name;
	size_t n_params;
	void (*init)(lt_optim &o);
	void (*step)(lt_optim &o, double lr);
};

// rules are the rules by Kind.
inline const Rule *rules() {
	static const Rule r[] = {
	    {"sgd", 3, sgd_init, sgd_step},
	    {"rmsprop", 4, rmsprop_init, rmsprop_step},
	    {"adam", 4, adam_init, adam_step<false>},
	    {"adamw", 4, adam_init, adam_step<true>},
	    {"radam", 4, adam_init, radam_step},
	    {"nadam", 5, nadam_init, nadam_step},
	};
	static_assert(sizeof(r) / sizeof(r[0]) == N_KINDS, "a rule for every Kind");
	return r;
}

// new_optim is an optimizer of params with the rule kind, which must be
// called name, and its n parameters v.
inline std::unique_ptr<lt_optim> new_optim(std::vector<Entry> params, int32_t kind, const char *name, const double *v,
                                           int32_t n) {
	if (kind < 0 || kind >= N_KINDS)
		throw std::invalid_argument("optimizer kind " + std::to_string(kind) + ": this shim has kinds 0 to " +
		                            std::to_string(N_KINDS - 1));
	const Rule &r = rules()[kind];
	if (!name || std::string(name) != r.name)
		throw std::invalid_argument("optimizer kind " + std::to_string(kind) + " is " + r.name + " in this shim, not " +
		                            (name ? name : "(null)") + ": rebuild it from the same lcl sources");
	if (n < 0 || (size_t)n != r.n_params || (n > 0 && !v))
		throw std::invalid_argument(std::string(r.name) + " takes " + std::to_string(r.n_params) + " parameters, not " +
		                            std::to_string(n));
	auto o = std::make_unique<lt_optim>();
	o->params = std::move(params);
	o->kind = kind;
	o->v.assign(v, v + n);
	for (double x : o->v)
		if (std::isnan(x)) throw std::invalid_argument(std::string(r.name) + ": a parameter is NaN");
	r.init(*o);
	return o;
}

} // namespace lts

inline void lt_optim::step(double lr) {
	torch::NoGradGuard ng;
	if (clip > 0) {
		std::vector<Tensor> grads;
		for (auto &p : params)
			if (p.t.grad().defined()) grads.push_back(p.t.grad());
		lts::clip_grad_norm(grads, clip);
	}
	lts::rules()[kind].step(*this, lr);
}
