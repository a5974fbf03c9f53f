//go:build cgo

// loss.cpp: shimloss.h over the shim's loss.hpp. Its own translation unit
// next to the shim's (both in one test binary): every function of the
// shim's headers is inline, so none is defined twice.
#include "shimloss.h"

#include "../../loss.hpp"

using torch::Tensor;

extern "C" {

int32_t ltt_loss(const float *logits, int64_t n, int64_t c, const int64_t *y, const int64_t *y_mixed, double lam,
                 const float *targets,
                 const float *weights, lt_coefs coefs, const float *group_members, const float *group_weights,
                 int64_t n_groups, const float *teacher_logits, const float *peer_logits, int32_t n_peers,
                 float *loss_out, float *grad_out, char **err) {
	LT_TRY
	if (n < 1 || c < 1) throw std::invalid_argument("loss of an empty batch");
	if (n_peers < 0 || (n_peers > 0 && !peer_logits)) throw std::invalid_argument("peer logits missing");
	auto Z = lts::blob(logits, {n, c}).clone().requires_grad_(true);
	auto Y = torch::from_blob(const_cast<int64_t *>(y), {n}, torch::kInt64);
	Tensor W;
	if (weights) W = lts::blob(weights, {n});
	Tensor tl;
	if (teacher_logits) tl = lts::blob(teacher_logits, {n, c});
	lt_tensor T0;
	if (targets) T0.t = lts::blob(targets, {c, c});
	Tensor Yb;
	if (y_mixed) Yb = torch::from_blob(const_cast<int64_t *>(y_mixed), {n}, torch::kInt64);
	auto L = lts::labels_of(targets ? &T0 : nullptr, Y, Yb, lam, c, coefs, torch::kCPU);
	lt_tensor GM, GW;
	lt_groups groups{nullptr, nullptr};
	if (group_members && group_weights && n_groups > 0) {
		GM.t = lts::blob(group_members, {n_groups, c});
		GW.t = lts::blob(group_weights, {c, n_groups});
		groups = lt_groups{&GM, &GW};
	}
	auto G = lts::groups_of(&groups, c, coefs, torch::kCPU);
	// per_example_loss skips the model's own entry (index 0) of the peers'
	// probabilities, as the train step does for each peer.
	std::vector<Tensor> probs;
	if (n_peers > 0) {
		probs.push_back(Tensor());
		for (int32_t j = 0; j < n_peers; j++)
			probs.push_back(torch::softmax(lts::blob(peer_logits + j * n * c, {n, c}), 1));
	}
	auto loss = lts::reduce(lts::per_example_loss(Z, L, coefs, G, tl, probs, 0), W);
	loss.backward();
	*loss_out = loss.item<float>();
	if (grad_out) std::memcpy(grad_out, Z.grad().contiguous().data_ptr<float>(), sizeof(float) * n * c);
	return 0;
	LT_CATCH(err, -1)
}

int32_t ltt_cross_entropy(const float *logits, int64_t n, int64_t c, const int64_t *y, float *loss_out, char **err) {
	LT_TRY
	auto Z = lts::blob(logits, {n, c});
	auto Y = torch::from_blob(const_cast<int64_t *>(y), {n}, torch::kInt64);
	*loss_out = torch::nn::functional::cross_entropy(Z, Y).item<float>();
	return 0;
	LT_CATCH(err, -1)
}

} // extern "C"
