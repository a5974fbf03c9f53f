#!/usr/bin/env bash
# Installs the Debian packages lcl needs, when they are missing.
#   scripts/deps.sh build    what the build and `make demo` need (the demo runs on nothing else)
#   scripts/deps.sh          also what the tests compare against (the default: `make test`)
#   scripts/deps.sh bench    also the reference tools the benchmarks compare with
#   scripts/deps.sh lint     what `make lint` needs: the build set (go vet compiles the cgo packages) and protoc
#   scripts/deps.sh e2e      also what the end-to-end tests use: chromium (to render the HTML report),
#                            slurm-wlm and munge (a one-machine Slurm cluster), iproute2 (network namespaces)
#   scripts/deps.sh --list [SET]   print a set's packages (internal/testdep's test reads it)
set -euo pipefail

# build: what `go build` links (libtorch, Gloo, libjpeg-turbo) and what
# `make demo` reads (WordNet, Fashion-MNIST). No Python: the demo runs none.
build=(wordnet-base dataset-fashion-mnist libtorch-dev libgloo-dev libjpeg62-turbo-dev)
# test: the independent references the tests compare against (every package
# a test declares through internal/testdep; its
# TestDepsInstallsEveryDeclaredPackage checks), on top of build.
test=(python3-pil python3-numpy python3-networkx python3-scipy python3-torch python3-torchvision
  python3-grpcio python3-protobuf)
bench=(python3-gensim libjemalloc2 libtcmalloc-minimal4)
e2e=(chromium slurm-wlm munge iproute2)
proto=(protobuf-compiler)

kind=${1:-test}
if [ "$kind" = --list ]; then
  kind=${2:-test}
fi
case "$kind" in
  build) list=("${build[@]}") ;;
  test) list=("${build[@]}" "${test[@]}") ;;
  bench) list=("${build[@]}" "${test[@]}" "${bench[@]}") ;;
  e2e) list=("${build[@]}" "${test[@]}" "${e2e[@]}") ;;
  proto) list=("${build[@]}" "${test[@]}" "${proto[@]}") ;;
  lint) list=("${build[@]}" "${proto[@]}") ;;
  *) echo "deps: unknown set '$kind' (want build, test, bench, e2e, proto or lint)" >&2; exit 2 ;;
esac
if [ "${1:-}" = --list ]; then
  # scripts/deps.sh --list [build|test|bench|e2e|proto|lint]: the packages, one per line.
  printf '%s\n' "${list[@]}"
  exit 0
fi
need=("${list[@]}")

missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: missing ${missing[*]}, and this is not a Debian-like system (no apt-get)." >&2
  echo "deps: install WordNet 3.0 (set \$WNHOME), Fashion-MNIST (pass --data DIR) and libtorch (set LIBTORCH=DIR) by hand; see README.md." >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo"
  else
    echo "deps: missing ${missing[*]}; run as root:  apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null || { echo "deps: apt-get update failed" >&2; exit 1; }
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
