#!/bin/sh
# scripts/libtorch-flags.sh WHAT DIR: the go build settings for the libtorch
# in DIR, for `make LIBTORCH=DIR ...` (the Makefile calls it).
#   WHAT: cxxflags  CGO_CXXFLAGS (include folders, the C++ ABI, the standard)
#         ldflags   CGO_LDFLAGS (library folder, with an rpath to it)
#         tags      the build tags ("cuda" when DIR holds a CUDA libtorch)
#         check     nothing, or one line on stderr and exit 1 when DIR is not a libtorch
# DIR is a folder with include/torch and lib/libtorch.so: a pip or conda
# PyTorch's torch/ folder (python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))'),
# an unpacked libtorch zip from pytorch.org, or /usr for a distribution's
# (Debian's libraries are in /usr/lib/<triplet>, found too).
# The C++ ABI (_GLIBCXX_USE_CXX11_ABI) is read off libc10.so's symbols, so no
# Python is needed: pip wheels before PyTorch 2.7 use the old ABI.
set -eu
what=${1:-}
dir=${2:-}
[ -n "$what" ] && [ -n "$dir" ] || { echo "usage: scripts/libtorch-flags.sh cxxflags|ldflags|tags|check DIR" >&2; exit 2; }
dir=${dir%/}
inc=$dir/include
lib=""
for l in "$dir/lib" "$dir/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)" "$dir/lib64"; do
	if [ -e "$l/libtorch.so" ]; then lib=$l; break; fi
done
if [ ! -d "$inc/torch" ] || [ -z "$lib" ]; then
	echo "LIBTORCH=$dir is not a libtorch: want $inc/torch and lib/libtorch.so under it (a PyTorch's torch/ folder, or an unpacked libtorch)" >&2
	exit 1
fi
case "$what" in
check) exit 0 ;;
cxxflags)
	abi=1
	if command -v nm >/dev/null 2>&1 && [ -e "$lib/libc10.so" ]; then
		# The new ABI's std::string mangles as std::__cxx11::basic_string.
		nm -D --defined-only "$lib/libc10.so" 2>/dev/null | grep -q '__cxx11' || abi=0
	fi
	# PyTorch 2.14's headers refuse C++17 (#error ... C++20 or later).
	std=c++17
	if grep -qs 'C++20 or later' "$inc/ATen/ATen.h" "$inc/torch/csrc/api/include/torch/all.h"; then std=c++20; fi
	echo "-I$inc -I$inc/torch/csrc/api/include -D_GLIBCXX_USE_CXX11_ABI=$abi -std=$std"
	;;
ldflags) echo "-L$lib -Wl,-rpath,$lib" ;;
tags) if [ -e "$lib/libtorch_cuda.so" ]; then echo cuda; fi ;;
*) echo "scripts/libtorch-flags.sh: unknown WHAT '$what' (cxxflags, ldflags, tags, check)" >&2; exit 2 ;;
esac
