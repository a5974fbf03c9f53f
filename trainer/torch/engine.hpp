// engine.hpp: the engine of shim.h (staged input, mixed precision, metrics
// that stay on the device), through which every training step and
// evaluation runs, and the device functions of the C ABI. Streams
// and events go through c10's device-generic interfaces (VirtualGuardImpl,
// c10::Event), so this compiles without CUDA headers against Debian's CPU
// libtorch 1.13 and against PyTorch 2.x, and works with whichever CUDA
// runtime the libtorch it links was built with.
#pragma once

#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/cuda.h>

#include <deque>

#ifdef LT_DEVICE_ALLOCATOR
// PyTorch ≥ 2.9: caching-allocator statistics through c10::DeviceAllocator
// (build-shim.sh defines LT_DEVICE_ALLOCATOR when a probe compiles).
#include <c10/core/CachingDeviceAllocator.h>
#endif

#include "amp.hpp"
#include "common.hpp"
#include "step.hpp"

struct lt_engine {
	torch::Device dev{torch::kCPU};
	lts::StepOpts opts;
	int norm_c = 0;
	Tensor scale, bias; // uint8 → normalised float: x*scale[c] + bias[c], shaped 1×C×1×1 on dev

	struct Staged {
		Tensor x, y, w;
		bool u8 = false;
		std::unique_ptr<c10::Event> ready; // recorded on the copy stream (CUDA)
	};
	std::deque<Staged> queue;
	std::unique_ptr<c10::impl::VirtualGuardImpl> impl; // CUDA only
	std::unique_ptr<c10::Stream> copy;                 // side stream of the host-to-device copies

	// Sums since the last lt_engine_metrics, per peer.
	std::vector<Tensor> loss_dev, correct_dev;
	std::vector<double> loss_host;
	std::vector<int64_t> correct_host;
	int64_t n = 0;
	// Class probabilities since the last lt_engine_class_probs (C×C float64
	// sums, C int64 counts), when steps asked for them.
	Tensor cp_sum, cp_count;

	bool cuda() const { return dev.is_cuda(); }

	// take pops the oldest staged batch and makes the current stream wait
	// for its copy; its memory is recorded on the current stream so the
	// caching allocator does not hand it to the copy stream before the
	// work queued here has used it.
	Staged take() {
		if (queue.empty()) throw std::logic_error("no staged batch: call lt_engine_put first");
		Staged s = std::move(queue.front());
		queue.pop_front();
		if (cuda()) {
			auto cur = impl->getStream(dev);
			s.ready->block(cur);
			for (auto *t : {&s.x, &s.y, &s.w})
				if (t->defined()) impl->recordDataPtrOnStream(t->storage().data_ptr(), cur);
		}
		return s;
	}

	// input is the normalised float32 batch of a staged one.
	Tensor input(const Staged &s) const {
		if (!s.u8) return s.x;
		return s.x.to(torch::kFloat32).mul_(scale).add_(bias);
	}
};

namespace lts {

// stage_copy copies n bytes at src to a new tensor of the given shape and
// type on the engine's device: through pinned memory and the copy stream on
// CUDA (not waiting), plainly on the CPU.
inline Tensor stage_copy(lt_engine *e, const void *src, at::IntArrayRef shape, torch::ScalarType dt) {
	auto host = torch::TensorOptions().dtype(dt);
	if (!e->cuda()) {
		auto t = torch::empty(shape, host);
		std::memcpy(t.data_ptr(), src, t.nbytes());
		return t;
	}
	// The pinned block returns to PyTorch's host cache when t is freed,
	// and is reused only after the copy that reads it has finished.
	auto t = torch::empty(shape, host.pinned_memory(true));
	std::memcpy(t.data_ptr(), src, t.nbytes());
	// Allocated under the copy stream's guard: the block belongs to it.
	auto d = torch::empty(shape, host.device(e->dev));
	d.copy_(t, /*non_blocking=*/true);
	return d;
}

} // namespace lts

extern "C" {

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

} // extern "C"
