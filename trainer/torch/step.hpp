// step.hpp: the train step of k peers (the engine's, engine.hpp),
// optionally data-parallel, with the loss of loss.hpp.
#pragma once

#include "amp.hpp"
#include "common.hpp"
#include "dist.hpp"
#include "loss.hpp"
#include "optim.hpp"
#include "state.hpp"

namespace lts {

// StepOpts are the engine's settings of one training step (engine.hpp).
struct StepOpts {
	int precision = LT_FP32; // autocast dtype of the forward passes
	bool channels_last = false;
	// loss_scale > 0 (fp16): the loss is multiplied by it before the
	// backward pass, the gradients are unscaled after it (after the
	// all-reduce with a group), and a peer whose gradients hold an inf or
	// NaN skips its update (torch.cuda.amp.GradScaler's step rule).
	double loss_scale = 0;
	// class_probs: the step also returns peer 0's class-probability sums
	// (StepOut.cp_sum, cp_count; lt_engine_class_probs).
	bool class_probs = false;
};

// StepOut is what a step reports per peer. With a group, loss_host and
// correct_host hold the global batch's values (the collective already
// synchronised); without one the values stay on the device as 0-dim tensors
// (loss: float32 batch loss; correct: int64 hits), so the step never waits
// for the device.
struct StepOut {
	std::vector<Tensor> loss, correct;
	std::vector<double> loss_host;
	std::vector<int64_t> correct_host;
	double n_all = 0;
	int32_t found_inf = 0; // peers whose update was skipped (loss_scale)
	Tensor cp_sum, cp_count; // StepOpts.class_probs: C×C float64, C int64
};

// unscale_ multiplies every gradient by inv and reports whether one holds a
// non-finite value: the fused kernel GradScaler uses on CUDA, the same
// arithmetic by hand elsewhere. One host synchronisation (the skip decision
// needs it, as GradScaler.step's does).
inline bool unscale_(const std::vector<Tensor> &grads, double inv) {
	if (grads.empty()) return false;
	auto dev = grads[0].device();
	if (dev.is_cuda()) {
		auto found = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat32).device(dev));
		auto inv_t = torch::full({1}, inv, torch::TensorOptions().dtype(torch::kFloat32).device(dev));
		at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv_t);
		return found.item<float>() != 0;
	}
	std::vector<Tensor> fin;
	for (auto &g : grads) {
		g.mul_(inv);
		fin.push_back(g.isfinite().all());
	}
	return !torch::stack(fin).all().item<bool>();
}

// broadcast_buffers makes the peers' buffers (batch-norm running
// statistics) follow rank 0's, as PyTorch's
// DistributedDataParallel(broadcast_buffers=True) does.
inline void broadcast_buffers(lt_pg *g, lt_model **models, int32_t k) {
	std::vector<Tensor> bufs;
	for (int i = 0; i < k; i++)
		for (auto &b : models[i]->net->buffers(true)) bufs.push_back(b);
	if (!bufs.empty()) ltdist::broadcast(g, bufs, "buffer broadcast");
}

// Denominators are the global denominators of the batch loss: the example
// count and the sum of the weights over every rank's slice (one all-reduce
// with a group; this rank's count alone without one).
struct Denominators {
	double n = 0, w = 0;
};

inline Denominators denominators(lt_pg *g, int64_t n, const Tensor &W) {
	Denominators d{(double)n, 0};
	if (!g) return d;
	if (W.defined() && n > 0) d.w = W.sum().item<double>();
	auto t = torch::tensor({d.n, d.w}, torch::kFloat64);
	ltdist::allreduce_sum(g, {t}, "loss normalisation all-reduce");
	return {t[0].item<double>(), t[1].item<double>()};
}

// Mixed is a batch mixed by lt_mix: the inputs, the labels of the other half
// of each pair (undefined when not mixed) and the weight of the first half.
struct Mixed {
	Tensor X, Yb;
	double lam = 1;
};

// mix_batch mixes X with itself flipped, as timm's Mixup (mode "batch"):
// CutMix pastes the box (y0, x0)–(y1, x1) when it is not empty, mixup
// blends the whole image otherwise.
inline Mixed mix_batch(const lt_mix *mix, Tensor X, const Tensor &Y) {
	if (!mix || mix->lam >= 1) return {X, Tensor(), 1};
	double lam = mix->lam;
	if (!(lam >= 0)) throw std::invalid_argument("mixing weight " + std::to_string(lam) + ", want 0 <= lam <= 1");
	if (mix->y1 > mix->y0 && mix->x1 > mix->x0) {
		if (mix->y0 < 0 || mix->x0 < 0 || mix->y1 > X.size(2) || mix->x1 > X.size(3))
			throw std::invalid_argument("CutMix box outside the " + std::to_string(X.size(2)) + "x" +
			                            std::to_string(X.size(3)) + " image");
		// Only the box is flipped (flip copies; the box is a view).
		X = X.clone();
		auto box = X.slice(2, mix->y0, mix->y1).slice(3, mix->x0, mix->x1);
		box.copy_(box.flip(0));
	} else {
		X = X.mul(lam).add_(X.flip(0), 1 - lam);
	}
	return {X, Y.flip(0), lam};
}

// Logits are the forward passes of one step under autocast (opts.precision),
// cast to float32: the students' and, when distilling, the teacher's.
// With features asked for, f holds each peer's penultimate features (for
// the cosine term).
struct Logits {
	std::vector<Tensor> z, f;
	Tensor teacher;
};

inline Logits forward_peers(lt_model **models, int32_t k, lt_model *teacher, const Tensor &X, bool distil,
                            const torch::Device &dev, int precision, bool features = false) {
	Logits l;
	l.z.resize(k);
	if (features) l.f.resize(k);
	{
		Autocast ac(dev, precision);
		if (distil && teacher) {
			torch::NoGradGuard ng;
			teacher->net->eval();
			l.teacher = teacher->net->forward(X);
		}
		for (int i = 0; i < k; i++) {
			models[i]->net->train();
			l.z[i] = features ? models[i]->net->logits_features(X, &l.f[i]) : models[i]->net->forward(X);
		}
	}
	// The loss terms in float32, outside autocast.
	for (auto &z : l.z) z = z.to(torch::kFloat32);
	for (auto &f : l.f) f = f.to(torch::kFloat32);
	if (l.teacher.defined()) l.teacher = l.teacher.to(torch::kFloat32);
	return l;
}

// class_prob_sums adds online label smoothing's statistics to out: the
// softmax rows of the examples z (peer 0's logits) got right, summed by
// label, and their counts.
inline void class_prob_sums(const Tensor &z, const Tensor &Y, int64_t C, StepOut &out) {
	torch::NoGradGuard ng;
	auto p = torch::softmax(z.detach(), 1).to(torch::kFloat64);
	auto idx = z.detach().argmax(1).eq(Y).nonzero().squeeze(1);
	auto yc = Y.index_select(0, idx);
	out.cp_sum = torch::zeros({C, C}, p.options()).index_add_(0, yc, p.index_select(0, idx));
	out.cp_count = torch::zeros({C}, Y.options()).index_add_(0, yc, torch::ones_like(yc));
}

// allreduce_step sums the peers' gradients over g, then their losses and hit
// counts into out's host values. Each rank's loss is its share of the
// global batch loss, so the sum of the gradients is the gradient of the
// global batch.
inline void allreduce_step(lt_pg *g, lt_optim **optims, int32_t k, const std::vector<Tensor> &losses, int64_t n,
                           StepOut &out) {
	std::vector<Tensor> grads;
	for (int i = 0; i < k; i++)
		for (auto &p : optims[i]->params) {
			// A fixed head (lt_model_fix_head) is not trained: no gradient,
			// so weight decay leaves it alone too.
			if (!p.t.requires_grad()) continue;
			auto &gr = p.t.mutable_grad();
			if (!gr.defined()) gr = torch::zeros_like(p.t);
			grads.push_back(gr);
		}
	ltdist::allreduce_sum(g, grads, "gradient all-reduce");
	auto st = torch::zeros({2 * k}, torch::kFloat64);
	auto sa = st.accessor<double, 1>();
	for (int i = 0; i < k; i++) {
		sa[i] = n > 0 ? losses[i].item<double>() : 0;
		sa[k + i] = n > 0 ? (double)out.correct[i].item<int64_t>() : 0;
	}
	ltdist::allreduce_sum(g, {st}, "statistics all-reduce");
	for (int i = 0; i < k; i++) {
		out.loss_host.push_back(sa[i]);
		out.correct_host.push_back((int64_t)sa[k + i]);
	}
}

// update steps every peer's optimizer; with a loss scale it unscales the
// gradients first and skips a peer whose gradients are not finite
// (GradScaler.step's rule), counting it in out.found_inf.
inline void update(lt_optim **optims, int32_t k, double lr, double loss_scale, StepOut &out) {
	for (int i = 0; i < k; i++) {
		if (loss_scale > 0) {
			std::vector<Tensor> grads;
			for (auto &p : optims[i]->params)
				if (p.t.grad().defined()) grads.push_back(p.t.grad());
			if (unscale_(grads, 1.0 / loss_scale)) {
				out.found_inf++;
				continue;
			}
		}
		optims[i]->step(lr);
	}
}

// train_step is one training step of k peers on device tensors X (n×c×h×w,
// normalised), Y (labels) and W (per-example weights or undefined),
// data-parallel over g when g is not NULL (see lt_engine_train in shim.h).
// Forward passes run under autocast (opts.precision); the logits are cast to
// float32 before the loss, so soft-target, distillation and mutual terms are
// computed in float32 and the parameters, gradients and momentum stay
// float32.
inline StepOut train_step(lt_pg *g, lt_model **models, lt_optim **optims, int32_t k, lt_model *teacher, Tensor X,
                          const Tensor &Y, const Tensor &W, lt_tensor *targets, lt_coefs coefs,
                          const lt_groups *groups, const lt_mix *mix, double lr, const StepOpts &opts) {
	if (k < 1) throw std::invalid_argument("train step needs at least one model");
	auto dev = models[0]->device;
	int64_t C = models[0]->num_classes;
	int64_t n = X.defined() ? X.size(0) : 0;
	if (g) broadcast_buffers(g, models, k);
	StepOut out;
	auto den = denominators(g, n, W);
	out.n_all = den.n;
	std::vector<Tensor> losses(k);
	out.correct.resize(k);
	for (int i = 0; i < k; i++) optims[i]->zero_grad();
	if (n > 0) {
		if (opts.channels_last && X.dim() == 4) X = lts::channels_last(X);
		auto G = groups_of(groups, C, coefs, dev);
		auto m = mix_batch(mix, X, Y);
		auto L = labels_of(targets, Y, m.Yb, m.lam, C, coefs, dev);
		bool levels = coefs.consistency != 0 || coefs.dissimilar != 0 || coefs.geometric != 0;
		auto l = forward_peers(models, k, teacher, m.X, coefs.kd != 0, dev, opts.precision,
		                       coefs.cosine != 0 || levels);
		std::vector<Tensor> probs;
		if (coefs.mutual != 0 && k > 1)
			for (int i = 0; i < k; i++) probs.push_back(torch::softmax(l.z[i].detach(), 1));
		Tensor total;
		for (int i = 0; i < k; i++) {
			Fixed fx;
			if (coefs.cosine != 0) fx = Fixed{l.f[i], models[i]->fixed_head};
			Levels lv;
			if (levels) lv = levels_of(l.z[i], l.f[i], models[i]->levels, models[i]->net->last_linear_head());
			auto per = per_example_loss(l.z[i], L, coefs, G, l.teacher, probs, i, fx, levels ? &lv : nullptr);
			if (!g) losses[i] = reduce(per, W);
			else if (!W.defined()) losses[i] = per.sum() / den.n;
			// A global batch whose weights are all zero contributes nothing.
			else losses[i] = (per * W).sum() / std::max(den.w, 1e-12);
			// HAF's batch terms, each rank's weighted by its share of the
			// global batch: the all-reduced gradient is then the global
			// batch's (each rank's pairs are its own slice's).
			if (coefs.dissimilar != 0 || coefs.geometric != 0)
				losses[i] = losses[i] + (g ? (double)n / den.n : 1.0) * level_batch_terms(lv, L, coefs);
			total = i == 0 ? losses[i] : total + losses[i];
		}
		if (opts.loss_scale > 0) total = total * opts.loss_scale;
		total.backward();
		for (int i = 0; i < k; i++) out.correct[i] = l.z[i].detach().argmax(1).eq(Y).sum();
		if (opts.class_probs) class_prob_sums(l.z[0], Y, C, out);
	}
	if (g) allreduce_step(g, optims, k, losses, n, out);
	else
		for (int i = 0; i < k; i++) out.loss.push_back(losses[i].detach());
	update(optims, k, lr, opts.loss_scale, out);
	return out;
}

} // namespace lts
