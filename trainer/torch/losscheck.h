/*
 * losscheck.h: the training loss of the shim (loss.hpp) on its own, for
 * the tests of internal/shimloss; defined in shim.cpp, so a shim library
 * has it too, but no part of shim.h's ABI (LT_ABI_VERSION does not cover
 * it, the lazy loader does not list it: internal/shimloss looks it up,
 * trainer/torch's LossCheckFuncs). Same conventions as shim.h.
 */
#ifndef LCL_TORCH_LOSSCHECK_H
#define LCL_TORCH_LOSSCHECK_H

#include <stdint.h>

#include "shim.h"

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

/* The types of the two, for the callers that look them up. */
typedef int32_t (*ltt_loss_fn)(const float *, int64_t, int64_t, const int64_t *, const int64_t *, double, const float *,
                               const float *, lt_coefs, const float *, const float *, int64_t, const float *,
                               const float *, int32_t, float *, float *, char **);
typedef int32_t (*ltt_cross_entropy_fn)(const float *, int64_t, int64_t, const int64_t *, float *, char **);

#ifdef __cplusplus
}
#endif
#endif
