// compat.hpp: every difference between the libtorch versions the shim
// compiles against (Debian 12's 1.13 and PyTorch 2.x) as one named switch,
// so the rest of the shim reads the same for both. Each switch is
// exercised by the tests of one of the two builds: `make test` (1.13) and
// `make test-torch2` (2.6).
#pragma once

#include <torch/version.h>

#define LT_TORCH_AT_LEAST(major, minor) \
	(TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// PyTorch 2.0 split c10d's ProcessGroup into a dispatching front
// (ProcessGroup) and the per-transport Backend that ProcessGroupGloo and
// ProcessGroupNCCL derive from; 1.13's ProcessGroupGloo is a ProcessGroup.
// The shim calls collectives on the transport directly, so it holds the
// Backend on 2.x.
#if LT_TORCH_AT_LEAST(2, 0)
#define LT_C10D_BACKEND 1
#else
#define LT_C10D_BACKEND 0
#endif

// PyTorch 2.1's TCPStore takes over a listening socket its caller bound
// (TCPStoreOptions::masterListenFd): dist.cpp binds rank 0's store to the
// --dist-bind address that way; 1.13 needs dist.cpp's bind() rewrite.
#define LT_TCPSTORE_LISTEN_FD LT_TORCH_AT_LEAST(2, 1)

// PyTorch 2.4 replaced the per-device autocast functions (set_enabled,
// set_cpu_enabled, set_autocast_gpu_dtype, ...) by device-generic ones
// taking a DeviceType; the old ones were deprecated, then removed.
#define LT_AUTOCAST_GENERIC LT_TORCH_AT_LEAST(2, 4)

// c10d's TCPStore got a libuv server in PyTorch 2.2 (TCPStoreOptions::
// useLibUV), the default from 2.4 on; builds without libuv (Debian's 2.6)
// then refuse every store ("use_libuv was requested but PyTorch was build
// without libuv support"). The shim asks for the classic server wherever
// the option exists: it is in every build, and the one dist.cpp's bind()
// rewrite and its tests know. Detected by the member, not a version number.
namespace lts {
template <class Options>
auto classic_tcpstore(Options &o, int) -> decltype(o.useLibUV = false, void()) {
	o.useLibUV = false;
}
template <class Options>
void classic_tcpstore(Options &, long) {}
template <class Options>
void classic_tcpstore(Options &o) {
	classic_tcpstore(o, 0);
}
} // namespace lts

// torch.optim.Adam/AdamW and clip_grad_norm_ are Python, and lcl's update
// repeats their ATen calls (optim.hpp), which changed: 1.13 decays the first
// moment with mul_ then add_, takes math.sqrt of the second bias correction
// and torch.norm of the gradients; 2.x (as of 2.6, which make test-torch2
// holds lcl to) uses lerp_, `**0.5` and linalg.vector_norm (through
// _foreach_norm on the CPU too). The results differ in the last bits.
#define LT_OPTIM_2X LT_TORCH_AT_LEAST(2, 0)
