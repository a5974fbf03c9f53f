#!/usr/bin/env bash
# scripts/torch2.sh: lcl against PyTorch 2.x, in a Debian 13 (trixie) root.
#
#   scripts/torch2.sh test        go vet ./... and go test ./... inside the root (make test-torch2)
#   scripts/torch2.sh run CMD...  any command inside the root, in the checkout (e.g. go build ./cmd/lcl)
#   scripts/torch2.sh root        only make (or update) the root and print its path
#   scripts/torch2.sh cuda        the CUDA build against libtorch-cuda 2.6, in a root of its own
#                                 (make test-torch2-cuda; not in CI: 1.4 GB of CUDA libraries)
#
# The root is made once with debootstrap from Debian's registry and kept
# outside the checkout, in ${XDG_CACHE_HOME:-~/.cache}/lcl/debian13
# (LCL_TORCH2_ROOT overrides), so fresh clones on the same machine reuse it.
# It holds Debian 13's libtorch-dev 2.6 and python3-torch 2.6 (the tests'
# references), the rest of scripts/deps.sh's test packages, OpenBLAS
# (Debian's PyTorch links the generic BLAS otherwise, which halves its
# Linear layers' speed) and g++; never anything of the host's Debian 12.
# Go comes from the host: its toolchain (GOROOT) and module cache are
# bind-mounted read-only, so they are always the host's own; the build cache
# is the root's own (/root/.cache/go-build), since Go's cache keys do not
# cover the libtorch headers cgo compiles against.
#
# Mounts live in a private mount namespace (unshare -m) that ends with the
# command: nothing stays mounted if it is interrupted. Needs root (or
# password-less sudo), debootstrap (installed when missing) and network
# access to the Debian mirror the first time (LCL_DEBIAN_MIRROR,
# http://deb.debian.org/debian). A half-made root is made again from the
# start.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD

cache=${XDG_CACHE_HOME:-$HOME/.cache}/lcl
root=${LCL_TORCH2_ROOT:-$cache/debian13}
# Where scripts/deps.sh puts the Quick, Draw! drawings (data.DefaultQuickDrawDir):
# bind-mounted into the root at the same path.
quickdraw=/usr/share/datasets/quickdraw
mirror=${LCL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=trixie
components="main contrib"

usage() { sed -n '3,6p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
cmd=$1
shift
case "$cmd" in test | run | root | cuda) ;; -h | --help) usage ;; *) echo "torch2: unknown command '$cmd'" >&2; usage ;; esac
[ "$cmd" != run ] || [ $# -ge 1 ] || { echo "torch2: run needs a command" >&2; exit 2; }

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		exec sudo -n --preserve-env=XDG_CACHE_HOME,LCL_TORCH2_ROOT,LCL_DEBIAN_MIRROR "$0" "$cmd" "$@"
	fi
	echo "torch2: the Debian 13 root needs root (chroot, mounts): run as root or with password-less sudo" >&2
	exit 1
fi

say() { echo "torch2: $*" >&2; }

# The packages of the root: the tests' (scripts/deps.sh's list, one source
# of truth), and what Debian 13 needs besides for building and measuring.
mapfile -t pkgs < <(scripts/deps.sh --list test)
# jemalloc, tcmalloc and python3-dev/setuptools: bench/torch2.sh and
# bench/models.sh (PyTorch's best allocator, torch.compile's C++ wrappers).
pkgs+=(libopenblas0-pthread g++ git ca-certificates libjemalloc2 libtcmalloc-minimal4t64 python3-dev python3-setuptools)
want=$(printf '%s\n' "${pkgs[@]}" | sort -u)

# inside CMD...: runs CMD in the root, as root, in the checkout (/src/lcl),
# with the host's Go, in a mount namespace of its own.
inside() {
	local goroot gomod
	goroot=$(go env GOROOT)
	gomod=$(go env GOMODCACHE)
	mkdir -p "$root/usr/local/go" "$root/gomodcache" "$root/src/lcl" "$root/root/.cache/go-build" "$root$quickdraw"
	cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	unshare --mount --propagation private -- /bin/sh -euc '
		root=$1 src=$2 goroot=$3 gomod=$4 quickdraw=$5; shift 5
		# The Quick, Draw! drawings are no Debian package: those of the host, read-only.
		if [ -d "$quickdraw" ]; then
			mount --bind "$quickdraw" "$root$quickdraw" && mount -o remount,bind,ro "$root$quickdraw"
		fi
		mount -t proc proc "$root/proc"
		mount --rbind /dev "$root/dev"
		mount --rbind /sys "$root/sys"
		mount -t tmpfs -o size=50% tmpfs "$root/dev/shm"
		mount --bind "$goroot" "$root/usr/local/go" && mount -o remount,bind,ro "$root/usr/local/go"
		mount --bind "$gomod" "$root/gomodcache" && mount -o remount,bind,ro "$root/gomodcache"
		mount --bind "$src" "$root/src/lcl"
		exec chroot "$root" /usr/bin/env -i \
			PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" TMPDIR=/tmp \
			GOROOT=/usr/local/go GOMODCACHE=/gomodcache GOCACHE=/root/.cache/go-build \
			GOPROXY=off GOSUMDB=off GOFLAGS=-buildvcs=false GOTOOLCHAIN=local \
			LCL_TORCH2=1 DEBIAN_FRONTEND=noninteractive \
			/bin/sh -c "cd /src/lcl && exec \"\$@\"" sh "$@"
	' sh "$root" "$src" "$goroot" "$gomod" "$quickdraw" "$@"
}

make_root() {
	if [ -e "$root/.lcl-packages" ] && [ "$(cat "$root/.lcl-packages")" = "$want" ]; then
		return 0
	fi
	if [ ! -e "$root/.lcl-debootstrap" ]; then
		command -v debootstrap >/dev/null 2>&1 || {
			say "installing debootstrap"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null
		}
		rm -rf "$root"
		mkdir -p "$(dirname "$root")"
		say "making the Debian 13 root in $root (debootstrap $suite from $mirror, about a minute)"
		debootstrap --variant=minbase --components="${components// /,}" "$suite" "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 || {
			tail -n 20 "$cache/debootstrap.log" >&2
			say "debootstrap failed (whole log: $cache/debootstrap.log)"
			exit 1
		}
		echo "deb $mirror $suite $components" >"$root/etc/apt/sources.list"
		touch "$root/.lcl-debootstrap"
	fi
	say "installing ${what:-libtorch 2.6, PyTorch 2.6 and the test packages} in the root (a few minutes the first time)"
	${before_install:-true}
	# shellcheck disable=SC2046 # one word per package
	inside sh -c 'apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "$@" >/dev/null' sh $want || {
		say "apt-get in the root failed"
		exit 1
	}
	printf '%s\n' "$want" >"$root/.lcl-packages"
	# Go's build cache does not see system headers: what cgo compiled
	# against the old package set (a header that __has_include found
	# missing, say) would be reused.
	rm -rf "$root/root/.cache/go-build"
}

# The CUDA build (make test-torch2-cuda): Debian 13's libtorch-cuda-dev 2.6
# (contrib, with its CUDA 12.4 libraries from non-free: 1.3 GB) in a root of
# its own, since libtorch-cuda replaces the CPU libtorch. Two packages cannot
# be had here: nvidia-cudnn is an installer that downloads cuDNN from
# NVIDIA's site at install time, which is out of reach; nvidia-cuda-dev
# (CUDA's headers, 934 MB) is needed by no source of lcl, and only cuDNN's
# installer asks for it. A placeholder package stands in for nvidia-cudnn,
# and libcudnn.so.9 is a generated stub defining the cudnn* functions
# libtorch_cuda imports, each returning 1 (CUDNN_STATUS_NOT_INITIALIZED):
# enough to link, and to start on a machine without a GPU, where nothing
# calls cuDNN. A GPU machine needs the real cuDNN (pip's, or NVIDIA's).
cuda_check() {
	root=${LCL_TORCH2_CUDA_ROOT:-$cache/debian13-cuda}
	components="main contrib non-free"
	what="libtorch-cuda 2.6 and its CUDA libraries"
	want=$(printf '%s\n' libtorch-cuda-dev libgloo-cuda-dev libjpeg62-turbo-dev g++ git ca-certificates /placeholder/nvidia-cudnn.deb | sort -u)
	before_install=cuda_placeholder
	make_root
	go mod download
	inside bash -euc "$(cat <<'INSIDE'
lib=/usr/lib/x86_64-linux-gnu
# The stub: every cudnn* function libtorch_cuda imports, in the version node
# its references name (libcudnn.so.9, as cuDNN's own version script has it).
nm -D --undefined-only $lib/libtorch_cuda.so | awk '$2 ~ /^cudnn/ { sub(/@.*/, "", $2); print $2 }' | sort -u |
	awk '{ printf "int %s(void) { return 1; }\n", $1 }' >/tmp/cudnn_stub.c
printf 'libcudnn.so.9 { global: cudnn*; local: *; };\n' >/tmp/cudnn_stub.map
gcc -shared -fPIC -Wl,-soname,libcudnn.so.9 -Wl,--version-script=/tmp/cudnn_stub.map -o $lib/libcudnn.so.9 /tmp/cudnn_stub.c
echo "torch2: the libcudnn.so.9 stub: $(grep -c . /tmp/cudnn_stub.c) functions" >&2
echo "torch2: go build -tags cuda ./cmd/lcl" >&2
go build -tags cuda -o /tmp/lcl-cuda ./cmd/lcl
ldd /tmp/lcl-cuda | grep -q libtorch_cuda || { echo "torch2: the binary does not link libtorch_cuda" >&2; exit 1; }
echo "torch2: trainer/torch/build-shim.sh against libtorch-cuda" >&2
TORCH_INCLUDE=/usr/include TORCH_LIB=$lib PYTHON=python3 sh trainer/torch/build-shim.sh /usr /tmp/shim-cuda >/dev/null
info=$(/tmp/lcl-cuda bench info)
echo "torch2: lcl bench info, no GPU here: $info" >&2
case $info in *'"cuda_devices":0'*) ;; *) echo "torch2: expected cuda_devices 0" >&2; exit 1 ;; esac
case $info in *'"dist_backends":["gloo"'*) ;; *) echo "torch2: expected the gloo backend (libgloo-cuda-dev)" >&2; exit 1 ;; esac
data="synthetic?n=64&test=32&classes=4&shape=1,16,16"
rm -rf /tmp/cuda-run /tmp/cuda-run2
/tmp/lcl-cuda --quiet --json train --data "$data" --model cnn:channels=4x8 --epochs 1 --batch 16 --threads 2 \
	--no-store --out /tmp/cuda-run >/tmp/cuda-train
echo "torch2: lcl train on the CPU: $(tail -n 1 /tmp/cuda-train | cut -c1-160)..." >&2
set +e
/tmp/lcl-cuda train --data "$data" --model cnn:channels=4x8 --epochs 1 --device cuda --no-store \
	--out /tmp/cuda-run2 >/dev/null 2>/tmp/cuda-err
rc=$?
set -e
echo "torch2: lcl train --device cuda: exit $rc: $(cat /tmp/cuda-err)" >&2
if [ "$rc" = 0 ] || [ "$(grep -c . /tmp/cuda-err)" != 1 ]; then
	echo "torch2: --device cuda without a GPU: want one line and a failure" >&2
	exit 1
fi
INSIDE
)"
	say "the CUDA build links against libtorch-cuda 2.6, starts without a GPU, trains on the CPU and refuses --device cuda"
}

# cuda_placeholder builds the placeholder nvidia-cudnn package in the root.
cuda_placeholder() {
	local d=$root/placeholder/nvidia-cudnn
	mkdir -p "$d/DEBIAN"
	printf '%s\n' "Package: nvidia-cudnn" "Version: 9.99~lcl1" "Architecture: amd64" "Maintainer: lcl <lcl@localhost>" \
		"Description: placeholder for nvidia-cudnn (scripts/torch2.sh)" \
		" cuDNN's installer downloads it from NVIDIA, which this machine cannot reach." >"$d/DEBIAN/control"
	dpkg-deb --build "$d" "$root/placeholder/nvidia-cudnn.deb" >/dev/null
}

if [ "$cmd" = cuda ]; then
	cuda_check
	exit 0
fi

make_root
case "$cmd" in
root)
	echo "$root"
	;;
test)
	# Every module the tests build is in the host's cache (the root has no proxy);
	# the drawings the tests read are the host's (scripts/deps.sh quickdraw).
	go mod download
	scripts/deps.sh quickdraw
	start=$(date +%s)
	inside sh -c 'python3 -c "import torch; print(\"torch2: PyTorch\", torch.__version__, \"(Debian 13)\")" >&2 && go vet ./... && OMP_WAIT_POLICY=PASSIVE go test -count=1 -timeout 30m ./...'
	say "tests against PyTorch 2.6 passed in $(($(date +%s) - start)) s"
	;;
run)
	go mod download
	inside "$@"
	;;
esac
