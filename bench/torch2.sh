#!/usr/bin/env bash
# bench/torch2.sh: lcl against PyTorch, on libtorch 1.13 (Debian 12, this
# machine) and 2.6 (Debian 13, the root of scripts/torch2.sh), end to end.
#
# One run is a whole training run as a user starts it: process start, load
# Fashion-MNIST, keep 10 % of the training set, train EPOCHS epochs with
# soft targets (LS), evaluate the 10,000 test images after every epoch, exit.
# lcl runs `lcl train`; PyTorch runs bench/e2e_ref.py (the same model from
# bench/refnets.py, the same optimiser and schedule, data in one tensor and
# batches index_select'ed from it, evaluation under inference_mode). Modes:
# fp32, channels-last, bf16 autocast, bf16 + channels-last; PyTorch 2.6 also
# under torch.compile (inductor) in each mode, its compile time included
# (and printed apart). The nets are the ones users run: the default cnn
# (32×64, batch norm), cnn:bn=0, the demo's cnn:channels=16x32, mlp and
# ResNet-18 with the CIFAR stem (bench/refnets.py has PyTorch's copies).
#
# Every side runs at its best: PyTorch's setting is picked per libtorch,
# model and mode from glibc's defaults, the malloc tunables lcl applies
# in-process and jemalloc, each with OpenBLAS's own thread pool and with
# one OpenBLAS thread (a first run of each; the winner is printed, and its
# figure is then the best of the rounds, as lcl's is); lcl runs
# as it ships, with oneDNN on as PyTorch runs (LCL_ONEDNN=on: on the AMD VMs
# whose CPUID hides the cache sizes, lcl's guard would turn libtorch 2.x's
# oneDNN off for correctness — docs/trainer.md — while PyTorch keeps it, so
# the sides would time different kernels; elsewhere it changes nothing).
# Then the sides alternate for ROUNDS rounds (default 5): each round runs
# lcl and then PyTorch back to back, and the claim is the median of the
# rounds' paired speed ratios with their range (columns "pairs"); the best
# run of each side is printed too. Prints seconds per run, the ratios,
# PyTorch's settings, the CPU and the load average. All five nets in four
# modes take about three hours on 2 cores (BENCH_COMPILE=0 and fewer
# rounds, BENCH_MODES or MODELS narrow it: bench/torch2.sh 5 5 cnn) on a
# Zen 4 EPYC; on a Zen 3 EPYC a five-epoch ResNet-18 run
# takes ~7 minutes, so ResNet-18 gets one epoch there
# (bench/torch2.sh 1 5 resnet18:stem=cifar: ~55 minutes a mode).
# BENCH_BASE=REV also builds lcl at commit REV (git archive; its own shim
# sources) and times it in the same rounds, for a before/after of lcl on one
# machine in one run (columns base-1.13, base-2.6 and now/base: > 1 means
# today's lcl is faster).
#   usage: bench/torch2.sh [epochs] [rounds] [models]
#   env: LCL_TORCH2_ROOT (scripts/torch2.sh), BENCH_COMPILE=0 skips torch.compile,
#        BENCH_BASE=REV, BENCH_MODES (default "fp32 cl bf16 bf16-cl")
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-5}
rounds=${2:-5}
models=${3:-"cnn cnn:bn=0 cnn:channels=16x32 mlp resnet18:stem=cifar"}
threads=2
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
tmp=$(mktemp -d "$PWD/bin/torch2bench.XXXXXX" 2>/dev/null || { mkdir -p bin && mktemp -d "$PWD/bin/torch2bench.XXXXXX"; })
trap 'rm -rf "$tmp"' EXIT
rel=${tmp#"$PWD"/} # the same folder inside the root (/src/lcl/...)

hasjem() { # WHERE
	if [ "$1" = root ]; then [ -e "$(scripts/torch2.sh root)/usr/lib/x86_64-linux-gnu/libjemalloc.so.2" ]; else [ -e /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ]; fi
}
# Every candidate runs, or the pick is not PyTorch at its best: jemalloc is
# make bench-deps' here (the root's packages include it).
for w in here root; do
	hasjem "$w" || { echo "bench/torch2.sh: libjemalloc.so.2 is missing ($w): make bench-deps" >&2; exit 1; }
done

# lcl as make build ships it: bin/lcl opens the shim library beside it (and
# libtorch with it) only in the process that trains; a linked build (go
# build ./cmd/lcl) loads libtorch in every process of a run — the crash
# supervisor, the trainer and the built-in strategy's plugin process — about
# 1 s each on 2 cores, which is start-up no user pays.
echo "== building lcl as make build does, against libtorch 1.13 (here) and 2.6 (Debian 13 root)" >&2
shim='TORCH_INCLUDE=/usr/include TORCH_LIB=/usr/lib/x86_64-linux-gnu PYTHON=/usr/bin/python3 sh trainer/torch/build-shim.sh /usr'
# build SRC OUT: lcl and its shim from the source tree SRC into OUT/113
# (libtorch 1.13, here) and OUT/26 (2.6, in the root); both relative to the
# checkout, the working directory here and in the root.
build() {
	local cmd="top=\$PWD && cd $1 && $shim \$top/$2/\$v >/dev/null && go build -buildvcs=false -tags ltlazy -o \$top/$2/\$v/lcl ./cmd/lcl"
	mkdir -p "$2/113" "$2/26"
	v=113 sh -c "$cmd"
	scripts/torch2.sh run env v=26 sh -c "$cmd"
}
build . "$rel"
base=${BENCH_BASE:-}
if [ -n "$base" ]; then
	echo "== building lcl at $base ($(git rev-parse --short "$base")) the same way" >&2
	mkdir -p "$tmp/base/src"
	git archive "$base" | tar -x -C "$tmp/base/src"
	build "$rel/base/src" "$rel/base"
fi

# timed WHERE CMD...: the wall-clock seconds of CMD (its output to $tmp/out);
# WHERE is here or root. A failure ends the benchmark (a marker file, since
# this runs in a command substitution's subshell).
timed() {
	local where=$1 s
	shift
	rm -rf "$tmp/run" "$tmp/out" "$tmp/out.time"
	# Prints "EXIT SECONDS"; $rel/out is the same file on both sides.
	local t=(bash -c 'TIMEFORMAT=%R; { time "$@" >"$0" 2>&1; } 2>"$0.time"; echo "$? $(tail -n 1 "$0.time")"' "$rel/out")
	if [ "$where" = root ]; then
		s=$(scripts/torch2.sh run "${t[@]}" "$@" 2>/dev/null | tail -n 1)
	else
		s=$("${t[@]}" "$@" | tail -n 1)
	fi
	if [ "${s%% *}" != 0 ] || ! awk -v s="${s#* }" 'BEGIN { exit !(s ~ /^[0-9]+([.][0-9]+)?$/) }'; then
		{ echo "bench/torch2.sh: failed ($where): $*"; cat "$tmp/out"; } >&2
		touch "$tmp/failed"
		echo 0
		return 1
	fi
	echo "${s#* }"
}
check() { [ ! -e "$tmp/failed" ] || exit 1; }
tun=GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=2147483647
jem=LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
# data MODEL: lcl's --data and bench/e2e_ref.py's for the model (the CNN on
# Fashion-MNIST 10 %; ResNet-18 on 2 % of it: a 10 % epoch of ResNet-18
# takes minutes on 2 cores).
frac() { case $1 in resnet*) echo 0.02 ;; *) echo 0.1 ;; esac; }
lclrun() { # WHERE BIN MODEL MODE
	local f=() p=fp32
	case $4 in *cl*) f+=(--channels-last) ;; esac
	case $4 in bf16*) p=bf16 ;; esac
	# --preset fmnist-cnn: bench/e2e_ref.py's optimiser and schedule (SGD,
	# Nesterov 0.9, weight decay 5e-4, cosine from 0.05, batch 128) for every
	# model; ResNet-18's own preset (cifar-resnet) trains something else.
	timed "$1" env LCL_ONEDNN=on "$2" --quiet train --synsets fashion-mnist --model "$3" --preset fmnist-cnn --strategy ls \
		--fraction "$(frac "$3")" --epochs "$epochs" --threads "$threads" --no-store --out "$rel/run" --precision "$p" "${f[@]}" \
		--eval-batch 256
}
torchrun_() { # WHERE ENV MODEL MODE [COMPILE]
	local f=() p=fp32
	case $4 in *cl*) f+=(--channels-last) ;; esac
	case $4 in bf16*) p=bf16 ;; esac
	[ -n "${5:-}" ] && f+=(--compile "$5")
	# shellcheck disable=SC2086 # ENV is a word list
	timed "$1" env $2 /usr/bin/python3 -I bench/e2e_ref.py --model "$3" --fraction "$(frac "$3")" --epochs "$epochs" \
		--threads "$threads" --precision "$p" "${f[@]}"
}
# PyTorch's candidate settings: names, and envof NAME's environment.
candidates="default tunables jemalloc default+blas1 tunables+blas1 jemalloc+blas1"
envof() {
	local e="OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
	case $1 in
	tunables*) e="$e $tun" ;;
	jemalloc*) e="$e $jem" ;;
	esac
	case $1 in *+blas1) e="$e OPENBLAS_NUM_THREADS=1" ;; esac
	echo "$e"
}
pick() { # WHERE MODEL MODE: "SECONDS SETTING", PyTorch's fastest setting for them
	local b="" bt=1e9 s c
	for c in $candidates; do
		s=$(torchrun_ "$1" "$(envof "$c")" "$2" "$3")
		if awk -v a="$s" -v b="$bt" 'BEGIN{exit !(a<b)}'; then bt=$s b=$c; fi
	done
	echo "$bt $b"
}

min() { awk -v a="$1" -v b="$2" 'BEGIN{print (b == "" || a + 0 < b + 0) ? a : b}'; }
basehead=""
[ -z "$base" ] || basehead=$(printf '%9s %9s %8s %8s  ' base-1.13 base-2.6 "now/base" "now/base")
# paired RATIO...: the median of the pairs' speed ratios and their range.
paired() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {
	m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	printf "%.3f (%.3f-%.3f)", m, v[1], v[NR] }'; }
printf '%-22s %-9s %9s %9s %9s %9s %9s %9s   %7s %7s %7s %7s  %-19s %-19s %s%s\n' model mode lcl-1.13 torch-1.13 lcl-2.6 torch-2.6 \
	compile-2.6 compile_s "l26/t26" "l26/c26" "l26/l113" "l113/t113" "pairs t113/l113" "pairs t26/l26" "$basehead" "torch settings (1.13, 2.6)"
for m in $models; do
	for mode in ${BENCH_MODES:-fp32 cl bf16 bf16-cl}; do
		a="" c="" e="" ba="" bc=""
		p113=$(pick here "$m" "$mode")
		check
		p26=$(pick root "$m" "$mode")
		check
		# The pick chooses PyTorch's setting; its figure, like lcl's, is the
		# best of the rounds alone (the best of seven runs against one leaned
		# every one-round row towards PyTorch).
		b="" d="" set113=${p113#* } set26=${p26#* } q113="" q26=""
		for _ in $(seq "$rounds"); do
			x=$(lclrun here "$tmp/113/lcl" "$m" "$mode")
			check
			y=$(torchrun_ here "$(envof "$set113")" "$m" "$mode")
			check
			a=$(min "$x" "$a") b=$(min "$y" "$b") q113="$q113 $(awk -v a="$x" -v b="$y" 'BEGIN{printf "%.4f", b / a}')"
			x=$(lclrun root "$rel/26/lcl" "$m" "$mode")
			check
			y=$(torchrun_ root "$(envof "$set26")" "$m" "$mode")
			check
			c=$(min "$x" "$c") d=$(min "$y" "$d") q26="$q26 $(awk -v a="$x" -v b="$y" 'BEGIN{printf "%.4f", b / a}')"
			if [ -n "$base" ]; then
				ba=$(min "$(lclrun here "$tmp/base/113/lcl" "$m" "$mode")" "$ba")
				check
				bc=$(min "$(lclrun root "$rel/base/26/lcl" "$m" "$mode")" "$bc")
				check
			fi
			if [ "${BENCH_COMPILE:-1}" = 1 ]; then
				e=$(min "$(torchrun_ root "$(envof "$set26")" "$m" "$mode" default)" "$e")
				check
				cs=$(grep -o '"compile_s": [0-9.]*' "$tmp/out" | awk '{printf "%.1f", $2}' || true)
			fi
		done
		r() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a > 0 && b > 0) printf "%.3f", b / a; else print "n/a" }'; }
		# Ratios are speed ratios (time of the other / time of lcl): > 1 means lcl is faster.
		basecols=""
		[ -z "$base" ] || basecols=$(printf '%9s %9s %8s %8s  ' "$ba" "$bc" "$(r "$a" "$ba")" "$(r "$c" "$bc")")
		printf '%-22s %-9s %9s %9s %9s %9s %9s %9s   %7s %7s %7s %7s  %-19s %-19s %s%s\n' "$m" "$mode" "$a" "$b" "$c" "$d" "${e:-n/a}" "${cs:-n/a}" \
			"$(r "$c" "$d")" "$(r "$c" "${e:-0}")" "$(r "$c" "$a")" "$(r "$a" "$b")" "$(paired $q113)" "$(paired $q26)" "$basecols" "$set113, $set26"
	done
done
echo "seconds per whole run (best of $rounds), $epochs epochs, $threads threads; ratios are speed ratios (> 1: lcl faster)"
echo "pairs: each round runs lcl then PyTorch back to back; the median of the $rounds pairs' ratios (their range): the claim"
echo "lcl ran with LCL_ONEDNN=on: oneDNN in use on both sides, whatever lcl's guard would choose on this CPU"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); bf16 units: $(grep -o -m1 -w 'amx_bf16\|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
