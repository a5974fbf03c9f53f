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
 * Every constant below is the binding's too: trainer/torch checks its Go
 * mirrors against them when it compiles (abi.go).
 *
 * Sections: runtime, tensors, models, state, optimizers, process groups,
 * the engine (training steps and evaluation), devices.
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

#define LT_ABI_VERSION 16

typedef struct lt_model lt_model;
typedef struct lt_optim lt_optim;
typedef struct lt_state lt_state;
typedef struct lt_tensor lt_tensor;
typedef struct lt_pg lt_pg;
typedef struct lt_engine lt_engine;

/* Architecture graphs: lt_model_new builds a network from a tree of nodes
   given in pre-order (each node is followed by the subtrees of its
   n_children children). The root is a transparent sequence of exactly two
   children: the features (input to the penultimate vector) and the head
   (that vector to the logits). A named node is a module of that name inside
   its nearest named ancestor; an unnamed node is transparent. Node kinds: */
enum {
	LT_SEQ = 0,      /* children in order */
	LT_CONV = 1,     /* Conv2d(in, out, (kh,kw), (sh,sw), (ph,pw), groups, bias) */
	LT_BN = 2,       /* BatchNorm2d(out; eps, momentum); BatchNorm1d on an N x out input */
	LT_LINEAR = 3,   /* Linear(in, out, bias) */
	LT_RELU = 4,
	LT_MAXPOOL = 5,  /* (kh,kw), (sh,sw), (ph,pw); flags & LT_POOL_CEIL */
	LT_AVGPOOL = 6,  /* the same; flags & LT_POOL_EXCLUDE_PAD */
	LT_GAP = 7,      /* adaptive average pool to 1x1 */
	LT_FLATTEN = 8,
	LT_DROPOUT = 9,  /* p, in training only */
	LT_SIGMOID = 10,
	LT_SUM = 11,     /* children on the same input, summed; child 0 times scale */
	LT_CAT = 12,     /* children on the same input, concatenated along dim 1 */
	LT_MUL = 13,     /* children on the same input, multiplied (broadcasting) */
	LT_IDENTITY = 14,
	LT_PRELU = 15    /* PReLU(out slopes, one per channel, starting at 0.25) */
};

/* Pool flags: ceil_mode; count_include_pad = false (average pools). */
enum { LT_POOL_CEIL = 1, LT_POOL_EXCLUDE_PAD = 2 };

/* Initialisation of a conv or linear node (batch norm: weight 1, bias 0). */
enum { LT_INIT_DEFAULT = 0, LT_INIT_KAIMING_FAN_OUT = 1, LT_INIT_KAIMING_FAN_IN = 2, LT_INIT_ZERO_BIAS = 3 };

/* Element types of state tensors and staged batches. */
enum { LT_DTYPE_F32 = 0, LT_DTYPE_I64 = 1, LT_DTYPE_F64 = 2, LT_DTYPE_F16 = 3, LT_DTYPE_I32 = 4, LT_DTYPE_U8 = 5, LT_DTYPE_BF16 = 6 };

/* Precisions of the engine's forward passes (autocast). */
enum { LT_FP32 = 0, LT_BF16 = 1, LT_FP16 = 2 };

typedef struct {
	int32_t op;
	const char *name; /* NULL or "": transparent */
	int32_t n_children;
	int32_t in, out;
	int32_t kh, kw, sh, sw, ph, pw; /* stride 0: 1 for conv, the kernel for pools */
	int32_t groups;                 /* 0: 1 */
	int32_t bias, flags, init;
	double eps, momentum; /* 0: PyTorch's 1e-5 and 0.1 */
	double p, scale;      /* dropout probability; sum: factor of child 0 (0: 1) */
} lt_node;

/* Loss coefficients of one training step. */
typedef struct {
	float soft;     /* soft-target CE against rows of the target matrix */
	float hard;     /* CE against the one-hot label */
	float kd;       /* alpha of the distillation term alpha*T^2*KL(teacher||student) */
	float kd_temp;  /* T */
	float mutual;   /* weight of the mean KL(peer||self) over the other peers */
	float group;    /* weight of the group term -sum_g W[y,g] log (softmax(z) M^T)_g (lt_groups) */
	float cosine;   /* weight of the cosine term sum_c (cos(f, V_c) - cos(V_y, V_c))^2, f the features,
	                   V the model's fixed head (lt_model_fix_head) */
	float consistency; /* weight of sum_l JSD(level l-1's softmax summed into level l's groups, level l's softmax)
	                      over the model's levels (lt_model_add_levels; level 0 the model's own head) */
	float dissimilar;  /* weight of the batch term: over the levels l below the coarsest, the mean over
	                      consecutive examples of different groups of level l of (3 - JSD of their level-l
	                      softmaxes) */
	float geometric;   /* weight of the batch term -sum_l mean_g cos(w_l[g], sum of g's children's rows of
	                      the level below), w the heads' unit weight rows */
} lt_coefs;

/* The class groups of the group term (lt_coefs.group): members is G x C
   (1 where class c belongs to group g, else 0), weights C x G (row y: the
   weight of each group's log-probability for an example of class y). A
   group's probability is the sum of its classes' softmax probabilities;
   MBM's hierarchical cross-entropy is one such pair (plugins/strategy). */
typedef struct {
	lt_tensor *members;
	lt_tensor *weights;
} lt_groups;

/* The mixing of one training step's batch (mixup, CutMix): with lam < 1,
   example i is mixed with example n-1-i (the batch flipped, as timm's
   Mixup): inside the box rows [y0,y1) x columns [x0,x1) when it has an area
   (CutMix: those pixels are the other example's), everywhere as
   lam*x + (1-lam)*x' otherwise (mixup); each peer's loss is then
   lam*loss(its labels) + (1-lam)*loss(the flipped labels), which for the
   soft-target CE is the CE against lam*t + (1-lam)*t'. */
typedef struct {
	double lam;
	int32_t y0, y1, x0, x1;
} lt_mix;

/* ---- Runtime. */
int32_t lt_abi_version(void) LT_NOEXCEPT;
const char *lt_torch_version(void) LT_NOEXCEPT;
/* n <= 0 keeps libtorch's default. */
int32_t lt_set_threads(int32_t n, char **err);
int32_t lt_get_threads(int32_t *out, char **err);
int32_t lt_manual_seed(uint64_t seed, char **err);
/* Statistics of the caching CPU allocator (allocator.hpp): out[0..4] =
   hits, misses, live bytes, peak live bytes, cached free bytes; *installed
   is 0 (and out untouched) when LCL_CPU_ALLOCATOR=system or malloc left
   libtorch's own allocator in place. */
int32_t lt_cpu_alloc_stats(int64_t *out, int32_t *installed, char **err);
/* The process-wide settings (torch.Init), once per process, before models
   are built: cpu_allocator "caching" (lcl's caching allocator and malloc
   tuning), "malloc" (the tuning only) or "system" (libtorch's and glibc's
   defaults, also for NULL or ""); blas_threads > 0 caps a threaded BLAS's
   pool (OpenBLAS), 0 leaves it. Reports whether the caching allocator is in
   place and the BLAS thread count set (0: none). A second call fails. */
int32_t lt_runtime_init(const char *cpu_allocator, int32_t blas_threads, int32_t *allocator_installed,
                        int32_t *blas_set, char **err);

/* ---- Tensors (float32 only: used for target matrices). */
lt_tensor *lt_tensor_new(const float *data, const int64_t *shape, int32_t ndim,
                         const char *device, char **err);
void lt_tensor_free(lt_tensor *t) LT_NOEXCEPT;

/* ---- Models. lt_model_new builds the graph of n_nodes nodes for an input
   of in_c x in_h x in_w and num_classes logits, initialised from libtorch's
   generator. lt_model_load loads a TorchScript module (torch.jit.save) onto
   device; reinit != 0 re-initialises every submodule with a weight the way
   PyTorch's reset_parameters does (a weight of 2+ dimensions Kaiming-uniform
   with a = sqrt(5) and its bias uniform in +-1/sqrt(fan_in); a 1-dimensional
   weight 1 and bias 0). Its penultimate features are its method
   "penultimate" when it has one, else the input of the last aten::linear
   of its inlined forward graph. lt_model_load runs the module once on a
   zero input (eval mode, no gradient) and fails unless it gives num_classes
   logits; lt_model_new relies on the caller's shape checks (trainer/torch's
   Spec.Check) and only checks the tree's structure. */
lt_model *lt_model_new(const lt_node *nodes, int32_t n_nodes, int32_t in_c, int32_t in_h, int32_t in_w,
                       int32_t num_classes, const char *device, char **err);
lt_model *lt_model_load(const char *path, int32_t in_c, int32_t in_h, int32_t in_w, int32_t num_classes,
                        int32_t reinit, const char *device, char **err);
void lt_model_free(lt_model *m) LT_NOEXCEPT;
int32_t lt_model_num_params(lt_model *m, int64_t *out, char **err);
int32_t lt_model_feature_dim(lt_model *m, int64_t *out, char **err);
/* lt_model_fix_head sets the head of m, which must be one linear layer
   (feature_dim -> num_classes), to the rows x cols float32 matrix v (row c:
   class c's vector; rows = num_classes, cols = feature_dim) with a zero
   bias, and stops training both (no gradient; the optimizers and the
   gradient all-reduce skip them). The cosine term of lt_coefs takes V from
   here. Calling it again with the same v changes nothing. */
int32_t lt_model_fix_head(lt_model *m, const float *v, int64_t rows, int64_t cols, char **err);
/* lt_model_add_levels gives m one trainable linear head per level, on the
   head's input features (feature_dim -> groups[l]), registered on the model
   (named level_heads.<l+1>) so that its state, optimizers, gradient
   all-reduce, checkpoints and moving averages carry them; its forward and
   evaluation do not use them. group is n_levels x num_classes (row l: the
   group of each class at level l, in [0, groups[l])), each level nested in
   the next. Call it once, on a new model, before anything reads its state. */
int32_t lt_model_add_levels(lt_model *m, const int32_t *group, const int32_t *groups, int32_t n_levels, char **err);
/* Converts a model's 4-d parameters and buffers to channels-last (before
   creating its optimizer); its state still reads and writes in NCHW order. */
int32_t lt_model_channels_last(lt_model *m, char **err);
/* ema <- decay*ema + (1-decay)*m over every parameter and buffer: timm's
   ModelEmaV2.update. Both models have the same state (names and shapes). */
int32_t lt_model_ema_update(lt_model *ema, lt_model *m, double decay, char **err);

/* ---- State: the named tensors of a model (its parameters, then its
   buffers, torchvision names) or of an optimizer (see each optimizer).
   lt_model_state and lt_optim_state return the owner's table, which lives
   as long as the owner; the table's tensors are read and written in place,
   with element types LT_DTYPE_F32 ... LT_DTYPE_BF16 and at most 8 dimensions. */
lt_state *lt_model_state(lt_model *m) LT_NOEXCEPT;
lt_state *lt_optim_state(lt_optim *o) LT_NOEXCEPT;
int32_t lt_state_count(lt_state *s, int32_t *out, char **err);
/* Tensor i: its name (valid while the owner lives), element type, shape
   (ndim values, at most 8) and size in bytes. */
int32_t lt_state_info(lt_state *s, int32_t i, const char **name, int32_t *dtype, int64_t *shape, int32_t *ndim,
                      int64_t *nbytes, char **err);
/* Copies tensor i (nbytes, exactly its size) to dst / from src. */
int32_t lt_state_read(lt_state *s, int32_t i, void *dst, int64_t nbytes, char **err);
int32_t lt_state_write(lt_state *s, int32_t i, const void *src, int64_t nbytes, char **err);

/* ---- Optimizers over all parameters of m. An engine's train step updates
   each with its learning rate (lt_engine_train). lt_optim_new creates the
   optimizer of rule kind (optim.hpp's lts::Kind, numbered from 0: sgd),
   which must be called name in the shim
   (the caller's numbering is checked against the shim's that way, so a
   new rule changes no declaration here), with its n_params parameters v in
   the rule's order. Each rule's parameters, checks and state tensors (the
   table lt_optim_state returns) are documented at the rule in optim.hpp;
   the torch.optim rules are PyTorch's Python code op for op, bit-identical
   on the same libtorch. */
lt_optim *lt_optim_new(lt_model *m, int32_t kind, const char *name, const double *v, int32_t n_params,
                       char **err);
void lt_optim_free(lt_optim *o) LT_NOEXCEPT;
/* Gradient clipping by norm before each update of o (max_norm <= 0: none):
   torch.nn.utils.clip_grad_norm_(parameters, max_norm), after the fp16 loss
   scale is undone and (data-parallel) the gradients are summed. */
int32_t lt_optim_set_clip_norm(lt_optim *o, double max_norm, char **err);

/* ---- Data parallelism over a c10d process group (dist.cpp).
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
   like the others; prefix namespaces this group's keys in the store. bind
   is the IP address rank 0's store listens on (NULL or "": every
   interface, libtorch's default). */
lt_pg *lt_pg_new(const char *backend, const char *addr, int32_t port, int32_t rank, int32_t size,
                 int64_t timeout_ms, const char *iface, int32_t agent_store, const char *prefix, const char *bind,
                 char **err);
void lt_pg_free(lt_pg *g) LT_NOEXCEPT;
/* Makes the collective in progress (and every later one) fail with why; safe
   to call from any thread (e.g. on cancellation), but not concurrently with
   or after lt_pg_free (the caller orders the two). */
int32_t lt_pg_abort(lt_pg *g, const char *why, char **err);
/* Overwrites the parameters and buffers (buffers_only: only the buffers)
   of m with rank 0's. */
int32_t lt_pg_broadcast_model(lt_pg *g, lt_model *m, int32_t buffers_only, char **err);
/* Overwrites the state of o (its lt_optim_state on o's device) with rank 0's. */
int32_t lt_pg_broadcast_optim(lt_pg *g, lt_optim *o, char **err);
/* Sums v (n doubles) over the group, in place. */
int32_t lt_pg_allreduce_f64(lt_pg *g, double *v, int64_t n, char **err);
/* Overwrites buf (n bytes) with rank 0's. */
int32_t lt_pg_broadcast_bytes(lt_pg *g, void *buf, int64_t n, char **err);
/* Build facts: the data-parallel backends compiled in, LT_DIST_GLOO |
   LT_DIST_NCCL (0: the c10d part is a stub, see build-shim.sh). */
#define LT_DIST_GLOO 1
#define LT_DIST_NCCL 2
int32_t lt_has_dist(void) LT_NOEXCEPT;

/* ---- The engine (engine.hpp): every training step and evaluation runs
   through one, on one device, with staged input, mixed precision and
   metrics that stay on the device. */
typedef struct {
	int32_t precision;     /* LT_FP32, LT_BF16 or LT_FP16: autocast of the forward passes */
	int32_t channels_last; /* inputs in the channels-last memory format */
	/* LT_DTYPE_U8 inputs are normalised on the device: x' = (x/255 - mean[c]) / std[c]. */
	int32_t norm_channels;
	float mean[4], std[4];
} lt_engine_opts;

/* Batches are staged in order (a FIFO of at most 2): lt_engine_put copies
   a batch (dtype LT_DTYPE_F32: already normalised; LT_DTYPE_U8: normalised on the
   device) of n examples, with n labels y or none (y NULL: evaluation only)
   and n per-example weights or none, into pinned host memory and starts its
   copy to the device on a side stream without waiting (CUDA), so batch i+1
   travels while step i runs; lt_engine_train and lt_engine_eval consume the
   oldest staged batch. Nothing in lt_engine_train waits for the device
   except the fp16 skip decision (loss_scale > 0, as GradScaler.step) and a
   group's collectives; the loss and top-1 hits accumulate on the device
   until lt_engine_metrics reads them. */
lt_engine *lt_engine_new(const char *device, const lt_engine_opts *o, char **err);
void lt_engine_free(lt_engine *e) LT_NOEXCEPT;
int32_t lt_engine_put(lt_engine *e, const void *x, int32_t dtype, int64_t n, int64_t c, int64_t h, int64_t w,
                      const int64_t *y, const float *weights, char **err);
/* One training step of k peers on the oldest staged batch: forward of
   every peer (and of the frozen teacher when coefs.kd != 0), the loss of
   each peer (soft-target CE against the rows of targets, a C x C matrix, or
   one-hot rows when NULL; weighted by the batch's weights when it has
   them), one backward, an update of each optimizer at learning rate lr.
   With g not NULL the step is data-parallel: the staged batch is this
   rank's slice (n may be 0) of a global batch split over the ranks of g,
   the batch loss is normalised by the global example count (or the global
   sum of weights), the gradients are summed over the ranks in buckets
   between the backward pass and the update, and the buffers (batch-norm
   statistics) are taken from rank 0 before the forward pass, so every rank
   applies the update a single process would have made on the global batch
   (up to batch-norm statistics, which are per rank, and dropout masks); a
   failed data-parallel step leaves the models as they were. loss_scale > 0
   scales the loss, unscales the gradients and skips the update of a peer
   whose gradients are not finite; *found_inf (may be NULL) receives the
   number of skipped peers. mix (NULL: none) mixes the batch first (lt_mix);
   class_probs: see lt_engine_class_probs; groups (NULL: none) are the
   class groups of the group term, needed when coefs.group != 0;
   the top-1 hits count against the batch's own labels. */
int32_t lt_engine_train(lt_engine *e, lt_pg *g, lt_model **models, lt_optim **optims, int32_t k, lt_model *teacher,
                        lt_tensor *targets, lt_coefs coefs, const lt_groups *groups, const lt_mix *mix,
                        int32_t class_probs, double lr,
                        double loss_scale, int32_t *found_inf, char **err);
/* With class_probs set, lt_engine_train also sums, over the batch's examples
   peer 0 classifies correctly (argmax of its logits = label), their softmax
   rows by label, and counts them by label, on the device; lt_engine_class_probs
   reads (sums: c*c float64, row = label; counts: c) and resets those sums.
   Without a step that set it, it reads zeros. */
int32_t lt_engine_class_probs(lt_engine *e, int64_t c, double *sums, int64_t *counts, char **err);
/* Reads and resets the sums since the last call, per peer: loss_sum[k]
   (batch loss times examples), correct[k]; *n the examples (of the global
   batches with a group). Waits for the device. */
int32_t lt_engine_metrics(lt_engine *e, int32_t k, double *loss_sum, int64_t *correct, int64_t *n, char **err);
/* Evaluation (eval mode, no grad, the engine's precision) of m on the
   oldest staged batch: with labels, top-1 and top-5 hits and the summed
   cross-entropy (top1 NULL: not computed); logits_out (n*num_classes) and
   features_out (n*feature_dim) are filled when not NULL. With 0 < k <=
   num_classes, topk_out (n*k, when not NULL) receives each example's k
   classes of highest logit, highest first, and crm_topk_out (n*k, when not
   NULL) its k classes of least conditional risk sum_i softmax(z)_i
   cost[i][j], least first (cost: a num_classes x num_classes float32
   tensor on the engine's device). */
int32_t lt_engine_eval(lt_engine *e, lt_model *m, int64_t *top1, int64_t *top5, double *loss_sum,
                       float *logits_out, float *features_out, int32_t k, int32_t *topk_out, lt_tensor *cost,
                       int32_t *crm_topk_out, char **err);

/* ---- Devices. */
int32_t lt_cuda_device_count(int32_t *out, char **err);
/* cuDNN autotuning (benchmark mode) and TF32 for cuBLAS matmuls and cuDNN
   convolutions: torch.backends.cudnn.benchmark and the allow_tf32 flags. */
int32_t lt_set_cuda_flags(int32_t cudnn_benchmark, int32_t tf32, char **err);
/* Waits for the device's queued work. */
int32_t lt_synchronize(const char *device, char **err);
/* Peak bytes allocated and reserved by the device's caching allocator
   since the last reset (reset != 0 resets after reading); -1 when this
   build cannot tell (CPU, or a libtorch without the device-allocator API). */
int32_t lt_device_memory(const char *device, int32_t reset, int64_t *peak_allocated, int64_t *peak_reserved,
                         char **err);

#ifdef __cplusplus
}
#endif
#endif
