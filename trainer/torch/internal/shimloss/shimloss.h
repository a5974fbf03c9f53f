/*
 * shimloss.h: the training loss of trainer/torch's shim (loss.hpp) on its
 * own, for tests; not part of shim.h's ABI. Same conventions as shim.h.
 */
#ifndef LCL_TORCH_SHIMLOSS_H
#define LCL_TORCH_SHIMLOSS_H

#include <stdint.h>

#include "../../shim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The loss of one model's n x c logits as a training step computes it,
   with its gradient with respect to those logits (grad_out, n x c, may be
   NULL). targets (c x c, row-major) or NULL (one-hot); weights (n) or
   NULL; teacher_logits (n x c) is needed when coefs.kd != 0; peer_logits
   holds the logits of the n_peers other peers (n_peers x n x c, treated as
   constants) for the mutual term; group_members (n_groups x c) and
   group_weights (c x n_groups) are the class groups of the group term,
   needed when coefs.group != 0. With y_mixed (n labels, or NULL), the
   loss of a mixed batch: each label term (soft, one-hot, group) taken
   against lam of y and 1 - lam of y_mixed, as the train step mixes. */
int32_t ltt_loss(const float *logits, int64_t n, int64_t c, const int64_t *y, const int64_t *y_mixed, double lam,
                 const float *targets,
                 const float *weights, lt_coefs coefs, const float *group_members, const float *group_weights,
                 int64_t n_groups, const float *teacher_logits, const float *peer_logits, int32_t n_peers,
                 float *loss_out, float *grad_out, char **err);

/* torch::nn::functional::cross_entropy (mean over the batch) for reference. */
int32_t ltt_cross_entropy(const float *logits, int64_t n, int64_t c, const int64_t *y, float *loss_out, char **err);

#ifdef __cplusplus
}
#endif
#endif
