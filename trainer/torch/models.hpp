// models.hpp: the architectures lt_model_new builds, with torchvision's
// parameter names, and build_net, which picks one from an lt_spec.
#pragma once

#include "common.hpp"

namespace lts {

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

std::shared_ptr<Net> build_net(const lt_spec &s) {
	switch (s.kind) {
	case LT_MLP: return std::make_shared<MLP>(s);
	case LT_CNN: return std::make_shared<CNN>(s);
	case LT_RESNET: return std::make_shared<ResNet>(s);
	case LT_WRN: return std::make_shared<WRN>(s);
	default: throw std::invalid_argument("unknown model kind " + std::to_string(s.kind));
	}
}

} // namespace lts
