#!/bin/sh
# build-shim.sh builds the C ABI shim as a shared library, libltshim.so,
# against the libtorch of a Python PyTorch (or any libtorch folder), for an
# lcl binary built elsewhere with -tags ltshim. Needs only a C++17 compiler.
#   usage: build-shim.sh [TORCH_DIR] [OUT_DIR]
# TORCH_DIR defaults to the folder of the python3 torch package; its
# include/ and lib/ are used unless TORCH_INCLUDE / TORCH_LIB say otherwise
# (Debian: TORCH_INCLUDE=/usr/include TORCH_LIB=/usr/lib/x86_64-linux-gnu).
# env: PYTHON (python3), CXX (g++), CXXFLAGS (extra flags), LT_NO_DIST=1
# (leave the c10d part out on purpose), LT_CXX_STD (c++17, or c++20 when
# the headers ask for it), NCCL_INCLUDE / CUDA_INCLUDE (folders with nccl.h
# and cuda_runtime_api.h, for the NCCL backend of a CUDA libtorch; found
# next to a pip PyTorch or in /usr/local/cuda otherwise), LT_NO_NCCL=1.
#
# The shim (shim.cpp) and its c10d part (dist.cpp) compile in parallel. If
# dist.cpp does not compile against this libtorch (c10d's headers change
# between PyTorch versions, and some builds lack Gloo's), the library is
# built with dist_stub.cpp instead: everything but data parallelism works,
# and a line on stderr says so. Optional APIs are probed first (a few
# seconds each) and enabled only where they compile.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
torch=${1:-$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')}
out=${2:-.}
mkdir -p "$out"
out=$(cd "$out" && pwd)
inc=${TORCH_INCLUDE:-$torch/include}
lib=${TORCH_LIB:-$torch/lib}
cxx=${CXX:-g++}
abi=$("$py" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))' 2>/dev/null || echo 1)
cuda=""
if [ -e "$lib/libtorch_cuda.so" ]; then cuda="-Wl,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--as-needed"; fi
# find_header NAME DIR...: the first DIR holding NAME (nothing if none).
find_header() {
	n=$1
	shift
	for d in "$@"; do
		if [ -n "$d" ] && [ -f "$d/$n" ]; then echo "$d"; return; fi
	done
}
# NCCL for CUDA builds: nccl.h and CUDA's runtime headers (ProcessGroupNCCL
# includes them). A pip PyTorch keeps them in its nvidia-* wheels.
ncclflags=""
if [ -n "$cuda" ] && [ "${LT_NO_NCCL:-0}" != 1 ]; then
	nv=$(cd "$torch/.." 2>/dev/null && pwd)/nvidia
	wheels=$(find "$nv" -maxdepth 3 -type d -name include 2>/dev/null | sort)
	# shellcheck disable=SC2086 # wheels is a word list
	ni=$(find_header nccl.h "${NCCL_INCLUDE:-}" $wheels /usr/include /usr/local/cuda/include)
	# shellcheck disable=SC2086
	ci=$(find_header cuda_runtime_api.h "${CUDA_INCLUDE:-}" "${CUDA_HOME:-/usr/local/cuda}/include" /usr/local/cuda/include $wheels /usr/include)
	if [ -n "$ni" ] && [ -n "$ci" ]; then
		ncclflags="-DLT_NCCL -I$ni -I$ci"
		# cuda_runtime_api.h's siblings in other wheels (cublas, ...) when ci is one wheel's folder.
		for w in $wheels; do [ "$w" = "$ni" ] || [ "$w" = "$ci" ] || ncclflags="$ncclflags -I$w"; done
	else
		echo "build-shim.sh: no nccl.h or cuda_runtime_api.h found (NCCL_INCLUDE, CUDA_INCLUDE): built without the nccl backend" >&2
	fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The C++ standard: 17, or 20 where this PyTorch's headers demand it.
std=${LT_CXX_STD:-}
if [ -z "$std" ]; then
	std=c++17
	# PyTorch 2.14's headers refuse C++17 (#error ... C++20 or later).
	if grep -qs 'C++20 or later' "$inc/ATen/ATen.h" "$inc/torch/csrc/api/include/torch/all.h"; then std=c++20; fi
fi
flags="-std=$std -O2 -fPIC -D_GLIBCXX_USE_CXX11_ABI=$abi -I$inc -I$inc/torch/csrc/api/include ${CXXFLAGS:-}"

# probe NAME CODE: does CODE compile against this libtorch?
probe() {
	printf '%s\n' "$2" >"$tmp/$1.cpp"
	# shellcheck disable=SC2086 # flags is a word list
	$cxx $flags -fsyntax-only "$tmp/$1.cpp" >"$tmp/$1.log" 2>&1
}
defs=""
# Caching-allocator statistics through c10::DeviceAllocator (PyTorch >= 2.9).
if probe devalloc '#include <c10/core/CachingDeviceAllocator.h>
void f() {
	auto *a = c10::getDeviceAllocator(c10::DeviceType::CUDA);
	auto st = a->getDeviceStats(0);
	auto agg = static_cast<size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE);
	(void)st.allocated_bytes[agg].peak;
	(void)st.reserved_bytes[agg].peak;
	a->resetPeakStats(0);
}'; then defs="$defs -DLT_DEVICE_ALLOCATOR"; fi

# shellcheck disable=SC2086
$cxx $flags $defs -c "$here/shim.cpp" -o "$tmp/shim.o" 2>"$tmp/shim.log" &
shim_pid=$!
dist_ok=0
if [ "${LT_NO_DIST:-0}" != 1 ]; then
	# shellcheck disable=SC2086
	if [ -n "$ncclflags" ] && $cxx $flags $ncclflags -c "$here/dist.cpp" -o "$tmp/dist.o" 2>"$tmp/dist-nccl.log"; then
		dist_ok=1
	else
		if [ -n "$ncclflags" ]; then
			cp "$tmp/dist-nccl.log" "$out/libltshim-nccl.log"
			echo "build-shim.sh: dist.cpp does not compile with NCCL here: built without the nccl backend (compiler output in $out/libltshim-nccl.log)" >&2
		fi
		# shellcheck disable=SC2086
		if $cxx $flags -c "$here/dist.cpp" -o "$tmp/dist.o" 2>"$tmp/dist.log"; then dist_ok=1; fi
	fi
fi
if ! wait "$shim_pid"; then
	cat "$tmp/shim.log" >&2
	echo "build-shim.sh: shim.cpp does not compile against $inc" >&2
	exit 1
fi
if [ "$dist_ok" = 0 ]; then
	if [ "${LT_NO_DIST:-0}" != 1 ]; then
		cp "$tmp/dist.log" "$out/libltshim-dist.log"
		echo "build-shim.sh: dist.cpp (c10d) does not compile against this libtorch: built without data parallelism (compiler output in $out/libltshim-dist.log)" >&2
	fi
	# shellcheck disable=SC2086
	$cxx $flags -c "$here/dist_stub.cpp" -o "$tmp/dist.o"
fi
# shellcheck disable=SC2086 # cuda is a word list
$cxx -shared "$tmp/shim.o" "$tmp/dist.o" -o "$out/libltshim.so" \
	-L"$lib" -Wl,-rpath,"$lib" $cuda -ltorch -ltorch_cpu -lc10
echo "$out/libltshim.so"
