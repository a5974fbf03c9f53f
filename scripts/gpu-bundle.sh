#!/bin/sh
# scripts/gpu-bundle.sh (make gpu-bundle): builds what scripts/gpu-check.sh
# needs on a GPU machine without Go into .gpucheck/ (git-ignored): lcl built
# with -tags ltshim (it links libltshim.so, which the GPU machine builds
# against its own PyTorch), stripped, and lib/libjpeg.so.62 (libjpeg-turbo) in case that
# machine lacks it. Carry .gpucheck with the working tree (64 MiB in all).
# Linking needs a libltshim.so here: one is built against Debian's libtorch
# into bin/ltshim-host/ (not carried).
set -eu
cd "$(dirname "$0")/.."
b=.gpucheck
host=bin/ltshim-host
mkdir -p "$b/lib" "$host"
# Rebuild the host shim when a shim source is newer than it.
if [ ! -e "$host/libltshim.so" ] || [ -n "$(find trainer/torch -newer "$host/libltshim.so" \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.sh' \) | head -n 1)" ]; then
	echo "gpu-bundle: building the host shim (Debian's libtorch) for linking" >&2
	TORCH_INCLUDE=/usr/include TORCH_LIB=/usr/lib/x86_64-linux-gnu PYTHON=/usr/bin/python3 \
		sh trainer/torch/build-shim.sh /usr "$host" >/dev/null
fi
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
CGO_LDFLAGS="-L$PWD/$host" ${GO:-go} build -tags ltshim -trimpath \
	-ldflags "-s -w -X github.com/lcl-project/lcl/cmd/lcl/internal/cli.Version=$version" -o "$b/lcl" ./cmd/lcl
cp -L /usr/lib/x86_64-linux-gnu/libjpeg.so.62 "$b/lib/libjpeg.so.62"
size=$(du -sk "$b" | cut -f1)
tree=$(git ls-files -z | xargs -0 du -ck 2>/dev/null | tail -n 1 | cut -f1)
echo "gpu-bundle: $b is $((size / 1024)) MiB, the tracked tree $((tree / 1024)) MiB (64 MiB may travel)" >&2
if [ $((size + tree)) -gt $((60 * 1024)) ]; then
	echo "gpu-bundle: too large to travel with the tree" >&2
	exit 1
fi
