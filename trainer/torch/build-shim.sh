#!/bin/sh
# build-shim.sh builds the C ABI shim as a shared library, libltshim.so,
# against the libtorch of a Python PyTorch (or any libtorch folder), for an
# lcl binary built elsewhere with -tags ltshim. Needs only a C++17 compiler.
#   usage: build-shim.sh [TORCH_DIR] [OUT_DIR]
# TORCH_DIR defaults to the folder of the python3 torch package; its
# include/ and lib/ are used unless TORCH_INCLUDE / TORCH_LIB say otherwise
# (Debian: TORCH_INCLUDE=/usr/include TORCH_LIB=/usr/lib/x86_64-linux-gnu).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
torch=${1:-$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')}
out=${2:-.}
inc=${TORCH_INCLUDE:-$torch/include}
lib=${TORCH_LIB:-$torch/lib}
abi=$("$py" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))' 2>/dev/null || echo 1)
cuda=""
if [ -e "$lib/libtorch_cuda.so" ]; then cuda="-Wl,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--as-needed"; fi
${CXX:-g++} -std=c++17 -O2 -fPIC -shared -D_GLIBCXX_USE_CXX11_ABI="$abi" \
	-I"$inc" -I"$inc/torch/csrc/api/include" \
	"$here/shim.cpp" "$here/dist.cpp" -o "$out/libltshim.so" \
	-L"$lib" -Wl,-rpath,"$lib" $cuda -ltorch -ltorch_cpu -lc10
echo "$out/libltshim.so"
