//go:build cgo && !ltshim

// shim.cpp: the C ABI of shim.h. The shim is split by concern into headers
// (common, models, state, step) but compiled as this one translation unit:
// parsing <torch/torch.h> costs about 8 s per translation unit, and cgo
// rebuilds every C++ file of the package when any file changes, so four
// units would cost four parses on every edit. dist.cpp (c10d) is separate
// because its headers are heavy and it rarely changes.
#include <atomic>
#include <mutex>

#include "allocator.hpp"
#include "blas.hpp"
#include "common.hpp"
#include "models.hpp"
#include "state.hpp"
#include "step.hpp"
#include "engine.hpp"
#include "scriptcheck.hpp" // lt_script_check: scriptcheck.h

// lts holds the shim's internals; nothing in it is part of the C ABI.
using namespace lts;

namespace {
// The process-wide settings of lt_runtime_init (torch.Init): nothing is set
// when the library loads, so a program that embeds the binding gets
// libtorch's defaults unless it asks.
std::mutex runtime_mu;
bool runtime_done = false;
std::atomic<bool> cpu_allocator_installed{false};
} // namespace

extern "C" {

int32_t lt_abi_version(void) noexcept { return LT_ABI_VERSION; }
const char *lt_torch_version(void) noexcept { return TORCH_VERSION; }
int32_t lt_set_threads(int32_t n, char **err) {
	LT_TRY
	if (n > 0) torch::set_num_threads(n);
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_get_threads(int32_t *out, char **err) {
	LT_TRY
	*out = (int32_t)torch::get_num_threads();
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_manual_seed(uint64_t seed, char **err) {
	LT_TRY
	torch::manual_seed(seed);
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_cuda_device_count(int32_t *out, char **err) {
	LT_TRY
	*out = (int32_t)torch::cuda::device_count();
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_runtime_init(const char *cpu_allocator, int32_t blas_threads, int32_t *allocator_installed,
                        int32_t *blas_set, char **err) {
	LT_TRY
	std::lock_guard<std::mutex> l(runtime_mu);
	if (runtime_done) throw std::logic_error("the runtime is set once per process (torch.Init was called before)");
	std::string mode = cpu_allocator && *cpu_allocator ? cpu_allocator : "system";
	cpu_allocator_installed = install_cpu_allocator(mode);
	*allocator_installed = cpu_allocator_installed ? 1 : 0;
	*blas_set = limit_blas_threads(blas_threads);
	runtime_done = true;
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_cpu_alloc_stats(int64_t *out, int32_t *installed, char **err) {
	LT_TRY
	*installed = cpu_allocator_installed ? 1 : 0;
	if (!cpu_allocator_installed) return 0;
	auto st = CachingCPUAllocator::instance()->stats();
	out[0] = st.hits;
	out[1] = st.misses;
	out[2] = st.live_bytes;
	out[3] = st.peak_bytes;
	out[4] = st.cached_bytes;
	return 0;
	LT_CATCH(err, -1)
}

lt_tensor *lt_tensor_new(const float *data, const int64_t *shape, int32_t ndim, const char *device, char **err) {
	LT_TRY
	std::vector<int64_t> s(shape, shape + ndim);
	auto t = blob(data, s).clone().to(torch::Device(device));
	return new lt_tensor{t};
	LT_CATCH(err, nullptr)
}
void lt_tensor_free(lt_tensor *t) noexcept { delete t; }

// finish_model wraps a built network into the handle the C ABI returns.
static lt_model *finish_model(std::shared_ptr<Net> net, torch::Device dev, int64_t num_classes) {
	auto m = std::make_unique<lt_model>();
	m->device = dev;
	net->to(m->device);
	m->net = net;
	m->num_classes = num_classes;
	for (auto &p : net->named_parameters(true)) m->state.push_back({p.key(), p.value()});
	for (auto &b : net->named_buffers(true)) m->state.push_back({b.key(), b.value()});
	return m.release();
}

lt_model *lt_model_new(const lt_node *nodes, int32_t n_nodes, int32_t in_c, int32_t in_h, int32_t in_w,
                       int32_t num_classes, const char *device, char **err) {
	LT_TRY
	if (in_c <= 0 || in_h <= 0 || in_w <= 0 || num_classes < 1) throw std::invalid_argument("bad input shape or class count");
	torch::Device dev(device);
	return finish_model(std::make_shared<GraphNet>(nodes, n_nodes), dev, num_classes);
	LT_CATCH(err, nullptr)
}

lt_model *lt_model_load(const char *path, int32_t in_c, int32_t in_h, int32_t in_w, int32_t num_classes,
                        int32_t reinit, const char *device, char **err) {
	LT_TRY
	if (in_c <= 0 || in_h <= 0 || in_w <= 0 || num_classes < 1) throw std::invalid_argument("bad input shape or class count");
	torch::Device dev(device);
	auto net = std::make_shared<ScriptNet>(path, dev, reinit != 0);
	{
		// One zero image in eval mode: the output must be 1 x num_classes,
		// the features a vector.
		torch::NoGradGuard ng;
		net->eval();
		auto x = torch::zeros({1, in_c, in_h, in_w}, torch::TensorOptions().device(dev));
		auto z = net->forward(x);
		if (z.dim() != 2 || z.size(0) != 1 || z.size(1) != num_classes)
			throw std::invalid_argument("TorchScript model " + std::string(path) + " gives " + c10::str(z.sizes()) +
			                            " for one " + std::to_string(in_c) + "x" + std::to_string(in_h) + "x" +
			                            std::to_string(in_w) + " input, want [1, " + std::to_string(num_classes) + "]");
		// Features are optional (only CN and feature export need them): a
		// module without a linear layer or a penultimate method still
		// trains, and says why when asked for features.
		try {
			auto f = net->features(x);
			if (f.dim() != 2 || f.size(0) != 1)
				throw std::invalid_argument("penultimate features are " + c10::str(f.sizes()) +
				                            " for one input, want [1, D]");
			net->feature_dim = f.size(1);
		} catch (const std::exception &e) {
			net->no_features = std::string("TorchScript model ") + path + ": " +
			                   (dynamic_cast<const c10::Error *>(&e) ? static_cast<const c10::Error &>(e).what_without_backtrace() : e.what());
		}
		net->train();
	}
	return finish_model(net, dev, num_classes);
	LT_CATCH(err, nullptr)
}
void lt_model_free(lt_model *m) noexcept { delete m; }

int32_t lt_model_num_params(lt_model *m, int64_t *out, char **err) {
	LT_TRY
	int64_t n = 0;
	for (auto &p : m->net->parameters()) n += p.numel();
	*out = n;
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_model_feature_dim(lt_model *m, int64_t *out, char **err) {
	LT_TRY
	*out = m->net->feature_dim;
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_model_state_count(lt_model *m, int32_t *out, char **err) {
	LT_TRY
	*out = (int32_t)m->state.size();
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_model_state_info(lt_model *m, int32_t i, const char **name, int32_t *dtype, int64_t *shape, int32_t *ndim,
                            int64_t *nbytes, char **err) {
	LT_TRY
	return entry_info(m->state, i, name, dtype, shape, ndim, nbytes);
	LT_CATCH(err, -1)
}
int32_t lt_model_state_read(lt_model *m, int32_t i, void *dst, int64_t nbytes, char **err) {
	LT_TRY
	entry_read(m->state, i, dst, nbytes);
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_model_state_write(lt_model *m, int32_t i, const void *src, int64_t nbytes, char **err) {
	LT_TRY
	entry_write(m->state, i, src, nbytes);
	return 0;
	LT_CATCH(err, -1)
}

lt_optim *lt_optim_new(lt_model *m, double momentum, double weight_decay, int32_t nesterov, char **err) {
	LT_TRY
	if (nesterov && momentum <= 0) throw std::invalid_argument("Nesterov momentum requires a momentum > 0");
	auto o = std::make_unique<lt_optim>();
	o->momentum = momentum;
	o->wd = weight_decay;
	o->nesterov = nesterov != 0;
	for (auto &p : m->net->named_parameters(true)) {
		o->params.push_back({p.key(), p.value()});
		if (momentum != 0)
			o->bufs.push_back({p.key() + ".momentum_buffer", torch::zeros_like(p.value()).detach()});
	}
	return o.release();
	LT_CATCH(err, nullptr)
}
lt_optim *lt_optim_new_rmsprop(lt_model *m, double decay, double eps, double momentum, double weight_decay,
                               char **err) {
	LT_TRY
	if (!(decay >= 0 && decay < 1) || !(eps > 0) || momentum < 0 || weight_decay < 0)
		throw std::invalid_argument("RMSProp needs 0 <= decay < 1, eps > 0, momentum >= 0 and weight decay >= 0");
	auto o = std::make_unique<lt_optim>();
	o->rmsprop = true;
	o->rho = decay;
	o->eps = eps;
	o->momentum = momentum;
	o->wd = weight_decay;
	o->nesterov = false;
	auto named = m->net->named_parameters(true);
	for (auto &p : named) {
		o->params.push_back({p.key(), p.value()});
		// TensorFlow 1 starts the mean squares at 1.
		o->bufs.push_back({p.key() + ".square_avg", torch::ones_like(p.value()).detach()});
	}
	if (momentum != 0)
		for (auto &p : named) o->bufs.push_back({p.key() + ".momentum_buffer", torch::zeros_like(p.value()).detach()});
	return o.release();
	LT_CATCH(err, nullptr)
}
void lt_optim_free(lt_optim *o) noexcept { delete o; }
int32_t lt_optim_state_count(lt_optim *o, int32_t *out, char **err) {
	LT_TRY
	*out = (int32_t)o->bufs.size();
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_optim_state_info(lt_optim *o, int32_t i, const char **name, int32_t *dtype, int64_t *shape, int32_t *ndim,
                            int64_t *nbytes, char **err) {
	LT_TRY
	return entry_info(o->bufs, i, name, dtype, shape, ndim, nbytes);
	LT_CATCH(err, -1)
}
int32_t lt_optim_state_read(lt_optim *o, int32_t i, void *dst, int64_t nbytes, char **err) {
	LT_TRY
	entry_read(o->bufs, i, dst, nbytes);
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_optim_state_write(lt_optim *o, int32_t i, const void *src, int64_t nbytes, char **err) {
	LT_TRY
	entry_write(o->bufs, i, src, nbytes);
	return 0;
	LT_CATCH(err, -1)
}

} // extern "C"

extern "C" {

int32_t lt_train_step(lt_model **models, lt_optim **optims, int32_t k, lt_model *teacher, const float *x, int64_t n,
                      int64_t c, int64_t h, int64_t w, const int64_t *y, lt_tensor *targets, const float *weights,
                      lt_coefs coefs, double lr, float *loss_out, int64_t *correct_out, char **err) {
	LT_TRY
	if (n < 1) throw std::invalid_argument("train step on an empty batch");
	train_step_host(nullptr, models, optims, k, teacher, x, n, c, h, w, y, targets, weights, coefs, lr, loss_out,
	                correct_out, nullptr);
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_train_step_pg(lt_pg *g, lt_model **models, lt_optim **optims, int32_t k, lt_model *teacher, const float *x,
                         int64_t n, int64_t c, int64_t h, int64_t w, const int64_t *y, lt_tensor *targets,
                         const float *weights, lt_coefs coefs, double lr, float *loss_out, int64_t *correct_out,
                         int64_t *n_out, char **err) {
	LT_TRY
	// A step that fails (a peer died, cancellation) leaves the models as
	// they were: the parameters change only after the last collective, and
	// the buffers the forward pass updated are put back, so a checkpoint
	// written after the failure resumes exactly.
	std::vector<std::pair<Tensor, Tensor>> saved;
	if (g)
		for (int i = 0; i < k; i++)
			for (auto &b : models[i]->net->buffers(true)) saved.push_back({b, b.detach().clone()});
	try {
		train_step_host(g, models, optims, k, teacher, x, n, c, h, w, y, targets, weights, coefs, lr, loss_out,
		                correct_out, n_out);
	} catch (...) {
		torch::NoGradGuard ng;
		for (auto &s : saved) s.first.detach().copy_(s.second);
		throw;
	}
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_pg_broadcast_model(lt_pg *g, lt_model *m, int32_t buffers_only, char **err) {
	LT_TRY
	std::vector<Tensor> ts;
	if (!buffers_only)
		for (auto &p : m->net->parameters(true)) ts.push_back(p);
	for (auto &b : m->net->buffers(true)) ts.push_back(b);
	if (!ts.empty()) ltdist::broadcast(g, ts, "model broadcast");
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_pg_broadcast_optim(lt_pg *g, lt_optim *o, char **err) {
	LT_TRY
	std::vector<Tensor> ts;
	for (auto &b : o->bufs)
		// Adam's step counts stay on the CPU, as torch.optim keeps them: with
		// parameters elsewhere they are not broadcast (NCCL moves device
		// memory only); every rank counts the same steps from the same start.
		if (o->params.empty() || b.t.device() == o->params[0].t.device()) ts.push_back(b.t);
	if (!ts.empty()) ltdist::broadcast(g, ts, "optimizer broadcast");
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_eval(lt_model *m, const float *x, int64_t n, int64_t c, int64_t h, int64_t w, const int64_t *y,
                int64_t *top1, int64_t *top5, double *loss_sum, float *logits_out, float *features_out, char **err) {
	LT_TRY
	c10::InferenceMode im; // no autograd bookkeeping at all (cheaper than NoGradGuard)
	m->net->eval();
	auto X = blob(x, {n, c, h, w}).to(m->device);
	Tensor f;
	auto z = m->net->logits_features(X, features_out ? &f : nullptr);
	if (y) {
		auto Y = torch::from_blob(const_cast<int64_t *>(y), {n}, torch::kInt64).to(m->device);
		lts::eval_figures(z, Y, top1, top5, loss_sum);
	}
	lts::copy_out(z, logits_out);
	lts::copy_out(f, features_out);
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_loss(const float *logits, int64_t n, int64_t c, const int64_t *y, lt_tensor *targets,
                const float *weights, lt_coefs coefs, const float *teacher_logits, const float *peer_logits,
                int32_t n_peers, float *loss_out, float *grad_out, char **err) {
	LT_TRY
	if (n < 1 || c < 1) throw std::invalid_argument("loss of an empty batch");
	if (n_peers < 0 || (n_peers > 0 && !peer_logits)) throw std::invalid_argument("peer logits missing");
	auto Z = blob(logits, {n, c}).clone().requires_grad_(true);
	auto Y = torch::from_blob(const_cast<int64_t *>(y), {n}, torch::kInt64);
	Tensor W;
	if (weights) W = blob(weights, {n});
	Tensor tl;
	if (teacher_logits) tl = blob(teacher_logits, {n, c});
	auto T = target_rows(targets, Y, c, coefs, torch::kCPU);
	// per_example_loss skips the model's own entry (index 0) of the peers'
	// probabilities, as lt_train_step does for each peer.
	std::vector<Tensor> probs;
	if (n_peers > 0) {
		probs.push_back(Tensor());
		for (int32_t j = 0; j < n_peers; j++) probs.push_back(torch::softmax(blob(peer_logits + j * n * c, {n, c}), 1));
	}
	auto loss = reduce(per_example_loss(Z, Y, T, coefs, tl, probs, 0), W);
	loss.backward();
	*loss_out = loss.item<float>();
	if (grad_out) std::memcpy(grad_out, Z.grad().contiguous().data_ptr<float>(), sizeof(float) * n * c);
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_cross_entropy(const float *logits, int64_t n, int64_t c, const int64_t *y, float *loss_out, char **err) {
	LT_TRY
	auto Z = blob(logits, {n, c});
	auto Y = torch::from_blob(const_cast<int64_t *>(y), {n}, torch::kInt64);
	*loss_out = torch::nn::functional::cross_entropy(Z, Y).item<float>();
	return 0;
	LT_CATCH(err, -1)
}

} // extern "C"

// Adam, AdamW, gradient clipping and the weights' moving average (optim.hpp).
extern "C" {

lt_optim *lt_optim_new_adam(lt_model *m, double beta1, double beta2, double eps, double weight_decay,
                            int32_t decoupled, char **err) {
	LT_TRY
	if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) || !(eps >= 0) || !(weight_decay >= 0))
		throw std::invalid_argument("Adam needs 0 <= beta1, beta2 < 1, eps >= 0 and weight decay >= 0");
	auto o = std::make_unique<lt_optim>();
	o->adam = true;
	o->adam_h.beta1 = beta1;
	o->adam_h.beta2 = beta2;
	o->adam_h.eps = eps;
	o->adam_h.wd = weight_decay;
	o->adam_h.decoupled = decoupled != 0;
	o->momentum = 0;
	o->wd = weight_decay;
	o->nesterov = false;
	auto named = m->net->named_parameters(true);
	for (auto &p : named) o->params.push_back({p.key(), p.value()});
	// zeros_like keeps a channels-last parameter's format, as torch.optim's
	// torch.zeros_like(p, memory_format=torch.preserve_format).
	for (auto &p : named) o->bufs.push_back({p.key() + ".exp_avg", torch::zeros_like(p.value()).detach()});
	for (auto &p : named) o->bufs.push_back({p.key() + ".exp_avg_sq", torch::zeros_like(p.value()).detach()});
	for (auto &p : named) o->bufs.push_back({p.key() + ".step", torch::zeros({}, torch::kFloat32)});
	return o.release();
	LT_CATCH(err, nullptr)
}

int32_t lt_optim_set_clip_norm(lt_optim *o, double max_norm, char **err) {
	LT_TRY
	if (std::isnan(max_norm)) throw std::invalid_argument("gradient clipping norm is NaN");
	o->clip = max_norm > 0 ? max_norm : 0;
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_model_ema_update(lt_model *ema, lt_model *m, double decay, char **err) {
	LT_TRY
	if (!(decay >= 0 && decay <= 1)) throw std::invalid_argument("EMA decay outside [0, 1]");
	ema_update(ema->state, m->state, decay);
	return 0;
	LT_CATCH(err, -1)
}

} // extern "C"
