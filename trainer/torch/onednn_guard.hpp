// onednn_guard.hpp: keeps lcl running on CPUs whose cache sizes oneDNN 3.x
// cannot read.
//
// oneDNN 3.x (libtorch 2.x) reads an AMD CPU's caches from CPUID leaf
// 0x8000001D only. Some hypervisors (the AMD EPYC VMs lcl's CI runs on among
// them) zero that leaf, and oneDNN then computes every cache as 1 byte; its
// 1x1-convolution kernels derive block sizes from them and divide by zero
// (SIGFPE, the process dies). Measured on such a VM with PyTorch 2.6 alone
// (oneDNN 3.7.2): torchvision's ResNet-50, ResNeXt-50 and DenseNet-121 die in
// their first step (fp32, bf16, channels-last; DenseNet in bf16 +
// channels-last only), ResNet-18 does not; every crash is a 1x1 convolution
// with 1024 or more channels on one side (e.g. 1024 -> 2048 at stride 2,
// 1024 -> 512 in bf16 + channels-last). Where it does not crash it can be
// wrong: the CIFAR DenseNet-BC of bench/models_ref.py (depth 16) evaluates
// 1.2 % off a float64 evaluation with oneDNN, 1.5e-8 without. oneDNN 2.x
// (libtorch 1.13) guesses the sizes when it cannot read them and is not
// affected. No oneDNN setting gives it the sizes, so on such a machine lcl
// turns libtorch's use of oneDNN off for the process: libtorch's own kernels
// are slower but correct. LCL_ONEDNN=on keeps oneDNN (e.g. once a fixed
// libtorch is in use), LCL_ONEDNN=off turns it off on any machine.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <ATen/Context.h>
#include <ATen/Version.h>

namespace lts {

// onednn_major returns the major version of the oneDNN libtorch was built
// with (0: none, or not found in its build description).
inline int onednn_major() {
	std::string cfg = at::show_config();
	std::smatch m;
	static const std::regex re("MKL-DNN v([0-9]+)\\.");
	if (std::regex_search(cfg, m, re)) return std::atoi(m[1].str().c_str());
	return 0;
}

// amd_cache_leaf_missing reports an AMD CPU whose CPUID leaf 0x8000001D
// (the cache descriptors oneDNN 3.x reads) is empty.
inline bool amd_cache_leaf_missing() {
#if defined(__x86_64__) || defined(__i386__)
	unsigned a = 0, b = 0, c = 0, d = 0;
	if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
	bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163; // "AuthenticAMD"
	if (!amd) return false;
	__cpuid_count(0x8000001D, 0, a, b, c, d);
	return a == 0 && b == 0 && c == 0;
#else
	return false;
#endif
}

// guard_onednn turns libtorch's use of oneDNN off on such a machine (see the
// top of this file), saying so once on stderr. Called for every network lcl
// builds on the CPU.
inline void guard_onednn(const torch::Device &dev) {
	if (!dev.is_cpu() || !at::globalContext().userEnabledMkldnn()) return;
	const char *env = std::getenv("LCL_ONEDNN");
	std::string want = env ? env : "";
	if (want == "on") return;
	bool off = want == "off";
	if (!off) {
		// The CPU and the library do not change: looked at once (CPUID,
		// libtorch's build description) for every network after.
		static const int major = amd_cache_leaf_missing() ? onednn_major() : 0;
		off = major >= 3;
		if (off)
			std::fprintf(stderr, "lcl: this CPU hides its cache sizes (CPUID 0x8000001D is empty), on which oneDNN %d.x "
			                     "crashes or computes wrong results: libtorch runs without oneDNN (slower; "
			                     "LCL_ONEDNN=on keeps it)\n",
			             major);
	}
	if (off) at::globalContext().setUserEnabledMkldnn(false);
}

} // namespace lts
