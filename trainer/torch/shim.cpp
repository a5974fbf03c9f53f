//go:build cgo && !ltshim && !ltlazy

// shim.cpp: the C ABI of shim.h, section by section: runtime, tensors,
// models, state, optimizers (optim.hpp's rules), the model and optimizer
// broadcasts of process groups (the rest of them is dist.cpp's), and the
// engine and devices (engine.hpp). The shim is split by concern into headers (common, models,
// state, optim, loss, step, engine) but compiled as this one translation unit:
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
#include "onednn_guard.hpp"
#include "state.hpp"
#include "optim.hpp"
#include "step.hpp"
#include "engine.hpp"
#include "scriptcheck.hpp" // lt_script_load: scriptcheck.h

// lts holds the shim's internals; nothing in it is part of the C ABI.
using namespace lts;

namespace {
// The process-wide settings of lt_runtime_init (torch.Init): nothing is set
// when the library loads, so a program that embeds the binding gets
// libtorch's defaults unless it asks.
std::mutex runtime_mu;
bool runtime_done = false;
std::atomic<bool> cpu_allocator_installed{false};

// finish_model wraps a built network into the handle the C ABI returns.
lt_model *finish_model(std::shared_ptr<Net> net, torch::Device dev, int64_t num_classes) {
	guard_onednn(dev);
	auto m = std::make_unique<lt_model>();
	m->device = dev;
	net->to(m->device);
	m->net = net;
	m->num_classes = num_classes;
	m->index_state();
	return m.release();
}

void check_input(int32_t in_c, int32_t in_h, int32_t in_w, int32_t num_classes) {
	if (in_c <= 0 || in_h <= 0 || in_w <= 0 || num_classes < 1) throw std::invalid_argument("bad input shape or class count");
}

// finish_script checks a TorchScript network once on a zero input (eval
// mode, no gradient: the output must be 1 x num_classes), learns its
// feature width, and wraps it as finish_model does.
lt_model *finish_script(std::shared_ptr<ScriptNet> net, torch::Device dev, int32_t in_c, int32_t in_h, int32_t in_w,
                        int32_t num_classes, const std::string &path) {
	{
		torch::NoGradGuard ng;
		net->eval();
		auto x = torch::zeros({1, in_c, in_h, in_w}, torch::TensorOptions().device(dev));
		auto z = net->forward(x);
		if (z.dim() != 2 || z.size(0) != 1 || z.size(1) != num_classes)
			throw std::invalid_argument("TorchScript model " + path + " gives " + c10::str(z.sizes()) + " for one " +
			                            std::to_string(in_c) + "x" + std::to_string(in_h) + "x" + std::to_string(in_w) +
			                            " input, want [1, " + std::to_string(num_classes) + "]");
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
			net->no_features = "TorchScript model " + path + ": " +
			                   (dynamic_cast<const c10::Error *>(&e) ? static_cast<const c10::Error &>(e).what_without_backtrace() : e.what());
		}
		net->train();
	}
	return finish_model(net, dev, num_classes);
}
} // namespace

extern "C" {

// ---- Runtime.

int32_t lt_abi_version(void) noexcept { return LT_ABI_VERSION; }
const char *lt_torch_version(void) noexcept { return TORCH_VERSION; }
int32_t lt_set_threads(int32_t n, char **err) {
	LT_TRY
	if (n > 0) {
		torch::set_num_threads(n);
		lts::applied_threads() = n;
		lts::wanted_threads().store(n, std::memory_order_release);
	}
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_get_threads(int32_t *out, char **err) {
	LT_TRY_SYNCED
	*out = (int32_t)torch::get_num_threads();
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_manual_seed(uint64_t seed, char **err) {
	LT_TRY_SYNCED
	torch::manual_seed(seed);
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_runtime_init(const char *cpu_allocator, int32_t blas_threads, int32_t *allocator_installed,
                        int32_t *blas_set, char **err) {
	LT_TRY_SYNCED
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
	LT_TRY_SYNCED
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

// ---- Tensors.

lt_tensor *lt_tensor_new(const float *data, const int64_t *shape, int32_t ndim, const char *device, char **err) {
	LT_TRY_SYNCED
	std::vector<int64_t> s(shape, shape + ndim);
	auto t = blob(data, s).clone().to(torch::Device(device));
	return new lt_tensor{t};
	LT_CATCH(err, nullptr)
}
void lt_tensor_free(lt_tensor *t) noexcept { delete t; }

// ---- Models.

lt_model *lt_model_new(const lt_node *nodes, int32_t n_nodes, int32_t in_c, int32_t in_h, int32_t in_w,
                       int32_t num_classes, const char *device, char **err) {
	LT_TRY_SYNCED
	check_input(in_c, in_h, in_w, num_classes);
	torch::Device dev(device);
	return finish_model(std::make_shared<GraphNet>(nodes, n_nodes), dev, num_classes);
	LT_CATCH(err, nullptr)
}

lt_model *lt_model_load(const char *path, int32_t in_c, int32_t in_h, int32_t in_w, int32_t num_classes,
                        int32_t reinit, const char *device, char **err) {
	LT_TRY_SYNCED
	check_input(in_c, in_h, in_w, num_classes);
	torch::Device dev(device);
	return finish_script(std::make_shared<ScriptNet>(path, dev, reinit != 0), dev, in_c, in_h, in_w, num_classes, path);
	LT_CATCH(err, nullptr)
}

lt_model *lt_model_from_script(const lt_script *s, int32_t in_c, int32_t in_h, int32_t in_w, int32_t num_classes,
                               int32_t reinit, const char *device, char **err) {
	LT_TRY_SYNCED
	check_input(in_c, in_h, in_w, num_classes);
	if (!s) throw std::invalid_argument("no TorchScript module");
	torch::Device dev(device);
	// A deep copy: every peer of a run gets its own parameters, and the
	// checked module stays as loaded for the next.
	return finish_script(std::make_shared<ScriptNet>(s->mod.deepcopy(), dev, reinit != 0), dev, in_c, in_h, in_w,
	                     num_classes, s->path);
	LT_CATCH(err, nullptr)
}
void lt_model_free(lt_model *m) noexcept { delete m; }

int32_t lt_model_num_params(lt_model *m, int64_t *out, char **err) {
	LT_TRY_SYNCED
	int64_t n = 0;
	for (auto &p : m->net->parameters()) n += p.numel();
	*out = n;
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_model_feature_dim(lt_model *m, int64_t *out, char **err) {
	LT_TRY_SYNCED
	*out = m->net->feature_dim;
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_model_channels_last(lt_model *m, char **err) {
	LT_TRY_SYNCED
	to_channels_last(m);
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_model_ema_update(lt_model *ema, lt_model *m, double decay, char **err) {
	LT_TRY_SYNCED
	if (!(decay >= 0 && decay <= 1)) throw std::invalid_argument("EMA decay outside [0, 1]");
	ema_update(ema->state, m->state, decay);
	return 0;
	LT_CATCH(err, -1)
}

// ---- State.

lt_state *lt_model_state(lt_model *m) noexcept { return &m->state; }
lt_state *lt_optim_state(lt_optim *o) noexcept { return &o->bufs; }

int32_t lt_state_count(lt_state *s, int32_t *out, char **err) {
	LT_TRY_SYNCED
	*out = (int32_t)s->size();
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_state_info(lt_state *s, int32_t i, const char **name, int32_t *dtype, int64_t *shape, int32_t *ndim,
                      int64_t *nbytes, char **err) {
	LT_TRY_SYNCED
	entry_info(entry(s, i), name, dtype, shape, ndim, nbytes);
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_state_read(lt_state *s, int32_t i, void *dst, int64_t nbytes, char **err) {
	LT_TRY_SYNCED
	entry_read(entry(s, i), dst, nbytes);
	return 0;
	LT_CATCH(err, -1)
}
int32_t lt_state_write(lt_state *s, int32_t i, const void *src, int64_t nbytes, char **err) {
	LT_TRY_SYNCED
	entry_write(entry(s, i), src, nbytes);
	return 0;
	LT_CATCH(err, -1)
}

// ---- Optimizers.

lt_optim *lt_optim_new(lt_model *m, int32_t kind, const char *name, const double *v, int32_t n_params,
                       char **err) {
	LT_TRY_SYNCED
	std::vector<Entry> params;
	for (auto &p : m->net->named_parameters(true)) params.push_back({p.key(), p.value()});
	return lts::new_optim(std::move(params), kind, name, v, n_params).release();
	LT_CATCH(err, nullptr)
}

void lt_optim_free(lt_optim *o) noexcept { delete o; }

int32_t lt_optim_set_clip_norm(lt_optim *o, double max_norm, char **err) {
	LT_TRY_SYNCED
	if (std::isnan(max_norm)) throw std::invalid_argument("gradient clipping norm is NaN");
	o->clip = max_norm > 0 ? max_norm : 0;
	return 0;
	LT_CATCH(err, -1)
}

// ---- Process groups: the broadcasts of models and optimizers (dist.cpp
// has the rest).

int32_t lt_pg_broadcast_model(lt_pg *g, lt_model *m, int32_t buffers_only, char **err) {
	LT_TRY_SYNCED
	std::vector<Tensor> ts;
	if (!buffers_only)
		for (auto &p : m->net->parameters(true)) ts.push_back(p);
	for (auto &b : m->net->buffers(true)) ts.push_back(b);
	if (!ts.empty()) ltdist::broadcast(g, ts, "model broadcast");
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_pg_broadcast_optim(lt_pg *g, lt_optim *o, char **err) {
	LT_TRY_SYNCED
	std::vector<Tensor> ts;
	for (auto &b : o->bufs)
		// The Adam family's step counts (and NAdam's products) stay on the
		// CPU, as torch.optim keeps them: with parameters elsewhere they are
		// not broadcast (NCCL moves device memory only); every rank counts
		// the same steps from the same start.
		if (o->params.empty() || b.t.device() == o->params[0].t.device()) ts.push_back(b.t);
	if (!ts.empty()) ltdist::broadcast(g, ts, "optimizer broadcast");
	return 0;
	LT_CATCH(err, -1)
}

} // extern "C"
