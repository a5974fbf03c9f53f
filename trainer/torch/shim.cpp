//go:build cgo && !ltshim

// shim.cpp: the whole C++ side of lcl's libtorch binding, in one translation
// unit so it compiles once (cgo caches the object). See shim.h for the rules.
#include <torch/torch.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dist.hpp"
#include "shim.h"

namespace nn = torch::nn;
using torch::Tensor;

namespace {

void set_err(char **err, const char *msg) {
	if (err) *err = strdup(msg ? msg : "unknown error");
}

#define LT_TRY try {
#define LT_CATCH(err, ret)                                         \
	}                                                              \
	catch (const c10::Error &e) {                                  \
		set_err(err, e.what_without_backtrace());                  \
		return ret;                                                \
	}                                                              \
	catch (const std::exception &e) {                              \
		set_err(err, e.what());                                    \
		return ret;                                                \
	}                                                              \
	catch (...) {                                                  \
		set_err(err, "unknown C++ exception");                     \
		return ret;                                                \
	}

// Net is the interface every architecture implements: features() is the
// penultimate representation (after global pooling), head() the classifier.
struct Net : nn::Module {
	virtual Tensor features(const Tensor &x) = 0;
	virtual Tensor head(const Tensor &f) = 0;
	Tensor forward(const Tensor &x) { return head(features(x)); }
	int64_t feature_dim = 0;
};

void kaiming_conv(nn::Module &root) {
	for (auto &m : root.modules(/*include_self=*/false)) {
		if (auto *c = m->as<nn::Conv2d>()) {
			nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
		} else if (auto *b = m->as<nn::BatchNorm2d>()) {
			nn::init::ones_(b->weight);
			nn::init::zeros_(b->bias);
		}
	}
}

// MLP: flatten, hidden Linear+ReLU(+Dropout) layers fc1..fcN, head fc.
struct MLP : Net {
	std::vector<nn::Linear> layers;
	nn::Linear fc{nullptr};
	double p;
	MLP(const lt_spec &s) : p(s.dropout) {
		int64_t in = (int64_t)s.in_c * s.in_h * s.in_w;
		for (int i = 0; i < s.n_hidden; i++) {
			layers.push_back(register_module("fc" + std::to_string(i + 1), nn::Linear(in, s.hidden[i])));
			in = s.hidden[i];
		}
		fc = register_module("fc", nn::Linear(in, s.num_classes));
		feature_dim = in;
	}
	Tensor features(const Tensor &x) override {
		auto h = x.flatten(1);
		for (auto &l : layers) {
			h = torch::relu(l(h));
			if (p > 0) h = torch::dropout(h, p, is_training());
		}
		return h;
	}
	Tensor head(const Tensor &f) override { return fc(f); }
};

// CNN: conv3x3-BN-ReLU-maxpool2 stages conv1..convN (channels hidden[0..n-2];
// no_bn: conv3x3 with bias, no BN, so data-parallel replicas compute exactly
// what one process does),
// then fc1 (hidden[n-1]) with ReLU and dropout, head fc.
struct CNN : Net {
	std::vector<nn::Conv2d> convs;
	std::vector<nn::BatchNorm2d> bns;
	nn::Linear fc1{nullptr}, fc{nullptr};
	double p;
	CNN(const lt_spec &s) : p(s.dropout) {
		if (s.n_hidden < 2) throw std::invalid_argument("cnn needs at least one conv stage and an fc width");
		int64_t c = s.in_c, h = s.in_h, w = s.in_w;
		for (int i = 0; i + 1 < s.n_hidden; i++) {
			auto name = std::to_string(i + 1);
			convs.push_back(register_module("conv" + name,
			    nn::Conv2d(nn::Conv2dOptions(c, s.hidden[i], 3).padding(1).bias(s.no_bn != 0))));
			if (!s.no_bn) bns.push_back(register_module("bn" + name, nn::BatchNorm2d(s.hidden[i])));
			c = s.hidden[i];
			h /= 2;
			w /= 2;
		}
		int64_t fcw = s.hidden[s.n_hidden - 1];
		fc1 = register_module("fc1", nn::Linear(c * h * w, fcw));
		fc = register_module("fc", nn::Linear(fcw, s.num_classes));
		feature_dim = fcw;
		kaiming_conv(*this);
	}
	Tensor features(const Tensor &x) override {
		auto h = x;
		for (size_t i = 0; i < convs.size(); i++)
			h = torch::max_pool2d(torch::relu(bns.empty() ? convs[i](h) : bns[i](convs[i](h))), 2);
		h = torch::relu(fc1(h.flatten(1)));
		if (p > 0) h = torch::dropout(h, p, is_training());
		return h;
	}
	Tensor head(const Tensor &f) override { return fc(f); }
};

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
	return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}

// Block is torchvision's BasicBlock (bottleneck=false) or Bottleneck (v1.5,
// stride on the 3x3 conv), with its parameter names.
struct Block : nn::Module {
	bool bottleneck;
	nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
	nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
	nn::Sequential downsample{nullptr};
	Block(int64_t inplanes, int64_t planes, int64_t stride, bool bneck) : bottleneck(bneck) {
		int64_t exp = bneck ? 4 : 1;
		if (bneck) {
			conv1 = register_module("conv1", conv(inplanes, planes, 1, 1));
			bn1 = register_module("bn1", nn::BatchNorm2d(planes));
			conv2 = register_module("conv2", conv(planes, planes, 3, stride));
			bn2 = register_module("bn2", nn::BatchNorm2d(planes));
			conv3 = register_module("conv3", conv(planes, planes * exp, 1, 1));
			bn3 = register_module("bn3", nn::BatchNorm2d(planes * exp));
		} else {
			conv1 = register_module("conv1", conv(inplanes, planes, 3, stride));
			bn1 = register_module("bn1", nn::BatchNorm2d(planes));
			conv2 = register_module("conv2", conv(planes, planes, 3, 1));
			bn2 = register_module("bn2", nn::BatchNorm2d(planes));
		}
		if (stride != 1 || inplanes != planes * exp) {
			downsample = register_module("downsample",
			    nn::Sequential(conv(inplanes, planes * exp, 1, stride), nn::BatchNorm2d(planes * exp)));
		}
	}
	Tensor forward(Tensor x) {
		auto out = torch::relu(bn1(conv1(x)));
		if (bottleneck) {
			out = torch::relu(bn2(conv2(out)));
			out = bn3(conv3(out));
		} else {
			out = bn2(conv2(out));
		}
		auto id = downsample ? downsample->forward(x) : x;
		return torch::relu(out + id);
	}
};

struct ResNet : Net {
	nn::Conv2d conv1{nullptr};
	nn::BatchNorm2d bn1{nullptr};
	std::vector<nn::Sequential> stages;
	nn::Linear fc{nullptr};
	bool cifar;
	ResNet(const lt_spec &s) : cifar(s.cifar_stem != 0) {
		int64_t width = s.width > 0 ? s.width : 64;
		int64_t exp = s.bottleneck ? 4 : 1;
		conv1 = register_module("conv1", cifar ? conv(s.in_c, width, 3, 1) : conv(s.in_c, width, 7, 2));
		bn1 = register_module("bn1", nn::BatchNorm2d(width));
		int64_t inplanes = width;
		if (s.n_layers < 1 || s.n_layers > 4) throw std::invalid_argument("resnet needs 1 to 4 stages");
		for (int i = 0; i < s.n_layers; i++) {
			int64_t planes = width << i;
			nn::Sequential seq;
			for (int b = 0; b < s.layers[i]; b++) {
				int64_t stride = (b == 0 && i > 0) ? 2 : 1;
				seq->push_back(std::make_shared<Block>(inplanes, planes, stride, s.bottleneck != 0));
				inplanes = planes * exp;
			}
			stages.push_back(register_module("layer" + std::to_string(i + 1), seq));
		}
		fc = register_module("fc", nn::Linear(inplanes, s.num_classes));
		feature_dim = inplanes;
		kaiming_conv(*this);
	}
	Tensor features(const Tensor &x) override {
		auto h = torch::relu(bn1(conv1(x)));
		if (!cifar) h = torch::max_pool2d(h, 3, 2, 1);
		for (auto &s : stages) h = s->forward(h);
		return torch::adaptive_avg_pool2d(h, {1, 1}).flatten(1);
	}
	Tensor head(const Tensor &f) override { return fc(f); }
};

// WBlock is the pre-activation wide basic block of Zagoruyko & Komodakis.
struct WBlock : nn::Module {
	nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
	nn::Conv2d conv1{nullptr}, conv2{nullptr};
	nn::Sequential shortcut{nullptr};
	double p;
	WBlock(int64_t in, int64_t out, int64_t stride, double drop) : p(drop) {
		bn1 = register_module("bn1", nn::BatchNorm2d(in));
		conv1 = register_module("conv1", conv(in, out, 3, stride));
		bn2 = register_module("bn2", nn::BatchNorm2d(out));
		conv2 = register_module("conv2", conv(out, out, 3, 1));
		if (stride != 1 || in != out) shortcut = register_module("shortcut", nn::Sequential(conv(in, out, 1, stride)));
	}
	Tensor forward(Tensor x) {
		auto o = torch::relu(bn1(x));
		auto y = conv1(o);
		y = torch::relu(bn2(y));
		if (p > 0) y = torch::dropout(y, p, is_training());
		y = conv2(y);
		return y + (shortcut ? shortcut->forward(o) : x);
	}
};

struct WRN : Net {
	nn::Conv2d conv1{nullptr};
	std::vector<nn::Sequential> stages;
	nn::BatchNorm2d bn{nullptr};
	nn::Linear fc{nullptr};
	WRN(const lt_spec &s) {
		if (s.depth < 10 || (s.depth - 4) % 6 != 0) throw std::invalid_argument("wrn depth must be 6n+4");
		int64_t n = (s.depth - 4) / 6, k = s.widen > 0 ? s.widen : 1;
		int64_t widths[3] = {16 * k, 32 * k, 64 * k};
		conv1 = register_module("conv1", conv(s.in_c, 16, 3, 1));
		int64_t in = 16;
		for (int i = 0; i < 3; i++) {
			nn::Sequential seq;
			for (int64_t b = 0; b < n; b++) {
				seq->push_back(std::make_shared<WBlock>(in, widths[i], (b == 0 && i > 0) ? 2 : 1, s.dropout));
				in = widths[i];
			}
			stages.push_back(register_module("layer" + std::to_string(i + 1), seq));
		}
		bn = register_module("bn", nn::BatchNorm2d(in));
		fc = register_module("fc", nn::Linear(in, s.num_classes));
		feature_dim = in;
		kaiming_conv(*this);
	}
	Tensor features(const Tensor &x) override {
		auto h = conv1(x);
		for (auto &s : stages) h = s->forward(h);
		h = torch::relu(bn(h));
		return torch::adaptive_avg_pool2d(h, {1, 1}).flatten(1);
	}
	Tensor head(const Tensor &f) override { return fc(f); }
};

int32_t dtype_code(c10::ScalarType t) {
	switch (t) {
	case torch::kFloat32: return 0;
	case torch::kInt64: return 1;
	case torch::kFloat64: return 2;
	case torch::kFloat16: return 3;
	case torch::kInt32: return 4;
	case torch::kUInt8: return 5;
	case torch::kBFloat16: return 6;
	default: throw std::runtime_error(std::string("unsupported dtype ") + c10::toString(t));
	}
}

struct Entry {
	std::string name;
	Tensor t;
};

int32_t entry_info(std::vector<Entry> &es, int32_t i, const char **name, int32_t *dtype, int64_t *shape,
                   int32_t *ndim, int64_t *nbytes) {
	if (i < 0 || i >= (int32_t)es.size()) throw std::out_of_range("state index out of range");
	auto &e = es[i];
	*name = e.name.c_str();
	*dtype = dtype_code(e.t.scalar_type());
	if (e.t.dim() > 8) throw std::runtime_error("tensor has more than 8 dimensions");
	*ndim = (int32_t)e.t.dim();
	for (int64_t d = 0; d < e.t.dim(); d++) shape[d] = e.t.size(d);
	*nbytes = (int64_t)(e.t.numel() * e.t.element_size());
	return 0;
}

void entry_read(std::vector<Entry> &es, int32_t i, void *dst, int64_t nbytes) {
	if (i < 0 || i >= (int32_t)es.size()) throw std::out_of_range("state index out of range");
	auto t = es[i].t.detach().to(torch::kCPU).contiguous();
	if (nbytes != (int64_t)(t.numel() * t.element_size()))
		throw std::runtime_error("state read of " + es[i].name + ": size mismatch");
	std::memcpy(dst, t.data_ptr(), (size_t)nbytes);
}

void entry_write(std::vector<Entry> &es, int32_t i, const void *src, int64_t nbytes) {
	if (i < 0 || i >= (int32_t)es.size()) throw std::out_of_range("state index out of range");
	auto &t = es[i].t;
	if (nbytes != (int64_t)(t.numel() * t.element_size()))
		throw std::runtime_error("state write of " + es[i].name + ": " + std::to_string(nbytes) +
		                         " bytes for a tensor of " + std::to_string(t.numel() * t.element_size()));
	torch::NoGradGuard ng;
	auto s = torch::from_blob(const_cast<void *>(src), t.sizes(), t.options().device(torch::kCPU));
	t.copy_(s);
}

Tensor blob(const float *p, at::IntArrayRef shape) {
	return torch::from_blob(const_cast<float *>(p), shape, torch::kFloat32);
}

// kl_rows: KL(p || q) per row, from probabilities p and log-probabilities logq.
Tensor kl_rows(const Tensor &p, const Tensor &logq) { return (torch::xlogy(p, p) - p * logq).sum(1); }

} // namespace

struct lt_tensor {
	Tensor t;
};

struct lt_model {
	std::shared_ptr<Net> net;
	torch::Device device{torch::kCPU};
	int64_t num_classes = 0;
	std::vector<Entry> state;
};

struct lt_optim {
	std::vector<Entry> params; // live parameters
	std::vector<Entry> bufs;   // momentum buffers, named <param>.momentum_buffer
	double momentum, wd;
	bool nesterov;
	void zero_grad() {
		for (auto &p : params) {
			auto &g = p.t.mutable_grad();
			if (g.defined()) g = Tensor();
		}
	}
	void step(double lr) {
		torch::NoGradGuard ng;
		for (size_t i = 0; i < params.size(); i++) {
			auto &p = params[i].t;
			auto g = p.grad();
			if (!g.defined()) continue;
			auto d = wd != 0 ? g.add(p, wd) : g;
			if (momentum != 0) {
				auto &buf = bufs[i].t;
				buf.mul_(momentum).add_(d);
				d = nesterov ? d.add(buf, momentum) : buf;
			}
			p.add_(d, -lr);
		}
	}
};

namespace {

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

} // namespace

extern "C" {

int32_t lt_abi_version(void) { return LT_ABI_VERSION; }
const char *lt_torch_version(void) { return TORCH_VERSION; }
void lt_set_threads(int32_t n) {
	if (n > 0) torch::set_num_threads(n);
}
int32_t lt_get_threads(void) { return torch::get_num_threads(); }
void lt_manual_seed(uint64_t seed) { torch::manual_seed(seed); }
int32_t lt_cuda_device_count(void) {
	try {
		return (int32_t)torch::cuda::device_count();
	} catch (...) {
		return 0;
	}
}

lt_tensor *lt_tensor_new(const float *data, const int64_t *shape, int32_t ndim, const char *device, char **err) {
	LT_TRY
	std::vector<int64_t> s(shape, shape + ndim);
	auto t = blob(data, s).clone().to(torch::Device(device));
	return new lt_tensor{t};
	LT_CATCH(err, nullptr)
}
void lt_tensor_free(lt_tensor *t) { delete t; }

lt_model *lt_model_new(const lt_spec *s, const char *device, char **err) {
	LT_TRY
	std::shared_ptr<Net> net;
	switch (s->kind) {
	case LT_MLP: net = std::make_shared<MLP>(*s); break;
	case LT_CNN: net = std::make_shared<CNN>(*s); break;
	case LT_RESNET: net = std::make_shared<ResNet>(*s); break;
	case LT_WRN: net = std::make_shared<WRN>(*s); break;
	default: throw std::invalid_argument("unknown model kind " + std::to_string(s->kind));
	}
	auto m = std::make_unique<lt_model>();
	m->device = torch::Device(device);
	net->to(m->device);
	m->net = net;
	m->num_classes = s->num_classes;
	for (auto &p : net->named_parameters(true)) m->state.push_back({p.key(), p.value()});
	for (auto &b : net->named_buffers(true)) m->state.push_back({b.key(), b.value()});
	return m.release();
	LT_CATCH(err, nullptr)
}
void lt_model_free(lt_model *m) { delete m; }

int64_t lt_model_num_params(lt_model *m) {
	int64_t n = 0;
	for (auto &p : m->net->parameters()) n += p.numel();
	return n;
}
int64_t lt_model_feature_dim(lt_model *m) { return m->net->feature_dim; }

int32_t lt_model_state_count(lt_model *m) { return (int32_t)m->state.size(); }
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
void lt_optim_free(lt_optim *o) { delete o; }
int32_t lt_optim_state_count(lt_optim *o) { return (int32_t)o->bufs.size(); }
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

namespace {

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

} // namespace

extern "C" {

int32_t lt_train_step(lt_model **models, lt_optim **optims, int32_t k, lt_model *teacher, const float *x, int64_t n,
                      int64_t c, int64_t h, int64_t w, const int64_t *y, lt_tensor *targets, const float *weights,
                      lt_coefs coefs, double lr, float *loss_out, int64_t *correct_out, char **err) {
	LT_TRY
	if (n < 1) throw std::invalid_argument("train step on an empty batch");
	train_step(nullptr, models, optims, k, teacher, x, n, c, h, w, y, targets, weights, coefs, lr, loss_out,
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
		train_step(g, models, optims, k, teacher, x, n, c, h, w, y, targets, weights, coefs, lr, loss_out,
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
	for (auto &b : o->bufs) ts.push_back(b.t);
	if (!ts.empty()) ltdist::broadcast(g, ts, "optimizer broadcast");
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_eval(lt_model *m, const float *x, int64_t n, int64_t c, int64_t h, int64_t w, const int64_t *y,
                int64_t *top1, int64_t *top5, double *loss_sum, float *logits_out, float *features_out, char **err) {
	LT_TRY
	torch::NoGradGuard ng;
	m->net->eval();
	auto X = blob(x, {n, c, h, w}).to(m->device);
	auto f = m->net->features(X);
	auto z = m->net->head(f);
	if (y) {
		auto Y = torch::from_blob(const_cast<int64_t *>(y), {n}, torch::kInt64).to(m->device);
		auto kk = std::min<int64_t>(5, z.size(1));
		auto top = std::get<1>(z.topk(kk, 1));
		auto hit = top.eq(Y.unsqueeze(1));
		*top1 = hit.narrow(1, 0, 1).sum().item<int64_t>();
		*top5 = hit.sum().item<int64_t>();
		*loss_sum = torch::nn::functional::cross_entropy(
		                z, Y, nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
		                .item<double>();
	}
	if (logits_out) {
		auto zc = z.to(torch::kCPU).contiguous();
		std::memcpy(logits_out, zc.data_ptr<float>(), sizeof(float) * zc.numel());
	}
	if (features_out) {
		auto fc = f.to(torch::kCPU).contiguous();
		std::memcpy(features_out, fc.data_ptr<float>(), sizeof(float) * fc.numel());
	}
	return 0;
	LT_CATCH(err, -1)
}

int32_t lt_loss(const float *logits, int64_t n, int64_t c, const int64_t *y, lt_tensor *targets,
                const float *weights, lt_coefs coefs, const float *teacher_logits, float *loss_out, float *grad_out,
                char **err) {
	LT_TRY
	auto Z = blob(logits, {n, c}).clone().requires_grad_(true);
	auto Y = torch::from_blob(const_cast<int64_t *>(y), {n}, torch::kInt64);
	Tensor W;
	if (weights) W = blob(weights, {n});
	Tensor tl;
	if (teacher_logits) tl = blob(teacher_logits, {n, c});
	auto T = target_rows(targets, Y, c, coefs, torch::kCPU);
	auto loss = reduce(per_example_loss(Z, Y, T, coefs, tl, {}, 0), W);
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
