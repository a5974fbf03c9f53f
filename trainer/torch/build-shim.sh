#!/bin/sh
# build-shim.sh builds the C ABI shim as a shared library, libltshim.so,
# against the libtorch of a Python PyTorch (or any libtorch folder), for an
# lcl binary built with -tags ltshim elsewhere. Needs only a C++17 compiler.
#   usage: build-shim.sh [TORCH_DIR] [OUT_DIR]
# TORCH_DIR defaults to the folder of the python3 torch package.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
torch=${1:-$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')}
out=${2:-.}
abi=$(python3 -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))' 2>/dev/null || echo 1)
cuda=""
if [ -e "$torch/lib/libtorch_cuda.so" ]; then cuda="-Wl,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--as-needed"; fi
${CXX:-g++} -std=c++17 -O2 -fPIC -shared -D_GLIBCXX_USE_CXX11_ABI="$abi" \
	-I"$torch/include" -I"$torch/include/torch/csrc/api/include" \
	"$here/shim.cpp" -o "$out/libltshim.so" \
	-L"$torch/lib" -Wl,-rpath,"$torch/lib" $cuda -ltorch -ltorch_cpu -lc10
echo "$out/libltshim.so"
