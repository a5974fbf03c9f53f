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

// per_example_loss is the per-example loss of peer self from its logits:
// the weighted sum of the soft-target CE against the rows T, the one-hot CE
// against the labels Y, the distillation KL against the teacher's logits
// and the mutual KL against the other peers' probabilities (constants;
// entry self of peer_probs is skipped), each summed over classes.
inline Tensor per_example_loss(const Tensor &logits, const Tensor &Y, const Tensor &T, const lt_coefs &c,
                               const Tensor &tlogits, const std::vector<Tensor> &peer_probs, int self) {
	auto logp = torch::log_softmax(logits, 1);
	Tensor per = torch::zeros({logits.size(0)}, logits.options());
	if (c.soft != 0) per = per - c.soft * (T * logp).sum(1);
	if (c.hard != 0) per = per - c.hard * logp.gather(1, Y.unsqueeze(1)).squeeze(1);
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

} // namespace lts
