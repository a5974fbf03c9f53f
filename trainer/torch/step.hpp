// step.hpp: the training loss (soft targets, one-hot, distillation, mutual
// learning) and the train step of k peers, optionally data-parallel.
#pragma once

#include "common.hpp"
#include "dist.hpp"
#include "state.hpp"

namespace lts {

// kl_rows: KL(p || q) per row, from probabilities p and log-probabilities logq.
Tensor kl_rows(const Tensor &p, const Tensor &logq) { return (torch::xlogy(p, p) - p * logq).sum(1); }

// peer_loss is the per-example loss of one model: the weighted sum of the
// soft-target CE, the one-hot CE, the distillation KL and the mutual KL
// against the (detached) other peers, each summed over classes.
Tensor per_example_loss(const Tensor &logits, const Tensor &Y, const Tensor &T, const lt_coefs &c,
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

Tensor reduce(const Tensor &per, const Tensor &W) {
	if (!W.defined()) return per.mean();
	// A batch whose weights are all zero contributes nothing (not 0/0).
	return (per * W).sum() / W.sum().clamp_min(1e-12);
}

Tensor target_rows(lt_tensor *targets, const Tensor &Y, int64_t C, const lt_coefs &c, torch::Device dev) {
	if (c.soft == 0) return Tensor();
	if (targets) {
		if (targets->t.dim() != 2 || targets->t.size(0) != C || targets->t.size(1) != C)
			throw std::invalid_argument("target matrix is " + c10::str(targets->t.sizes()) + ", want " +
			                            std::to_string(C) + "x" + std::to_string(C));
		return targets->t.to(dev).index_select(0, Y);
	}
	return torch::one_hot(Y, C).to(torch::kFloat32);
}

// train_step is lt_train_step, data-parallel over g when g is not NULL
// (see lt_train_step_pg in shim.h).
void train_step(lt_pg *g, lt_model **models, lt_optim **optims, int32_t k, lt_model *teacher, const float *x, int64_t n,
                int64_t c, int64_t h, int64_t w, const int64_t *y, lt_tensor *targets, const float *weights,
                lt_coefs coefs, double lr, float *loss_out, int64_t *correct_out, int64_t *n_out) {
	if (k < 1) throw std::invalid_argument("train step needs at least one model");
	auto dev = models[0]->device;
	int64_t C = models[0]->num_classes;
	if (g) {
		// Buffers (batch-norm running statistics) follow rank 0, as in
		// PyTorch's DistributedDataParallel(broadcast_buffers=True).
		std::vector<Tensor> bufs;
		for (int i = 0; i < k; i++)
			for (auto &b : models[i]->net->buffers(true)) bufs.push_back(b);
		if (!bufs.empty()) ltdist::broadcast(g, bufs, "buffer broadcast");
	}
	// Global denominators of the batch loss: the example count and the sum of
	// the weights over every rank's slice.
	double n_all = (double)n, w_all = 0;
	if (weights)
		for (int64_t i = 0; i < n; i++) w_all += weights[i];
	if (g) {
		auto d = torch::tensor({n_all, w_all}, torch::kFloat64);
		ltdist::allreduce_sum(g, {d}, "loss normalisation all-reduce");
		n_all = d[0].item<double>();
		w_all = d[1].item<double>();
	}
	std::vector<Tensor> losses(k);
	std::vector<int64_t> correct(k, 0);
	for (int i = 0; i < k; i++) optims[i]->zero_grad();
	if (n > 0) {
		auto X = blob(x, {n, c, h, w}).to(dev);
		auto Y = torch::from_blob(const_cast<int64_t *>(y), {n}, torch::kInt64).to(dev);
		Tensor W;
		if (weights) W = blob(weights, {n}).to(dev);
		auto T = target_rows(targets, Y, C, coefs, dev);
		Tensor tl;
		if (coefs.kd != 0 && teacher) {
			torch::NoGradGuard ng;
			teacher->net->eval();
			tl = teacher->net->forward(X);
		}
		std::vector<Tensor> logits(k);
		for (int i = 0; i < k; i++) {
			models[i]->net->train();
			logits[i] = models[i]->net->forward(X);
		}
		std::vector<Tensor> probs;
		if (coefs.mutual != 0 && k > 1)
			for (int i = 0; i < k; i++) probs.push_back(torch::softmax(logits[i].detach(), 1));
		Tensor total;
		for (int i = 0; i < k; i++) {
			auto per = per_example_loss(logits[i], Y, T, coefs, tl, probs, i);
			if (!g) losses[i] = reduce(per, W);
			else if (!W.defined()) losses[i] = per.sum() / n_all;
			// A global batch whose weights are all zero contributes nothing.
			else losses[i] = (per * W).sum() / std::max(w_all, 1e-12);
			total = i == 0 ? losses[i] : total + losses[i];
		}
		total.backward();
		for (int i = 0; i < k; i++) correct[i] = logits[i].argmax(1).eq(Y).sum().item<int64_t>();
	}
	if (g) {
		// Each rank's loss is its share of the global batch loss, so the sum
		// of the gradients is the gradient of the global batch.
		std::vector<Tensor> grads;
		for (int i = 0; i < k; i++)
			for (auto &p : optims[i]->params) {
				auto &gr = p.t.mutable_grad();
				if (!gr.defined()) gr = torch::zeros_like(p.t);
				grads.push_back(gr);
			}
		ltdist::allreduce_sum(g, grads, "gradient all-reduce");
		auto st = torch::zeros({2 * k}, torch::kFloat64);
		auto sa = st.accessor<double, 1>();
		for (int i = 0; i < k; i++) {
			sa[i] = n > 0 ? losses[i].item<double>() : 0;
			sa[k + i] = (double)correct[i];
		}
		ltdist::allreduce_sum(g, {st}, "statistics all-reduce");
		for (int i = 0; i < k; i++) {
			loss_out[i] = (float)sa[i];
			correct_out[i] = (int64_t)sa[k + i];
		}
	} else {
		for (int i = 0; i < k; i++) {
			loss_out[i] = losses[i].item<float>();
			correct_out[i] = correct[i];
		}
	}
	for (int i = 0; i < k; i++) optims[i]->step(lr);
	if (n_out) *n_out = (int64_t)n_all;
}

} // namespace lts
