// scriptcheck.hpp: the checks of lt_script_load (scriptcheck.h; its C ABI
// is shim.cpp's). Included only by
// shim.cpp, after common.hpp (see there why the shim is one translation
// unit).
#pragma once

#include <torch/script.h>

#include <set>
#include <string>

#include "scriptcheck.h"

namespace lts {

// io_operator says why the operator kind reaches outside the process, or
// returns "" when it does not: the operators of libtorch's own namespaces
// that touch the file system, the network or the terminal, and any operator
// of another namespace (a library's custom operator lcl cannot vet).
inline std::string io_operator(c10::Symbol kind) {
	static const std::set<std::string> blocked = {
	    "aten::from_file", "aten::save",      "aten::to_here", "prim::rpc_async",
	    "prim::rpc_sync",  "prim::rpc_remote", "prim::Print",
	};
	static const std::set<std::string> namespaces = {"aten", "prim", "quantized", "_quantized", "prepacked",
	                                                 "mkldnn_prepacked", "sparse"};
	const std::string name = kind.toQualString();
	if (blocked.count(name)) return "reaches the file system, the network or the terminal";
	const std::string ns = name.substr(0, name.find("::"));
	if (!namespaces.count(ns)) return "is not one of libtorch's own operators";
	return "";
}

// scan_block throws for the first node of b (or of a block inside it)
// whose operator io_operator refuses.
inline void scan_block(const torch::jit::Block *b, const std::string &fn) {
	for (const auto *n : b->nodes()) {
		if (auto why = io_operator(n->kind()); !why.empty())
			throw std::invalid_argument(fn + " calls " + n->kind().toQualString() + ", which " + why +
			                            "; refused (a TorchScript model is a program: --trust-model runs it anyway)");
		for (const auto *sub : n->blocks()) scan_block(sub, fn);
	}
}

// refuse_io_operators scans every function of m's compilation unit (every
// method of every class the archive defines, __setstate__ included).
inline void refuse_io_operators(const torch::jit::Module &m) {
	for (auto *f : m._ivalue()->compilation_unit()->get_functions()) {
		if (!f->isGraphFunction()) continue;
		scan_block(torch::jit::toGraphFunction(*f).graph()->block(), f->qualname().qualifiedName());
	}
}

// check_logits runs forward on n zero images in mode and checks [n, classes].
inline void check_logits(torch::jit::Module &m, bool train, int64_t n, int32_t c, int32_t h, int32_t w,
                         int32_t classes, const char *path) {
	m.train(train);
	auto out = m.forward({torch::zeros({n, c, h, w})});
	if (!out.isTensor())
		throw std::invalid_argument(std::string("TorchScript model ") + path + ": forward returns a " +
		                            out.tagKind() + ", want a tensor of logits");
	auto z = out.toTensor();
	if (z.dim() != 2 || z.size(0) != n || z.size(1) != classes)
		throw std::invalid_argument(std::string("TorchScript model ") + path + " gives " + c10::str(z.sizes()) +
		                            " in " + (train ? "training" : "evaluation") + " mode for " + std::to_string(n) +
		                            " input(s) of " + std::to_string(c) + "x" + std::to_string(h) + "x" +
		                            std::to_string(w) + ", want [" + std::to_string(n) + ", " +
		                            std::to_string(classes) + "]");
}

} // namespace lts

struct lt_script {
	torch::jit::Module mod; // on the CPU, as the file holds it
	std::string path;       // for messages
};
