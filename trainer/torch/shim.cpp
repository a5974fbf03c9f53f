//go:build cgo && !ltshim && !ltlazy

// shim.cpp: the C ABI of shim.h, section by section: runtime, tensors,
// models, state, optimizers (optim.hpp's rules), the model and optimizer
// broadcasts of process groups (the rest of them is dist.cpp's), the engine
// (engine.hpp), devices and TorchScript models (scriptcheck.hpp). The shim
// is split by concern into headers (common, models, state, optim, loss,
// step, engine), which hold C++ only: every extern "C" body is here or in
// dist.cpp. It compiles as this one translation unit:
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
#include "losscheck.h"       // ltt_loss, ltt_cross_entropy: no part of the ABI

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

int32_t lt_model_fix_head(lt_model *m, const float *v, int64_t rows, int64_t cols, char **err) {
	LT_TRY_SYNCED
	auto lin = m->net->single_linear_head();
	if (lin.is_empty())
		throw std::invalid_argument("a fixed classifier needs a model whose head is one linear layer; this one's is not");
	if (rows != m->num_classes || cols != m->net->feature_dim || !v)
		throw std::invalid_argument("fixed classifier is " + std::to_string(rows) + "x" + std::to_string(cols) + ", want " +
		                            std::to_string(m->num_classes) + "x" + std::to_string(m->net->feature_dim) +
		                            " (classes x feature width)");
	torch::NoGradGuard ng;
	auto &w = lin->weight;
	w.copy_(blob(v, {rows, cols}));
	w.set_requires_grad(false);
	w.mutable_grad() = Tensor();
	if (lin->bias.defined()) {
		lin->bias.zero_();
		lin->bias.set_requires_grad(false);
		lin->bias.mutable_grad() = Tensor();
	}
	m->fixed_head = w;
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_model_add_levels(lt_model *m, const int32_t *group, const int32_t *groups, int32_t n_levels, char **err) {
	LT_TRY_SYNCED
	if (!m->levels.empty()) throw std::invalid_argument("the model has its level heads already");
	if (n_levels < 1 || !group || !groups) throw std::invalid_argument("level heads: no levels");
	int64_t C = m->num_classes, d = m->net->feature_dim;
	if (d <= 0)
		throw std::invalid_argument("level heads need the model's penultimate features, and this model gives none");
	// Everything is checked before the first head is registered: a refused
	// call leaves the model as it was.
	std::vector<LevelHead> made;
	std::vector<int64_t> prev(C);
	for (int64_t c = 0; c < C; c++) prev[c] = c;
	int64_t prev_n = C;
	for (int32_t l = 0; l < n_levels; l++) {
		int64_t G = groups[l];
		if (G < 2 || G > C)
			throw std::invalid_argument("level " + std::to_string(l) + " has " + std::to_string(G) + " groups, want 2 to " +
			                            std::to_string(C));
		auto up = torch::zeros({prev_n, G}, torch::kFloat32);
		auto ua = up.accessor<float, 2>();
		std::vector<int64_t> cur(C), parent(prev_n, -1); // parent: the group each finer group lies in
		for (int64_t c = 0; c < C; c++) {
			int64_t v = group[l * C + c];
			if (v < 0 || v >= G)
				throw std::invalid_argument("level " + std::to_string(l) + " puts class " + std::to_string(c) +
				                            " in group " + std::to_string(v) + ", want one in [0, " + std::to_string(G) + ")");
			if (parent[prev[c]] >= 0 && parent[prev[c]] != v)
				throw std::invalid_argument("level " + std::to_string(l) + " is not nested in the level below it");
			parent[prev[c]] = v;
			ua[prev[c]][v] = 1;
			cur[c] = v;
		}
		made.push_back({nn::Linear(d, G), up.to(m->device), torch::tensor(cur, torch::kInt64).to(m->device)});
		prev.swap(cur);
		prev_n = G;
	}
	auto holder = m->net->register_module("level_heads", std::make_shared<nn::Module>());
	for (size_t l = 0; l < made.size(); l++) {
		holder->register_module(std::to_string(l + 1), made[l].head);
		made[l].head->to(m->device);
	}
	m->levels = std::move(made);
	m->index_state();
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

// ---- The engine (engine.hpp).

lt_engine *lt_engine_new(const char *device, const lt_engine_opts *o, char **err) {
	LT_TRY_SYNCED
	auto e = std::make_unique<lt_engine>();
	e->dev = torch::Device(device);
	if (e->cuda()) {
		e->impl = std::make_unique<c10::impl::VirtualGuardImpl>(c10::DeviceType::CUDA);
		if (!e->dev.has_index()) e->dev = torch::Device(torch::kCUDA, e->impl->getDevice().index());
		e->copy = std::make_unique<c10::Stream>(e->impl->getStreamFromGlobalPool(e->dev, false));
	}
	e->opts.precision = o->precision;
	e->opts.channels_last = o->channels_last != 0;
	lts::check_precision(e->dev, o->precision);
	if (o->norm_channels < 0 || o->norm_channels > 4) throw std::invalid_argument("norm_channels out of range 0..4");
	e->norm_c = o->norm_channels;
	if (e->norm_c > 0) {
		std::vector<float> sc(e->norm_c), bi(e->norm_c);
		for (int c = 0; c < e->norm_c; c++) {
			if (!(o->std[c] > 0)) throw std::invalid_argument("std must be positive");
			sc[c] = 1.0f / (255.0f * o->std[c]);
			bi[c] = -o->mean[c] / o->std[c];
		}
		auto opt = torch::TensorOptions().dtype(torch::kFloat32);
		e->scale = torch::tensor(sc, opt).view({1, e->norm_c, 1, 1}).to(e->dev);
		e->bias = torch::tensor(bi, opt).view({1, e->norm_c, 1, 1}).to(e->dev);
	}
	return e.release();
	LT_CATCH(err, nullptr)
}

void lt_engine_free(lt_engine *e) noexcept {
	if (!e) return;
	try {
		// Queued copies read pinned blocks and write device blocks that die
		// with the queue: let them finish first.
		if (e->cuda() && !e->queue.empty()) e->impl->synchronizeStream(*e->copy);
	} catch (...) {
	}
	delete e;
}

int32_t lt_engine_put(lt_engine *e, const void *x, int32_t dtype, int64_t n, int64_t c, int64_t h, int64_t w,
                      const int64_t *y, const float *weights, char **err) {
	LT_TRY_SYNCED
	if (e->queue.size() >= 2) throw std::logic_error("two batches are staged already: train or evaluate first");
	if (n < 0 || c < 1 || h < 1 || w < 1) throw std::invalid_argument("bad batch shape");
	if (dtype != LT_DTYPE_F32 && dtype != LT_DTYPE_U8) throw std::invalid_argument("staged batches are LT_DTYPE_F32 or LT_DTYPE_U8");
	bool u8 = dtype == LT_DTYPE_U8;
	if (u8 && c != e->norm_c)
		throw std::invalid_argument("uint8 batch of " + std::to_string(c) + " channels, normalisation for " +
		                            std::to_string(e->norm_c));
	lt_engine::Staged s;
	s.u8 = u8;
	// The device first, then its stream (released in reverse order).
	std::unique_ptr<c10::DeviceGuard> dg;
	std::unique_ptr<c10::StreamGuard> guard;
	if (e->cuda()) {
		dg = std::make_unique<c10::DeviceGuard>(e->dev);
		guard = std::make_unique<c10::StreamGuard>(*e->copy);
	}
	if (n > 0) {
		s.x = lts::stage_copy(e, x, {n, c, h, w}, u8 ? torch::kUInt8 : torch::kFloat32);
		if (y) s.y = lts::stage_copy(e, y, {n}, torch::kInt64);
		if (weights) s.w = lts::stage_copy(e, weights, {n}, torch::kFloat32);
	} else if (weights) {
		s.w = torch::zeros({0}, torch::TensorOptions().dtype(torch::kFloat32).device(e->dev));
	}
	if (e->cuda()) {
		s.ready = std::make_unique<c10::Event>(c10::DeviceType::CUDA);
		s.ready->record(*e->copy);
	}
	e->queue.push_back(std::move(s));
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_engine_train(lt_engine *e, lt_pg *g, lt_model **models, lt_optim **optims, int32_t k, lt_model *teacher,
                        lt_tensor *targets, lt_coefs coefs, const lt_groups *groups, const lt_mix *mix,
                        int32_t class_probs, double lr,
                        double loss_scale, int32_t *found_inf, char **err) {
	LT_TRY_SYNCED
	// The staged batch is consumed whatever happens next (the binding
	// counts it as consumed once the call returns).
	auto s = e->take();
	if (k < 1) throw std::invalid_argument("train step needs at least one model");
	if (models[0]->device != e->dev && !(e->dev.is_cuda() && models[0]->device.is_cuda() && !models[0]->device.has_index()))
		throw std::invalid_argument("model on " + models[0]->device.str() + ", engine on " + e->dev.str());
	std::unique_ptr<c10::DeviceGuard> dg;
	if (e->cuda()) dg = std::make_unique<c10::DeviceGuard>(e->dev);
	if (!g && !s.x.defined()) throw std::invalid_argument("train step on an empty batch");
	if (s.x.defined() && !s.y.defined()) throw std::invalid_argument("train step on a batch without labels");
	Tensor X;
	if (s.x.defined()) X = e->input(s);
	auto opts = e->opts;
	opts.loss_scale = loss_scale;
	opts.class_probs = class_probs != 0;
	// A model converted to channels-last takes its input so too, as in
	// evaluation.
	opts.channels_last = opts.channels_last || models[0]->channels_last;
	// A failed data-parallel step leaves the models as they were: the
	// parameters change only after the last collective, and the buffers the
	// forward pass updated are put back, so a checkpoint written after the
	// failure (a peer died, cancellation) resumes exactly.
	std::vector<std::pair<Tensor, Tensor>> saved;
	if (g)
		for (int i = 0; i < k; i++)
			for (auto &b : models[i]->net->buffers(true)) saved.push_back({b, b.detach().clone()});
	lts::StepOut out;
	try {
		out = lts::train_step(g, models, optims, k, teacher, X, s.y, s.w, targets, coefs, groups, mix, lr, opts);
	} catch (...) {
		torch::NoGradGuard ng;
		for (auto &sv : saved) sv.first.detach().copy_(sv.second);
		throw;
	}
	if ((int)e->loss_host.size() != k) {
		e->loss_host.assign(k, 0);
		e->correct_host.assign(k, 0);
		e->loss_dev.assign(k, Tensor());
		e->correct_dev.assign(k, Tensor());
		e->n = 0;
	}
	if (g) {
		for (int i = 0; i < k; i++) {
			e->loss_host[i] += out.loss_host[i] * out.n_all;
			e->correct_host[i] += out.correct_host[i];
		}
	} else {
		torch::NoGradGuard ng;
		double n = out.n_all;
		for (int i = 0; i < k; i++) {
			auto l = out.loss[i].to(torch::kFloat64) * n;
			e->loss_dev[i] = e->loss_dev[i].defined() ? e->loss_dev[i] + l : l;
			e->correct_dev[i] = e->correct_dev[i].defined() ? e->correct_dev[i] + out.correct[i] : out.correct[i];
		}
	}
	e->n += (int64_t)out.n_all;
	if (out.cp_sum.defined()) {
		torch::NoGradGuard ng;
		e->cp_sum = e->cp_sum.defined() ? e->cp_sum.add_(out.cp_sum) : out.cp_sum;
		e->cp_count = e->cp_count.defined() ? e->cp_count.add_(out.cp_count) : out.cp_count;
	}
	if (found_inf) *found_inf = out.found_inf;
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_engine_class_probs(lt_engine *e, int64_t c, double *sums, int64_t *counts, char **err) {
	LT_TRY_SYNCED
	std::memset(sums, 0, sizeof(double) * (size_t)(c * c));
	std::memset(counts, 0, sizeof(int64_t) * (size_t)c);
	if (e->cp_sum.defined()) {
		if (e->cp_sum.size(0) != c)
			throw std::invalid_argument("class probabilities of " + std::to_string(e->cp_sum.size(0)) + " classes, asked for " +
			                            std::to_string(c));
		auto s = e->cp_sum.to(torch::kCPU).contiguous();
		auto n = e->cp_count.to(torch::kCPU).contiguous();
		std::memcpy(sums, s.data_ptr<double>(), sizeof(double) * (size_t)(c * c));
		std::memcpy(counts, n.data_ptr<int64_t>(), sizeof(int64_t) * (size_t)c);
	}
	e->cp_sum = Tensor();
	e->cp_count = Tensor();
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_engine_metrics(lt_engine *e, int32_t k, double *loss_sum, int64_t *correct, int64_t *n, char **err) {
	LT_TRY_SYNCED
	for (int i = 0; i < k; i++) {
		loss_sum[i] = 0;
		correct[i] = 0;
		if (i >= (int)e->loss_host.size()) continue;
		loss_sum[i] = e->loss_host[i] + (e->loss_dev[i].defined() ? e->loss_dev[i].item<double>() : 0);
		correct[i] = e->correct_host[i] + (e->correct_dev[i].defined() ? e->correct_dev[i].item<int64_t>() : 0);
	}
	*n = e->n;
	e->loss_host.clear();
	e->correct_host.clear();
	e->loss_dev.clear();
	e->correct_dev.clear();
	e->n = 0;
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_engine_eval(lt_engine *e, lt_model *m, int64_t *top1, int64_t *top5, double *loss_sum,
                       float *logits_out, float *features_out, int32_t k, int32_t *topk_out, lt_tensor *cost,
                       int32_t *crm_topk_out, char **err) {
	LT_TRY_SYNCED
	auto s = e->take();
	std::unique_ptr<c10::DeviceGuard> dg;
	if (e->cuda()) dg = std::make_unique<c10::DeviceGuard>(e->dev);
	if (!s.x.defined()) throw std::invalid_argument("evaluation of an empty batch");
	c10::InferenceMode im; // no autograd bookkeeping at all (cheaper than NoGradGuard)
	m->net->eval();
	auto X = e->input(s);
	if (e->opts.channels_last || m->channels_last) X = lts::channels_last(X);
	Tensor f, z;
	{
		lts::Autocast ac(e->dev, e->opts.precision);
		// Features only when asked for (a TorchScript model may have no
		// separate head).
		z = m->net->logits_features(X, features_out ? &f : nullptr);
	}
	if (f.defined()) f = f.to(torch::kFloat32);
	z = z.to(torch::kFloat32);
	if (s.y.defined() && top1) lts::eval_figures(z, s.y, top1, top5, loss_sum);
	if (k > 0 && (topk_out || crm_topk_out)) {
		auto C = z.size(1);
		if (k > C) throw std::invalid_argument("top-" + std::to_string(k) + " of " + std::to_string(C) + " classes");
		// Only n*k class indices travel back: the hierarchical metrics
		// look their costs up on the host (a C x C matrix of costs for
		// ImageNet-21k would not fit the device next to the model).
		if (topk_out) lts::copy_out_i32(std::get<1>(z.topk(k, 1, true, true)), topk_out);
		if (crm_topk_out) {
			if (!cost || !cost->t.defined()) throw std::invalid_argument("conditional risk without a cost matrix");
			auto &D = cost->t;
			if (D.dim() != 2 || D.size(0) != C || D.size(1) != C || D.scalar_type() != torch::kFloat32)
				throw std::invalid_argument("the cost matrix must be a " + std::to_string(C) + "x" +
				                            std::to_string(C) + " float32 tensor");
			if (D.device() != z.device()) throw std::invalid_argument("the cost matrix is on another device than the engine");
			// Conditional risk minimisation (Karthik et al., ICLR 2021): the
			// classes of least expected cost sum_i p_i D[i][j], least first.
			auto risk = torch::softmax(z, 1).mm(D);
			lts::copy_out_i32(std::get<1>(risk.topk(k, 1, false, true)), crm_topk_out);
		}
	}
	lts::copy_out(z, logits_out);
	lts::copy_out(f, features_out);
	return 0;
	LT_CATCH(err, -1)
}

// ---- Devices.

int32_t lt_cuda_device_count(int32_t *out, char **err) {
	LT_TRY_SYNCED
	*out = (int32_t)torch::cuda::device_count();
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_set_cuda_flags(int32_t cudnn_benchmark, int32_t tf32, char **err) {
	LT_TRY_SYNCED
	auto &ctx = at::globalContext();
	ctx.setBenchmarkCuDNN(cudnn_benchmark != 0);
	ctx.setAllowTF32CuBLAS(tf32 != 0);
	ctx.setAllowTF32CuDNN(tf32 != 0);
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_synchronize(const char *device, char **err) {
	LT_TRY_SYNCED
	torch::Device d(device);
	if (d.is_cuda()) torch::cuda::synchronize(d.has_index() ? d.index() : -1);
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_device_memory(const char *device, int32_t reset, int64_t *peak_allocated, int64_t *peak_reserved,
                         char **err) {
	LT_TRY_SYNCED
	torch::Device d(device);
	*peak_allocated = *peak_reserved = -1;
#ifdef LT_DEVICE_ALLOCATOR
	if (d.is_cuda()) {
		auto idx = d.has_index() ? d.index() : c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getDevice().index();
		auto *a = c10::getDeviceAllocator(c10::DeviceType::CUDA);
		auto st = a->getDeviceStats(idx);
		auto agg = static_cast<size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE);
		*peak_allocated = st.allocated_bytes[agg].peak;
		*peak_reserved = st.reserved_bytes[agg].peak;
		if (reset) a->resetPeakStats(idx);
	}
#else
	(void)d;
	(void)reset;
#endif
	return 0;
	LT_CATCH(err, -1)
}

// ---- TorchScript models (scriptcheck.hpp).

lt_script *lt_script_load(const char *path, int32_t in_c, int32_t in_h, int32_t in_w, int32_t classes,
                                     int32_t trust_ops, char **err) {
	LT_TRY
	if (in_c <= 0 || in_h <= 0 || in_w <= 0 || classes < 1) throw std::invalid_argument("bad input shape or class count");
	auto m = torch::jit::load(path, torch::kCPU);
	if (!trust_ops) lts::refuse_io_operators(m);
	torch::NoGradGuard ng;
	lts::check_logits(m, false, 1, in_c, in_h, in_w, classes, path);
	// Training mode: a batch of two (batch norm needs more than one value
	// per channel), on a copy, whose running statistics change: the
	// module kept for the run keeps the file's.
	auto copy = m.deepcopy();
	lts::check_logits(copy, true, 2, in_c, in_h, in_w, classes, path);
	return new lt_script{std::move(m), path};
	LT_CATCH(err, nullptr)
}

void lt_script_free(lt_script *s) noexcept { delete s; }

// ---- The training loss alone (losscheck.h): no part of the ABI; for the
// tests that hold loss.hpp against internal/lossref and PyTorch. Here
// rather than in a test package of its own, whose translation unit would
// parse <torch/torch.h> again (~25 CPU-s per cold test build).

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
	torch::Tensor W;
	if (weights) W = lts::blob(weights, {n});
	torch::Tensor tl;
	if (teacher_logits) tl = lts::blob(teacher_logits, {n, c});
	lt_tensor T0;
	if (targets) T0.t = lts::blob(targets, {c, c});
	torch::Tensor Yb;
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
	std::vector<torch::Tensor> probs;
	if (n_peers > 0) {
		probs.push_back(torch::Tensor());
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
