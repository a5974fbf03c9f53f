// loss.hpp: the training loss of one model (soft targets, one-hot,
// distillation, mutual learning; docs/trainer.md), used by the train step
// (step.hpp) and, on its own, by the tests' build of it
// (internal/shimloss), which holds it against internal/lossref.
#pragma once

#include "common.hpp"

#include <string>
#include <vector>

namespace lts {

// kl_rows: KL(p || q) per row, from probabilities p and log-probabilities logq.
inline Tensor kl_rows(const Tensor &p, const Tensor &logq) { return (torch::xlogy(p, p) - p * logq).sum(1); }

// Groups are the class groups of the group term on the device, in float64
// (lt_groups): M, G×C membership, and W, C×G weights; undefined when the
// term is off.
struct Groups {
	Tensor M, W;
};

// Labels are what a batch's label terms (soft, one-hot, group) are taken
// against: the labels Y and the target rows T; with mixing (Yb defined), the
// mirrored examples' labels Yb and the weight lam of each example's own, T
// already mixed (labels_of). Every label term is linear in its target, so
// the term against the mixed target is lam·term(Y) + (1−lam)·term(Yb), as
// timm's Mixup mixes targets, with one log-softmax and one product per peer.
struct Labels {
	Tensor Y, T, Yb;
	double lam = 1;
	bool mixed() const { return Yb.defined(); }
};

// blend is lam·a + (1−lam)·b: a label term's value for an example mixed with
// its mirrored one (a unchanged when either is undefined).
inline Tensor blend(const Tensor &a, const Tensor &b, double lam) {
	if (!a.defined() || !b.defined()) return a;
	return a.mul(lam).add_(b, 1 - lam);
}

// group_log_probs is Σ_g W[y,g]·log q_g per example, q = softmax·Mᵀ the
// groups' probabilities, from the log-probabilities logp (with mixing, the
// weight rows of y and of the mirrored label mixed). The sums run in
// float64: a group's log-probability is the log of a sum of probabilities,
// which in float32 would reach 0 (and −inf) once every member's
// log-probability is below −103; in float64 only below −745. Every group
// with a weight for class y holds y in MBM's hierarchical cross-entropy,
// but a plan may weigh others, so a group whose probability still
// underflows counts as 1e-300 (a finite loss, no NaN gradient).
inline Tensor group_log_probs(const Tensor &logp, const Labels &L, const Groups &g) {
	auto q = logp.to(torch::kFloat64).exp().matmul(g.M.t());
	auto w = g.W.index_select(0, L.Y);
	if (L.mixed()) w = blend(w, g.W.index_select(0, L.Yb), L.lam);
	return (w * q.clamp_min(1e-300).log()).sum(1).to(logp.scalar_type());
}

// groups_of checks the group tensors of a step with C classes and puts
// them on dev in float64; undefined when the group term is off. The
// tensors are converted in place, so the steps after the first of a plan
// find them converted and copy nothing.
inline Groups groups_of(const lt_groups *gl, int64_t C, const lt_coefs &c, torch::Device dev) {
	if (c.group == 0) return Groups{};
	if (!gl || !gl->members || !gl->weights) throw std::invalid_argument("group coefficient set without class groups");
	auto &M = gl->members->t;
	auto &W = gl->weights->t;
	if (M.dim() != 2 || M.size(1) != C || M.size(0) < 1)
		throw std::invalid_argument("group membership is " + c10::str(M.sizes()) + ", want G x " + std::to_string(C));
	if (W.dim() != 2 || W.size(0) != C || W.size(1) != M.size(0))
		throw std::invalid_argument("group weights are " + c10::str(W.sizes()) + ", want " + std::to_string(C) + " x " +
		                            std::to_string(M.size(0)));
	M = M.to(dev, torch::kFloat64);
	W = W.to(dev, torch::kFloat64);
	return Groups{M, W};
}

// Fixed is what the cosine term takes: the model's features F (N×d,
// float32) and its fixed head V (C×d; lt_model_fix_head); undefined when
// the term is off.
struct Fixed {
	Tensor F, V;
};

// cosine_term is Σ_c (cos(f, V_c) − cos(V_y, V_c))² per example: the
// squared gap between the cosines of the features with the class vectors
// and those of the label's own vector (HAFrame's loss, whose targets are
// the pairwise cosines the vectors were built with). With mixing the
// label's term is blended with the mirrored label's, as every label term
// is. A zero feature row has cosine 0 with every class (the norm is
// clamped at 1e-8, as torch.nn.functional.cosine_similarity clamps).
inline Tensor cosine_term(const Fixed &fx, const Labels &L) {
	if (!fx.F.defined() || !fx.V.defined())
		throw std::invalid_argument("cosine coefficient set without a fixed classifier");
	auto V = fx.V.to(fx.F.scalar_type());
	auto Vn = V / V.norm(2, 1, true).clamp_min(1e-8);
	auto cosF = (fx.F / fx.F.norm(2, 1, true).clamp_min(1e-8)).matmul(Vn.t());
	auto G = Vn.matmul(Vn.t()).detach();
	auto term = (cosF - G.index_select(0, L.Y)).pow(2).sum(1);
	if (L.mixed()) term = blend(term, (cosF - G.index_select(0, L.Yb)).pow(2).sum(1), L.lam);
	return term;
}

// per_example_loss is the per-example loss of peer self from its logits:
// the weighted sum of the soft-target CE against the rows L.T, the one-hot
// CE against the labels L.Y, the group term against the class groups G
// (with mixing, those of L.Yb too, weighted by L.lam), the distillation KL
// against the teacher's logits and the mutual KL against the other peers'
// probabilities (constants; entry self of peer_probs is skipped) and the
// cosine term of the fixed classifier fx, each summed over classes.
inline Tensor per_example_loss(const Tensor &logits, const Labels &L, const lt_coefs &c, const Groups &G,
                               const Tensor &tlogits, const std::vector<Tensor> &peer_probs, int self,
                               const Fixed &fx = Fixed{}) {
	auto logp = torch::log_softmax(logits, 1);
	Tensor per = torch::zeros({logits.size(0)}, logits.options());
	if (c.soft != 0) per = per - c.soft * (L.T * logp).sum(1);
	if (c.hard != 0) {
		auto h = logp.gather(1, L.Y.unsqueeze(1)).squeeze(1);
		if (L.mixed()) h = blend(h, logp.gather(1, L.Yb.unsqueeze(1)).squeeze(1), L.lam);
		per = per - c.hard * h;
	}
	if (c.group != 0) per = per - c.group * group_log_probs(logp, L, G);
	if (c.cosine != 0) per = per + c.cosine * cosine_term(fx, L);
	if (c.kd != 0) {
		if (!tlogits.defined()) throw std::invalid_argument("distillation coefficient set without a teacher");
		double t = c.kd_temp > 0 ? c.kd_temp : 1.0;
		auto pt = torch::softmax(tlogits / t, 1);
		auto ls = torch::log_softmax(logits / t, 1);
		per = per + (c.kd * t * t) * kl_rows(pt, ls);
	}
	if (c.mutual != 0 && peer_probs.size() > 1) {
		double w = c.mutual / (double)(peer_probs.size() - 1);
		for (size_t j = 0; j < peer_probs.size(); j++) {
			if ((int)j == self) continue;
			per = per + w * kl_rows(peer_probs[j], logp);
		}
	}
	return per;
}

// reduce is the batch loss: the mean of the per-example losses, or their
// mean weighted by W.
inline Tensor reduce(const Tensor &per, const Tensor &W) {
	if (!W.defined()) return per.mean();
	// A batch whose weights are all zero contributes nothing (not 0/0).
	return (per * W).sum() / W.sum().clamp_min(1e-12);
}

// target_rows are the rows of the target matrix for labels Y (one-hot rows
// without a matrix), on dev; undefined when the soft term is off.
inline Tensor target_rows(lt_tensor *targets, const Tensor &Y, int64_t C, const lt_coefs &c, torch::Device dev) {
	if (c.soft == 0) return Tensor();
	if (targets) {
		if (targets->t.dim() != 2 || targets->t.size(0) != C || targets->t.size(1) != C)
			throw std::invalid_argument("target matrix is " + c10::str(targets->t.sizes()) + ", want " +
			                            std::to_string(C) + "x" + std::to_string(C));
		return targets->t.to(dev).index_select(0, Y);
	}
	return torch::one_hot(Y, C).to(torch::kFloat32);
}

// labels_of are the Labels of a batch with labels Y, mixed with the
// mirrored labels Yb by lam when Yb is defined: the target rows of Y (and of
// Yb, mixed into them) from the target matrix, one-hot without one.
inline Labels labels_of(lt_tensor *targets, const Tensor &Y, const Tensor &Yb, double lam, int64_t C, const lt_coefs &c,
                        torch::Device dev) {
	Labels L{Y, target_rows(targets, Y, C, c, dev), Yb, lam};
	if (L.mixed()) L.T = blend(L.T, target_rows(targets, Yb, C, c, dev), lam);
	return L;
}

} // namespace lts
