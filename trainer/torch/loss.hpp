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

// HAF's terms (Garg, Sani, Anand, ECCV 2022; code 07Agarg/HAF, the model
// ResNet18_ours_l7_cejsd_wtconst_dissim): the model's own head is level 0,
// its levels (lt_model_add_levels) 1..L, coarser and coarser.

// Levels are one peer's predictions at every level: P[0] the softmax of the
// model's logits, P[l] that of level l's head, f·ŵ_lᵀ + b_l with ŵ_l the
// head's unit weight rows (theirs: F.normalize of the weight, bias kept);
// heads the model's level heads and fine its own head's linear layer (for
// the geometric term; empty when the head is no such layer).
struct Levels {
	std::vector<Tensor> P;
	const std::vector<LevelHead> *heads = nullptr;
	nn::Linear fine{nullptr};
};

// unit_rows is w with each row divided by its norm (F.normalize: the norm
// clamped at 1e-12).
inline Tensor unit_rows(const Tensor &w) { return w / w.norm(2, 1, true).clamp_min(1e-12); }

// levels_of computes a peer's Levels from its logits and features F (both
// float32; the heads run outside autocast, in float32).
inline Levels levels_of(const Tensor &logits, const Tensor &F, const std::vector<LevelHead> &heads, nn::Linear fine) {
	if (heads.empty())
		throw std::invalid_argument("a level coefficient (consistency, dissimilar, geometric) set for a model without level "
		                            "heads: the stage declares no levels");
	if (!F.defined()) throw std::invalid_argument("level heads without the model's features");
	Levels o{{torch::softmax(logits, 1)}, &heads, fine};
	for (auto &h : heads) o.P.push_back(torch::softmax(torch::addmm(h.head->bias, F, unit_rows(h.head->weight).t()), 1));
	return o;
}

// log_mid is the log of HAF's midpoint m = ½(p + q), clamped to
// [1e-7, 1] as their JSD losses clamp it.
inline Tensor log_mid(const Tensor &p, const Tensor &q) { return (0.5 * (p + q)).clamp(1e-7, 1).log(); }

// jsd_rows is HAF's Jensen–Shannon divergence of each row of p and q
// (their JSDSimilarLoss before the batch mean): ½[KL(p‖m) + KL(q‖m)], KL
// as F.kl_div computes it.
inline Tensor jsd_rows(const Tensor &p, const Tensor &q) {
	auto logm = log_mid(p, q);
	return 0.5 * (kl_rows(p, logm) + kl_rows(q, logm));
}

// consistency_term is Σ_l JSD(P[l−1] summed into level l's groups, P[l])
// per example: each level's head agrees with the level below it; the
// gradient flows into both.
inline Tensor consistency_term(const Levels &lv) {
	Tensor t;
	for (size_t l = 1; l < lv.P.size(); l++) {
		auto j = jsd_rows(lv.P[l - 1].matmul((*lv.heads)[l - 1].up), lv.P[l]);
		t = t.defined() ? t + j : j;
	}
	return t;
}

// dissimilar_level is the mean, over consecutive examples of the batch
// whose groups at level l differ, of HAF's margin term
// ½[max(3 − KL(a‖m), 0) + max(3 − KL(b‖m), 0)] of their level-l
// predictions a and b (their JSDDissimilarLoss, margin 3; KL to the
// midpoint is at most log 2, so the hinge is always active); 0 without such
// a pair. lcl pairs consecutive examples of the batch's own (shuffled)
// order, each once: no random draw (theirs shuffles again and cycles through
// the pairs until it has 256).
inline Tensor dissimilar_level(const Tensor &P, const Tensor &group, const Tensor &Y) {
	auto g = group.index_select(0, Y);
	auto n = P.size(0);
	if (n < 2) return torch::zeros({}, P.options());
	auto diff = g.narrow(0, 0, n - 1).ne(g.narrow(0, 1, n - 1)).nonzero().squeeze(1);
	if (diff.numel() == 0) return torch::zeros({}, P.options());
	auto a = P.index_select(0, diff), b = P.index_select(0, diff + 1);
	auto logm = log_mid(a, b);
	auto ka = kl_rows(a, logm), kb = kl_rows(b, logm);
	const double margin = 3;
	return 0.5 * ((margin - ka).clamp_min(0).mean() + (margin - kb).clamp_min(0).mean());
}

// geometric_level is the mean over level l's groups g of
// cos(ŵ_l[g], normalize(Σ_{children h of g} ŵ_{l−1}[h])) (their
// l2_weight term), ŵ the heads' unit weight rows, level 0's the model's
// own head.
inline Tensor geometric_level(const Levels &lv, size_t l) {
	auto &heads = *lv.heads;
	Tensor below;
	if (l == 1) {
		if (lv.fine.is_empty())
			throw std::invalid_argument("the geometric term needs the model's head to be one linear layer on the features "
			                            "(maybe after dropout); this model's is not");
		below = lv.fine->weight;
	} else {
		below = heads[l - 2].head->weight;
	}
	auto w = unit_rows(heads[l - 1].head->weight);
	auto kids = unit_rows(heads[l - 1].up.t().matmul(unit_rows(below)));
	// torch.nn.CosineSimilarity(dim=1, eps=1e-8) of the two.
	auto cos = (w * kids).sum(1) / (w.norm(2, 1) * kids.norm(2, 1)).clamp_min(1e-8);
	return cos.mean();
}

// level_batch_terms is the batch (not per-example) part of HAF's loss:
// dissimilar·Σ_{1≤l<L} dissimilar_level − geometric·Σ_{l≥1}
// geometric_level. With mixing the pairs of the mirrored labels are
// blended in by lam, as every label term is.
inline Tensor level_batch_terms(const Levels &lv, const Labels &L, const lt_coefs &c) {
	auto t = torch::zeros({}, lv.P[0].options());
	auto &heads = *lv.heads;
	for (size_t l = 1; c.dissimilar != 0 && l < heads.size(); l++) {
		auto d = dissimilar_level(lv.P[l], heads[l - 1].group, L.Y);
		if (L.mixed()) d = blend(d, dissimilar_level(lv.P[l], heads[l - 1].group, L.Yb), L.lam);
		t = t + c.dissimilar * d;
	}
	for (size_t l = 1; c.geometric != 0 && l <= heads.size(); l++) t = t - c.geometric * geometric_level(lv, l);
	return t;
}

// per_example_loss is the per-example loss of peer self from its logits:
// the weighted sum of the soft-target CE against the rows L.T, the one-hot
// CE against the labels L.Y, the group term against the class groups G
// (with mixing, those of L.Yb too, weighted by L.lam), the distillation KL
// against the teacher's logits and the mutual KL against the other peers'
// probabilities (constants; entry self of peer_probs is skipped), the
// cosine term of the fixed classifier fx and HAF's consistency term of the
// levels lv, each summed over classes.
inline Tensor per_example_loss(const Tensor &logits, const Labels &L, const lt_coefs &c, const Groups &G,
                               const Tensor &tlogits, const std::vector<Tensor> &peer_probs, int self,
                               const Fixed &fx = Fixed{}, const Levels *lv = nullptr) {
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
	if (c.consistency != 0) {
		if (!lv) throw std::invalid_argument("consistency coefficient set without level predictions");
		per = per + c.consistency * consistency_term(*lv);
	}
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
