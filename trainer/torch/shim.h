/*
 * shim.h: lcl's stable C ABI over libtorch's C++ API.
 *
 * Rules every function follows:
 *  - handles are opaque; the caller frees each with its *_free function;
 *  - every body runs inside try/catch; a failure returns -1 (or NULL) and,
 *    when err is not NULL, stores a malloc'd message in *err that the
 *    caller frees with free(); the error travels with the call that failed;
 *    every function that can fail returns its results through
 *    out-parameters, so the return value is only the status;
 *  - arrays passed in are only read during the call and never retained;
 *  - the *_free functions never fail: an exception while freeing is
 *    swallowed (there is nothing a caller could do about it).
 *
 * The ABI is versioned by LT_ABI_VERSION; bump it on any incompatible change
 * so an lcl binary refuses a shim library built from another version.
 * lt_abi_version and lt_torch_version never change and never fail: a binding
 * calls them before anything else to learn whether it may call the rest.
 */
#ifndef LCL_TORCH_SHIM_H
#define LCL_TORCH_SHIM_H

#include <stdint.h>

#ifdef __cplusplus
#define LT_NOEXCEPT noexcept
extern "C" {
#else
#define LT_NOEXCEPT
#endif

#define LT_ABI_VERSION 4

typedef struct lt_model lt_model;
typedef struct lt_optim lt_optim;
typedef struct lt_tensor lt_tensor;
typedef struct lt_pg lt_pg;

/* Model kinds. */
enum { LT_MLP = 0, LT_CNN = 1, LT_RESNET = 2, LT_WRN = 3 };

/* lt_spec describes an architecture; the C++ side builds it with torch::nn. */
typedef struct {
	int32_t kind;
	int32_t in_c, in_h, in_w; /* input shape */
	int32_t num_classes;
	/* MLP: hidden sizes; CNN: channels of the conv stages then fc width. */
	int32_t hidden[8];
	int32_t n_hidden;
	/* ResNet: bottleneck blocks (0 basic, 1 bottleneck), blocks per stage,
	   base width (64), CIFAR stem (3x3 conv, no max-pool). */
	int32_t bottleneck;
	int32_t layers[4];
	int32_t n_layers;
	int32_t width;
	int32_t cifar_stem;
	/* WRN: depth and widen factor. */
	int32_t depth, widen;
	float dropout;
	/* CNN: 1 builds the conv stages without batch norm (conv with bias). */
	int32_t no_bn;
} lt_spec;

/* Loss coefficients of one training step. */
typedef struct {
	float soft;     /* soft-target CE against rows of the target matrix */
	float hard;     /* CE against the one-hot label */
	float kd;       /* alpha of the distillation term alpha*T^2*KL(teacher||student) */
	float kd_temp;  /* T */
	float mutual;   /* weight of the mean KL(peer||self) over the other peers */
} lt_coefs;

int32_t lt_abi_version(void) LT_NOEXCEPT;
const char *lt_torch_version(void) LT_NOEXCEPT;
/* n <= 0 keeps libtorch's default. */
int32_t lt_set_threads(int32_t n, char **err);
int32_t lt_get_threads(int32_t *out, char **err);
int32_t lt_manual_seed(uint64_t seed, char **err);
int32_t lt_cuda_device_count(int32_t *out, char **err);
/* Statistics of the caching CPU allocator (allocator.hpp): out[0..4] =
   hits, misses, live bytes, peak live bytes, cached free bytes; *installed
   is 0 (and out untouched) when LCL_CPU_ALLOCATOR=system or malloc left
   libtorch's own allocator in place. */
int32_t lt_cpu_alloc_stats(int64_t *out, int32_t *installed, char **err);

/* Tensors (float32 only: used for target matrices). */
lt_tensor *lt_tensor_new(const float *data, const int64_t *shape, int32_t ndim,
                         const char *device, char **err);
void lt_tensor_free(lt_tensor *t) LT_NOEXCEPT;

/* Models. */
lt_model *lt_model_new(const lt_spec *spec, const char *device, char **err);
void lt_model_free(lt_model *m) LT_NOEXCEPT;
int32_t lt_model_num_params(lt_model *m, int64_t *out, char **err);
int32_t lt_model_feature_dim(lt_model *m, int64_t *out, char **err);

/* State (parameters then buffers, torchvision names). dtype codes:
   0 float32, 1 int64, 2 float64, 3 float16, 4 int32, 5 uint8, 6 bfloat16. */
int32_t lt_model_state_count(lt_model *m, int32_t *out, char **err);
int32_t lt_model_state_info(lt_model *m, int32_t i, const char **name, int32_t *dtype,
                            int64_t *shape, int32_t *ndim, int64_t *nbytes, char **err);
int32_t lt_model_state_read(lt_model *m, int32_t i, void *dst, int64_t nbytes, char **err);
int32_t lt_model_state_write(lt_model *m, int32_t i, const void *src, int64_t nbytes, char **err);

/* SGD with momentum, Nesterov and weight decay over all parameters of m;
   the same update as torch.optim.SGD with dampening 0. */
lt_optim *lt_optim_new(lt_model *m, double momentum, double weight_decay, int32_t nesterov,
                       char **err);
void lt_optim_free(lt_optim *o) LT_NOEXCEPT;
int32_t lt_optim_state_count(lt_optim *o, int32_t *out, char **err);
int32_t lt_optim_state_info(lt_optim *o, int32_t i, const char **name, int32_t *dtype,
                            int64_t *shape, int32_t *ndim, int64_t *nbytes, char **err);
int32_t lt_optim_state_read(lt_optim *o, int32_t i, void *dst, int64_t nbytes, char **err);
int32_t lt_optim_state_write(lt_optim *o, int32_t i, const void *src, int64_t nbytes, char **err);

/* One training step of k peers in one crossing: forward of every peer (and of
   the frozen teacher when coefs.kd != 0), the loss of each peer, one backward,
   an SGD step of each optimizer at learning rate lr.
   x: n*c*h*w float32; y: n labels; targets: C x C matrix or NULL (one-hot);
   weights: n per-example weights or NULL. Outputs per peer: loss_out[k]
   (the batch loss) and correct_out[k] (top-1 hits on the batch). */
int32_t lt_train_step(lt_model **models, lt_optim **optims, int32_t k, lt_model *teacher,
                      const float *x, int64_t n, int64_t c, int64_t h, int64_t w,
                      const int64_t *y, lt_tensor *targets, const float *weights,
                      lt_coefs coefs, double lr, float *loss_out, int64_t *correct_out,
                      char **err);

/* Data parallelism over a c10d process group (dist.cpp).
   lt_pg_new joins a group of size processes: a TCPStore rendezvous at
   addr:port (rank 0 hosts it), then a Gloo process group ("gloo"; "nccl"
   needs a CUDA build with LT_NCCL). iface names the network interface Gloo
   binds (NULL or "": 127.0.0.1 when addr is a loopback address, else the
   address this host's name resolves to). Every collective fails after
   timeout_ms instead of waiting for a stalled peer; a heartbeat through the
   store fails it within seconds when a peer's process dies (naming that
   rank). Errors name this process's rank. A group is used by one thread at a time, and every rank
   must make the same calls in the same order. agent_store: the launcher
   (torchrun) already hosts the store at addr:port, so rank 0 connects to it
   like the others; prefix namespaces this group's keys in the store. */
lt_pg *lt_pg_new(const char *backend, const char *addr, int32_t port, int32_t rank, int32_t size,
                 int64_t timeout_ms, const char *iface, int32_t agent_store, const char *prefix, char **err);
void lt_pg_free(lt_pg *g) LT_NOEXCEPT;
/* Makes the collective in progress (and every later one) fail with why; safe
   to call from any thread (e.g. on cancellation), but not concurrently with
   or after lt_pg_free (the caller orders the two). */
int32_t lt_pg_abort(lt_pg *g, const char *why, char **err);
/* Overwrites the parameters and buffers (buffers_only: only the buffers)
   of m with rank 0's. */
int32_t lt_pg_broadcast_model(lt_pg *g, lt_model *m, int32_t buffers_only, char **err);
/* Overwrites the momentum buffers of o with rank 0's. */
int32_t lt_pg_broadcast_optim(lt_pg *g, lt_optim *o, char **err);
/* Sums v (n doubles) over the group, in place. */
int32_t lt_pg_allreduce_f64(lt_pg *g, double *v, int64_t n, char **err);
/* Overwrites buf (n bytes) with rank 0's. */
int32_t lt_pg_broadcast_bytes(lt_pg *g, void *buf, int64_t n, char **err);

/* lt_train_step on this rank's slice (n may be 0) of a global batch split
   over the ranks of g: the batch loss is normalised by the global example
   count (or the global sum of weights), the gradients are summed over the
   ranks in buckets between the backward pass and the SGD update, and the
   buffers (batch-norm statistics) are taken from rank 0 before the forward
   pass, so every rank applies the update a single process would have made on
   the global batch (up to batch-norm statistics, which are per rank, and
   dropout masks). loss_out, correct_out and *n_out are those of the global
   batch. With g NULL it is lt_train_step. */
int32_t lt_train_step_pg(lt_pg *g, lt_model **models, lt_optim **optims, int32_t k, lt_model *teacher,
                         const float *x, int64_t n, int64_t c, int64_t h, int64_t w, const int64_t *y,
                         lt_tensor *targets, const float *weights, lt_coefs coefs, double lr, float *loss_out,
                         int64_t *correct_out, int64_t *n_out, char **err);

/* Evaluation (eval mode, no grad): top-1 and top-5 hits and the summed
   cross-entropy; logits_out (n*num_classes) and features_out
   (n*feature_dim) are filled when not NULL. */
int32_t lt_eval(lt_model *m, const float *x, int64_t n, int64_t c, int64_t h, int64_t w,
                const int64_t *y, int64_t *top1, int64_t *top5, double *loss_sum,
                float *logits_out, float *features_out, char **err);

/* The training loss of lt_train_step for one model's n x c logits, with its
   gradient with respect to those logits: for tests and tools. teacher_logits
   (n x c) is needed when coefs.kd != 0; peer_logits holds the logits of the
   n_peers other peers (n_peers x n x c, treated as constants) for the mutual
   term. grad_out (n x c) may be NULL. */
int32_t lt_loss(const float *logits, int64_t n, int64_t c, const int64_t *y,
                lt_tensor *targets, const float *weights, lt_coefs coefs,
                const float *teacher_logits, const float *peer_logits, int32_t n_peers,
                float *loss_out, float *grad_out, char **err);

/* torch::nn::functional::cross_entropy (mean over the batch) for reference. */
int32_t lt_cross_entropy(const float *logits, int64_t n, int64_t c, const int64_t *y,
                         float *loss_out, char **err);

#ifdef __cplusplus
}
#endif
#endif
