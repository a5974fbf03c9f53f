// models.hpp: the networks behind lt_model: GraphNet, which instantiates an
// architecture described as a tree of lt_node (every built-in model:
// trainer/models composes the trees), and ScriptNet, a TorchScript module
// loaded from a file.
#pragma once

#include "common.hpp"

#include <torch/script.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>

namespace lts {

// GNode is one node of an architecture tree. Parameterised nodes hold their
// libtorch module, registered under the node's name in the module of the
// nearest named ancestor, so state names are the dotted paths of names.
struct GNode {
	lt_node p{};
	std::vector<std::unique_ptr<GNode>> kids;
	nn::Conv2d conv{nullptr};
	nn::BatchNorm2d bn{nullptr};
	nn::Linear lin{nullptr};
	nn::PReLU prelu{nullptr};

	Tensor forward(const Tensor &x, bool train) {
		switch (p.op) {
		case LT_SEQ: {
			Tensor h = x;
			for (auto &k : kids) h = k->forward(h, train);
			return h;
		}
		case LT_CONV: return conv(x);
		case LT_BN:
			// BatchNorm2d over N x C x 1 x 1 is BatchNorm1d over N x C (the
			// statistics over the batch alone), with the same state names.
			if (x.dim() == 2) return bn(x.unsqueeze(-1).unsqueeze(-1)).flatten(1);
			return bn(x);
		case LT_LINEAR: return lin(x);
		case LT_RELU: return torch::relu(x);
		case LT_MAXPOOL:
			return torch::max_pool2d(x, {p.kh, p.kw}, stride(), {p.ph, p.pw}, 1, (p.flags & LT_POOL_CEIL) != 0);
		case LT_AVGPOOL:
			return torch::avg_pool2d(x, {p.kh, p.kw}, stride(), {p.ph, p.pw}, (p.flags & LT_POOL_CEIL) != 0,
			                         (p.flags & LT_POOL_EXCLUDE_PAD) == 0);
		case LT_GAP: return torch::adaptive_avg_pool2d(x, {1, 1});
		case LT_FLATTEN: return x.flatten(1);
		case LT_DROPOUT: return p.p > 0 ? torch::dropout(x, p.p, train) : x;
		case LT_SIGMOID: return torch::sigmoid(x);
		case LT_SUM: {
			Tensor y = kids[0]->forward(x, train);
			if (p.scale != 0 && p.scale != 1) y = y * p.scale;
			for (size_t i = 1; i < kids.size(); i++) y = y + kids[i]->forward(x, train);
			return y;
		}
		case LT_MUL: {
			Tensor y = kids[0]->forward(x, train);
			for (size_t i = 1; i < kids.size(); i++) y = y * kids[i]->forward(x, train);
			return y;
		}
		case LT_CAT: {
			std::vector<Tensor> ys;
			ys.reserve(kids.size());
			for (auto &k : kids) ys.push_back(k->forward(x, train));
			return torch::cat(ys, 1);
		}
		case LT_IDENTITY: return x;
		case LT_PRELU: return prelu(x);
		}
		throw std::logic_error("unreachable node kind");
	}
	std::vector<int64_t> stride() const {
		if (p.sh > 0) return {p.sh, p.sw};
		return {p.kh, p.kw};
	}
};

// GraphBuilder reads the pre-order node array, creating each node's module
// in the module of its nearest named ancestor, and records the
// parameterised nodes in that order for initialisation.
struct GraphBuilder {
	const lt_node *nodes;
	int32_t n;
	int32_t i = 0;
	std::vector<GNode *> order;

	static std::string name_of(const lt_node &d) { return d.name ? std::string(d.name) : std::string(); }

	std::unique_ptr<GNode> parse(nn::Module &parent, int depth) {
		if (i >= n) throw std::invalid_argument("architecture graph: node " + std::to_string(i) + " is past the end");
		if (depth > 200) throw std::invalid_argument("architecture graph: nested more than 200 deep");
		auto g = std::make_unique<GNode>();
		g->p = nodes[i];
		int32_t at = i++;
		std::string name = name_of(g->p);
		g->p.name = nullptr; // the caller's string does not outlive the call
		auto where = [&]() { return "architecture graph: node " + std::to_string(at) + (name.empty() ? "" : " (" + name + ")"); };
		auto &p = g->p;
		bool container = p.op == LT_SEQ || p.op == LT_SUM || p.op == LT_CAT || p.op == LT_MUL;
		if (p.op < LT_SEQ || p.op > LT_PRELU) throw std::invalid_argument(where() + ": unknown kind " + std::to_string(p.op));
		if (p.n_children < 0 || (!container && p.n_children != 0) || (container && p.op != LT_SEQ && p.n_children == 0))
			throw std::invalid_argument(where() + ": " + std::to_string(p.n_children) + " children");
		bool params = p.op == LT_CONV || p.op == LT_BN || p.op == LT_LINEAR || p.op == LT_PRELU;
		if (params && name.empty()) throw std::invalid_argument(where() + ": a layer with parameters needs a name");
		switch (p.op) {
		case LT_CONV: {
			int64_t groups = p.groups > 0 ? p.groups : 1;
			if (p.in <= 0 || p.out <= 0 || p.kh <= 0 || p.kw <= 0 || p.in % groups || p.out % groups)
				throw std::invalid_argument(where() + ": bad convolution");
			std::vector<int64_t> stride{p.sh > 0 ? p.sh : 1, p.sw > 0 ? p.sw : 1};
			g->conv = parent.register_module(name, nn::Conv2d(nn::Conv2dOptions(p.in, p.out, {p.kh, p.kw})
			                                                      .stride(stride)
			                                                      .padding({p.ph, p.pw})
			                                                      .groups(groups)
			                                                      .bias(p.bias != 0)));
			order.push_back(g.get());
			break;
		}
		case LT_BN:
			if (p.out <= 0) throw std::invalid_argument(where() + ": bad batch norm");
			g->bn = parent.register_module(name, nn::BatchNorm2d(nn::BatchNormOptions(p.out)
			                                                         .eps(p.eps > 0 ? p.eps : 1e-5)
			                                                         .momentum(p.momentum > 0 ? p.momentum : 0.1)));
			order.push_back(g.get());
			break;
		case LT_LINEAR:
			if (p.in <= 0 || p.out <= 0) throw std::invalid_argument(where() + ": bad linear layer");
			g->lin = parent.register_module(name, nn::Linear(nn::LinearOptions(p.in, p.out).bias(p.bias != 0)));
			order.push_back(g.get());
			break;
		case LT_PRELU:
			if (p.out <= 0) throw std::invalid_argument(where() + ": bad PReLU");
			g->prelu = parent.register_module(name, nn::PReLU(nn::PReLUOptions().num_parameters(p.out)));
			break;
		case LT_MAXPOOL:
		case LT_AVGPOOL:
			if (p.kh <= 0 || p.kw <= 0 || p.sh < 0 || p.sw < 0 || p.ph < 0 || p.pw < 0)
				throw std::invalid_argument(where() + ": bad pool");
			break;
		case LT_DROPOUT:
			if (!(p.p >= 0 && p.p < 1)) throw std::invalid_argument(where() + ": dropout probability out of [0,1)");
			break;
		default: break;
		}
		if (container) {
			nn::Module *into = &parent;
			if (!name.empty()) into = parent.register_module(name, std::make_shared<nn::Module>()).get();
			for (int32_t c = 0; c < p.n_children; c++) g->kids.push_back(parse(*into, depth + 1));
		}
		return g;
	}

	// init applies each layer's initialisation in construction order (the
	// order torchvision's loops over self.modules() use).
	void init() {
		torch::NoGradGuard ng;
		for (auto *g : order) {
			if (g->conv) {
				auto &w = g->conv->weight;
				if (g->p.init == LT_INIT_KAIMING_FAN_OUT) nn::init::kaiming_normal_(w, 0.0, torch::kFanOut, torch::kReLU);
				if (g->p.init == LT_INIT_KAIMING_FAN_IN) nn::init::kaiming_normal_(w, 0.0, torch::kFanIn, torch::kReLU);
			} else if (g->lin && g->p.init == LT_INIT_ZERO_BIAS && g->lin->bias.defined()) {
				nn::init::zeros_(g->lin->bias);
			}
		}
	}
};

// GraphNet is a network built from an lt_node tree.
struct GraphNet : Net {
	std::unique_ptr<GNode> feat, head_;
	GraphNet(const lt_node *nodes, int32_t n) {
		if (!nodes || n < 3) throw std::invalid_argument("architecture graph: fewer than 3 nodes");
		if (nodes[0].op != LT_SEQ || nodes[0].n_children != 2 || (nodes[0].name && nodes[0].name[0]))
			throw std::invalid_argument("architecture graph: the root must be an unnamed sequence of features and head");
		GraphBuilder b{nodes, n};
		b.i = 1;
		feat = b.parse(*this, 1);
		head_ = b.parse(*this, 1);
		if (b.i != n) throw std::invalid_argument("architecture graph: " + std::to_string(n - b.i) + " nodes after the tree");
		b.init();
		// The penultimate width is the input of the head's first linear layer.
		std::function<int64_t(const GNode &)> first_in = [&](const GNode &g) -> int64_t {
			if (g.p.op == LT_LINEAR) return g.p.in;
			for (auto &k : g.kids)
				if (auto v = first_in(*k)) return v;
			return 0;
		};
		feature_dim = first_in(*head_);
		if (feature_dim == 0) throw std::invalid_argument("architecture graph: the head has no linear layer");
	}
	Tensor features(const Tensor &x) override { return feat->forward(x, is_training()); }
	Tensor head(const Tensor &f) override { return head_->forward(f, is_training()); }
	nn::Linear single_linear_head() override {
		const GNode *g = head_.get();
		if (g->p.op == LT_SEQ && g->kids.size() == 1) g = g->kids[0].get();
		return g->p.op == LT_LINEAR ? g->lin : nn::Linear{nullptr};
	}
	nn::Linear last_linear_head() override {
		const GNode *g = head_.get();
		if (g->p.op == LT_LINEAR) return g->lin;
		if (g->p.op != LT_SEQ || g->kids.empty()) return nn::Linear{nullptr};
		for (size_t i = 0; i + 1 < g->kids.size(); i++)
			if (g->kids[i]->p.op != LT_DROPOUT && g->kids[i]->p.op != LT_IDENTITY) return nn::Linear{nullptr};
		const GNode *last = g->kids.back().get();
		return last->p.op == LT_LINEAR ? last->lin : nn::Linear{nullptr};
	}
};

// module_at returns the module for the dotted path prefix under root,
// creating empty modules on the way: how a TorchScript module's state is
// mirrored into an nn::Module tree with the same names.
inline nn::Module &module_at(nn::Module &root, const std::vector<std::string> &parts) {
	nn::Module *m = &root;
	for (size_t i = 0; i + 1 < parts.size(); i++) {
		auto kids = m->named_children();
		if (auto *found = kids.find(parts[i])) m = found->get();
		else m = m->register_module(parts[i], std::make_shared<nn::Module>()).get();
	}
	return *m;
}

inline std::vector<std::string> split_dots(const std::string &s) {
	std::vector<std::string> out;
	size_t start = 0;
	for (;;) {
		auto d = s.find('.', start);
		out.push_back(s.substr(start, d == std::string::npos ? std::string::npos : d - start));
		if (d == std::string::npos) return out;
		start = d + 1;
	}
}

// ScriptNet is a TorchScript module. Its parameters and buffers are also
// registered (the same tensors) in an nn::Module tree with the same dotted
// names, so the optimizer, the state functions and data parallelism treat
// it like any other network.
struct ScriptNet : Net {
	torch::jit::Module mod;
	bool has_penultimate = false;
	std::unique_ptr<torch::jit::GraphFunction> feat_fn;
	std::string no_features; // why features() fails, when it does

	ScriptNet(const std::string &path, torch::Device dev, bool reinit)
	    : ScriptNet(torch::jit::load(path, dev), dev, reinit) {}

	// ScriptNet takes a module already loaded (a copy of a checked one,
	// lt_model_from_script) and moves it to dev.
	ScriptNet(torch::jit::Module m, torch::Device dev, bool reinit) : mod(std::move(m)) {
		mod.to(dev);
		if (reinit) reset_parameters();
		for (const auto &p : mod.named_parameters(true)) {
			auto parts = split_dots(p.name);
			module_at(*this, parts).register_parameter(parts.back(), p.value, p.value.requires_grad());
		}
		for (const auto &b : mod.named_buffers(true)) {
			auto parts = split_dots(b.name);
			module_at(*this, parts).register_buffer(parts.back(), b.value);
		}
		has_penultimate = mod.find_method("penultimate").has_value();
	}

	// reset_parameters re-initialises every submodule that owns a weight as
	// PyTorch's Conv/Linear/BatchNorm reset_parameters do.
	void reset_parameters() {
		torch::NoGradGuard ng;
		for (const auto &sub : mod.modules()) {
			if (!sub.hasattr("weight")) continue;
			auto wv = sub.attr("weight");
			if (!wv.isTensor()) continue;
			auto w = wv.toTensor();
			Tensor b;
			if (sub.hasattr("bias") && sub.attr("bias").isTensor()) b = sub.attr("bias").toTensor();
			if (w.dim() >= 2) {
				nn::init::kaiming_uniform_(w, std::sqrt(5.0));
				if (b.defined()) {
					auto fan_in = w.size(1) * (w.dim() > 2 ? w[0][0].numel() : 1);
					double bound = fan_in > 0 ? 1.0 / std::sqrt((double)fan_in) : 0;
					nn::init::uniform_(b, -bound, bound);
				}
			} else if (w.dim() == 1) {
				nn::init::ones_(w);
				if (b.defined()) nn::init::zeros_(b);
			}
		}
	}

	void train(bool on = true) override {
		Net::train(on);
		mod.train(on);
	}
	Tensor forward(const Tensor &x) override { return mod.forward({x}).toTensor(); }
	Tensor features(const Tensor &x) override {
		if (!no_features.empty()) throw std::invalid_argument(no_features);
		if (has_penultimate) return mod.get_method("penultimate")({x}).toTensor();
		if (!feat_fn) feat_fn = penultimate_graph();
		return (*feat_fn)({mod._ivalue(), x}).toTensor();
	}
	Tensor head(const Tensor &) override {
		throw std::logic_error("a TorchScript model has no separate head");
	}
	Tensor logits_features(const Tensor &x, Tensor *f) override {
		if (f) *f = features(x);
		return forward(x);
	}

	// penultimate_graph is forward with every call inlined, cut at the
	// input of its last top-level aten::linear.
	std::unique_ptr<torch::jit::GraphFunction> penultimate_graph() {
		auto g = mod.get_method("forward").graph()->copy();
		torch::jit::Inline(*g);
		torch::jit::Node *last = nullptr;
		static const auto linear = c10::Symbol::fromQualString("aten::linear");
		for (auto *n : g->nodes())
			if (n->kind() == linear) last = n;
		if (!last)
			throw std::invalid_argument("TorchScript model: forward has no aten::linear at its top level to take "
			                            "the penultimate features from; define a method `penultimate`");
		while (g->outputs().size() > 0) g->eraseOutput(0);
		g->registerOutput(last->input(0));
		torch::jit::EliminateDeadCode(g);
		return std::make_unique<torch::jit::GraphFunction>("penultimate", g, nullptr);
	}
};

} // namespace lts
