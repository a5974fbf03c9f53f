#!/usr/bin/env bash
# scripts/gpu-check.sh OUTDIR [--cpu] [--keep-logs]
#
# One-command device check (docs/trainer.md, "GPU check") for a machine with
# PyTorch 2.x, a C++ compiler and CUDA but no Go and no network. It uses the
# bundle `make gpu-bundle` builds here (.gpucheck/: a stripped lcl built with
# -tags ltshim, and libjpeg-turbo's libjpeg.so.62), builds libltshim.so against the machine's
# PyTorch, then measures and prints one table:
#   - lcl train on synthetic data on cuda:0 (one short epoch, bf16,
#     channels-last), lcl eval of its checkpoint on the CPU and the GPU;
#   - training throughput of ResNet-50 (ImageNet stem, 224², batch 256) and
#     ResNet-18 (CIFAR stem, 32², batch 512) in fp32, bf16 and
#     bf16+channels-last, lcl next to PyTorch eager (bench/step_ref.py) on the
#     same model, batch and precision, and the ratio; peak GPU memory of each
#     side (caching allocator, and nvidia-smi's device total);
#   - the image pipeline's img/s on all cores against ResNet-50's GPU img/s.
# Every step has its own timeout, its log in OUTDIR/logs (packed into
# OUTDIR/logs.tgz at the end unless --keep-logs), and a failure is recorded
# in the table while the script goes on. OUTDIR/table.md is the table,
# OUTDIR/summary.txt the status of every step; OUTDIR/results.tsv grows as
# steps finish (kept if the script is killed).
#
# --cpu runs the same steps on the CPU against Debian's libtorch 1.13
# (/usr/include, /usr/lib/x86_64-linux-gnu, /usr/bin/python3) at small
# sizes; a test runs it (cmd/lcl, -tags e2e) so the script cannot rot.
#
# env: PYTHON (python3: the PyTorch to build against and compare with),
#      LCL_GPUCHECK_BUNDLE (.gpucheck), LCL_GPUCHECK_BUDGET (seconds after
#      which the remaining steps are skipped: 450, --cpu 900),
#      DEVICE (cuda:0), LCL_GPUCHECK_ROWS (the throughput rows to measure,
#      default all: r50-fp32 r50-bf16 r50-bf16-cl r18-fp32 r18-bf16 r18-bf16-cl),
#      LCL_GPUCHECK_SHIM (a folder with a libltshim.so to use
#      instead of building one: for debugging this script).
set -uo pipefail

usage() { echo "usage: scripts/gpu-check.sh OUTDIR [--cpu] [--keep-logs]" >&2; exit 2; }
out="" mode=gpu keep=0
for a in "$@"; do
	case "$a" in
	--cpu) mode=cpu ;;
	--keep-logs) keep=1 ;;
	-h | --help) usage ;;
	-*) echo "gpu-check: unknown option $a" >&2; usage ;;
	*) [ -z "$out" ] || usage; out=$a ;;
	esac
done
[ -n "$out" ] || usage
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
logs=$out/logs
rm -rf "$logs" "$out/logs.tgz" "$out/table.md" "$out/summary.txt" "$out/results.tsv"
mkdir -p "$logs"
bundle=${LCL_GPUCHECK_BUNDLE:-$root/.gpucheck}
lcl=$bundle/lcl
work=$(mktemp -d "${TMPDIR:-/tmp}/lcl-gpucheck.XXXXXX") || exit 1
memwatch=""
cleanup() {
	[ -n "$memwatch" ] && kill "$memwatch" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
t0=$(date +%s)
ncpu=$(nproc 2>/dev/null || echo 1)
# Both sides with the same OpenMP wait policy: lcl's default (docs/trainer.md).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

if [ "$mode" = gpu ]; then
	py=${PYTHON:-python3}
	dev=${DEVICE:-cuda:0}
	budget=${LCL_GPUCHECK_BUDGET:-450}
	threads=0
	# signal=1: the labels can be learnt, so the step shows training on the
	# device learns (32 steps: test top-1 well above chance), not only runs.
	# lr 0.01, not the preset's 0.1: after a few dozen steps at 0.1 the
	# batch-norm running statistics trail the weights and evaluation is at
	# chance (train top-1 32 %, test 10 % on the H200's first run; PyTorch
	# does the same: train 100 %, test 10 % at 0.1, test 99 % at 0.01).
	train_data="synthetic?n=8192&test=1024&classes=10&shape=3,64,64&signal=1"
	train_model=resnet18 train_batch=256 train_lr=0.01
	r50=(--model resnet50:stem=imagenet --input "3,224,224" --classes 1000 --batch 256 --steps 12 --warmup 5)
	r50_ref=(--model resnet50 --stem imagenet --size 224 --classes 1000 --batch 256 --steps 12 --warmup 5)
	r18=(--model resnet18:stem=cifar --input "3,32,32" --classes 100 --batch 512 --steps 30 --warmup 5)
	r18_ref=(--model resnet18 --stem cifar --size 32 --classes 100 --batch 512 --steps 30 --warmup 5)
	jpegs=512 loader_batch=64 passes=3 bench_t=120
	parity_data="synthetic?n=2048&test=512&classes=10&shape=3,32,32&signal=1" parity_model="resnet18:width=16" parity_classes=10
else
	py=/usr/bin/python3
	dev=cpu
	budget=${LCL_GPUCHECK_BUDGET:-900}
	threads=2
	train_data="synthetic?n=64&test=32&classes=4&shape=3,16,16"
	train_model="resnet18:width=8" train_batch=16 train_lr=0.01
	r50=(--model resnet50:stem=imagenet --input "3,64,64" --classes 10 --batch 2 --steps 1 --warmup 1)
	r50_ref=(--model resnet50 --stem imagenet --size 64 --classes 10 --batch 2 --steps 1 --warmup 1)
	r18=(--model resnet18:stem=cifar --input "3,32,32" --classes 10 --batch 4 --steps 1 --warmup 1)
	r18_ref=(--model resnet18 --stem cifar --size 32 --classes 10 --batch 4 --steps 1 --warmup 1)
	jpegs=16 loader_batch=8 passes=1 bench_t=180
	parity_data="synthetic?n=64&test=32&classes=4&shape=3,16,16&signal=1" parity_model="resnet18:width=8" parity_classes=4
fi

# ---- helpers ---------------------------------------------------------------

elapsed() { echo $(($(date +%s) - t0)); }
left() { echo $((budget - $(elapsed))); }

# result KEY VALUE: one line of results.tsv (read back for the table).
result() { printf '%s\t%s\n' "$1" "$2" >>"$out/results.tsv"; }
get() { awk -F '\t' -v k="$1" '$1 == k { v = $2 } END { print (v == "" ? "n/a" : v) }' "$out/results.tsv" 2>/dev/null; }

# step NAME TIMEOUT CMD...: runs CMD with its own timeout (capped by the
# budget), output in logs/NAME.log; records NAME's status; returns CMD's.
step() {
	local name=$1 t=$2 rc s
	shift 2
	local l
	l=$(left)
	if [ "$l" -lt 15 ]; then
		echo "skipped: the ${budget}s budget is spent" >"$logs/$name.log"
		result "status:$name" "SKIPPED (budget)"
		return 125
	fi
	[ "$t" -gt "$l" ] && t=$l
	s=$(date +%s)
	echo "\$ $*" >"$logs/$name.log"
	timeout -k 10 "$t" "$@" >>"$logs/$name.log" 2>&1
	rc=$?
	local d=$(($(date +%s) - s)) st
	case $rc in
	0) st=OK ;;
	124 | 137) st="TIMEOUT (${t}s)" ;;
	*) st="FAIL (exit $rc)" ;;
	esac
	result "status:$name" "$st"
	result "time:$name" "${d}s"
	printf '%-22s %-16s %4ss\n' "$name" "$st" "$d" >&2
	return $rc
}

# jget FILE KEY: KEY of the last JSON line of FILE that has it.
jget() {
	"$py" - "$1" "$2" 2>/dev/null <<'EOF' || echo n/a
import json, sys
v = "n/a"
for line in open(sys.argv[1], errors="replace"):
    line = line.strip()
    if not line.startswith("{"):
        continue
    try:
        d = json.loads(line)
    except ValueError:
        continue
    for k in sys.argv[2].split("."):
        if isinstance(d, list):
            d = d[0] if d else None
        d = d.get(k) if isinstance(d, dict) else None
    if d is not None:
        v = d
print(v)
EOF
}

# "${lclx[@]}" ARGS: the bundled lcl with the shim built here (a command
# line, not a function: timeout runs programs).
lclx=(env "LD_LIBRARY_PATH=$work/shim:$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$lcl")
thr=()
[ "$threads" -gt 0 ] && thr=(--threads "$threads")

# GPU memory in use on the device (MiB), the highest seen while watching.
gpumem() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i "${dev#cuda:}" 2>/dev/null | head -n 1 | tr -dc 0-9; }
watch_start() {
	[ "$mode" = gpu ] || return 0
	command -v nvidia-smi >/dev/null || return 0
	: >"$work/mem"
	(
		peak=0
		while :; do
			v=$(gpumem)
			if [ -n "$v" ] && [ "$v" -gt "$peak" ]; then peak=$v; echo "$peak" >"$work/mem"; fi
			sleep 0.2
		done
	) &
	memwatch=$!
}
watch_stop() { # prints the peak MiB seen above the idle baseline
	[ -n "$memwatch" ] || { echo n/a; return; }
	kill "$memwatch" 2>/dev/null
	wait "$memwatch" 2>/dev/null
	memwatch=""
	local p
	p=$(cat "$work/mem" 2>/dev/null)
	if [ -n "$p" ] && [ -n "${base_mem:-}" ]; then echo $((p - base_mem)); else echo n/a; fi
}
num() { awk -v v="$1" 'BEGIN { if (v ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) printf "%.1f", v; else print v }'; }
pct() { awk -v v="$1" 'BEGIN { if (v ~ /^[0-9.]+(e[-+]?[0-9]+)?$/) printf "%.2f %%", 100 * v; else print v }'; }
mib() { awk -v b="$1" 'BEGIN { if (b == "n/a" || b < 0) print "n/a"; else printf "%.0f", b / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else print "n/a" }'; }

# ---- 1. the machine --------------------------------------------------------

{
	echo "mode: $mode   device: $dev   cpus: $ncpu   date: $(date -u +%FT%TZ)"
	uname -a
	[ "$mode" = gpu ] && nvidia-smi
	command -v nvcc >/dev/null && nvcc --version | tail -n 2
	"${CXX:-g++}" --version | head -n 1
	"$py" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count(), "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI)'
	ls -la "$bundle" "$bundle/lib" 2>&1
} >"$logs/machine.log" 2>&1
result gpu "$( [ "$mode" = gpu ] && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader -i "${dev#cuda:}" 2>/dev/null | head -n 1 || echo "CPU (--cpu)")"
result torch "$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo n/a)"
[ "$mode" = gpu ] && base_mem=$(gpumem)
if [ ! -x "$lcl" ]; then
	echo "gpu-check: $lcl is missing: run 'make gpu-bundle' where Go is, and carry .gpucheck" >&2
	result "status:bundle" "FAIL (no $lcl)"
fi

# ---- 2. the shim against this machine's PyTorch -----------------------------

if [ -n "${LCL_GPUCHECK_SHIM:-}" ]; then # a libltshim.so built already (debugging the script)
	mkdir -p "$work/shim" && cp "$LCL_GPUCHECK_SHIM/libltshim.so" "$work/shim/"
	result "status:shim-build" "OK (given: $LCL_GPUCHECK_SHIM)"
elif [ "$mode" = gpu ]; then
	step shim-build 420 env PYTHON="$py" sh "$root/trainer/torch/build-shim.sh" "" "$work/shim"
else
	step shim-build 420 env PYTHON="$py" TORCH_INCLUDE=/usr/include TORCH_LIB=/usr/lib/x86_64-linux-gnu \
		sh "$root/trainer/torch/build-shim.sh" /usr "$work/shim"
fi
[ -e "$work/shim/libltshim-dist.log" ] && cp "$work/shim/libltshim-dist.log" "$logs/shim-dist-compile.log"
[ -e "$work/shim/libltshim-nccl.log" ] && cp "$work/shim/libltshim-nccl.log" "$logs/shim-nccl-compile.log"

step info 60 "${lclx[@]}" bench info
result info "$(tail -n 1 "$logs/info.log")"
# The data-parallel backends the shim was built with (build-shim.sh: Gloo
# where the libtorch has its headers, NCCL where nccl.h is found).
backends=$("$py" -c 'import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{"): print(",".join(json.loads(l).get("dist_backends") or []))' "$logs/info.log" 2>/dev/null | tail -n 1)
if grep -q "built without data parallelism" "$logs/shim-build.log" 2>/dev/null; then
	result shim-dist "none (dist.cpp did not compile: logs/shim-dist-compile.log)"
elif [ -n "$backends" ]; then
	result shim-dist "$backends"
else
	result shim-dist "none"
fi

# ---- 3. train on the device, evaluate on the CPU and the device ------------

step train 240 "${lclx[@]}" train --data "$train_data" --model "$train_model" --epochs 1 --batch "$train_batch" \
	--lr "$train_lr" --device "$dev" --precision bf16 --channels-last --out "$work/run" --no-store --json --quiet \
	--eval-batch 256 "${thr[@]}"
result train-top1 "$(pct "$(jget "$logs/train.log" final.test_top1)")"
if [ "$mode" = gpu ]; then
	result train-learns "$(awk -v a="$(jget "$logs/train.log" final.test_top1)" 'BEGIN { if (a == "n/a") print "n/a"; else print (a >= 0.5 ? "yes" : "NO") " (test top-1 >= 50 %, chance 10 %)" }')"
else
	result train-learns "not checked (--cpu: too few steps)"
fi
result train-imgs "$(num "$(jget "$logs/train.log" epochs.img_per_s)")"
# The recipe paths on the device: mixup/CutMix in the step, and online label
# smoothing's class probabilities summed on the device and read each epoch.
step recipe 240 "${lclx[@]}" train --data "$train_data" --model "$train_model" --epochs 2 --batch "$train_batch" \
	--lr "$train_lr" --device "$dev" --precision bf16 --channels-last --strategy ols --mixup 0.8 --cutmix 1 \
	--out "$work/recipe" --no-store --json --quiet --eval-batch 256 "${thr[@]}"
result recipe-top1 "$(pct "$(jget "$logs/recipe.log" final.test_top1)")"
step eval-cpu 180 "${lclx[@]}" eval --checkpoint "$work/run" --device cpu --json --batch 256 "${thr[@]}"
step eval-gpu 120 "${lclx[@]}" eval --checkpoint "$work/run" --device "$dev" --json --batch 256 "${thr[@]}"
for d in cpu gpu; do
	result "eval-$d-top1" "$(jget "$logs/eval-$d.log" test_top1)"
	result "eval-$d-loss" "$(jget "$logs/eval-$d.log" test_loss)"
done
result eval-same "$(awk -v a="$(get eval-cpu-top1)" -v b="$(get eval-gpu-top1)" -v la="$(get eval-cpu-loss)" -v lb="$(get eval-gpu-loss)" \
	'BEGIN { if (a == "n/a" || b == "n/a") print "n/a"; else { d = a - b; if (d < 0) d = -d; e = la - lb; if (e < 0) e = -e;
	  print ((d < 0.0015 && e < 1e-3 * (la < 0 ? -la : la) + 1e-4) ? "yes" : "NO") } }')"

# ---- 3b. the same run on the CPU and the device ----------------------------

# AdamW, gradient clipping, the weights' moving average and a validation
# split, in fp32 without TF32, the same seed on both: the device must give
# the CPU's figures up to float rounding (convolution algorithms differ).
parity=(train --data "$parity_data" --model "$parity_model" --epochs 1 --batch 64 --optimizer adamw --lr 1e-3
	--weight-decay 0.05 --clip-grad-norm 1 --ema-decay 0.99 --val-fraction 0.1 --seed 3 --precision fp32
	--tf32=false --no-store --json --quiet --eval-batch 256 "${thr[@]}")
# pair NAME ARGS...: lcl ARGS on the CPU and on the device; NAME-same says
# whether their test loss (within 1 %) and top-1 (within 0.02) agree.
pair() {
	local name=$1 d
	shift
	step "$name-cpu" 240 "${lclx[@]}" "$@" --device cpu --out "$work/$name-cpu"
	step "$name-gpu" 120 "${lclx[@]}" "$@" --device "$dev" --out "$work/$name-gpu"
	for d in cpu gpu; do
		result "$name-$d-loss" "$(jget "$logs/$name-$d.log" final.test_loss)"
		result "$name-$d-top1" "$(jget "$logs/$name-$d.log" final.test_top1)"
	done
	result "$name-same" "$(awk -v a="$(get "$name-cpu-loss")" -v b="$(get "$name-gpu-loss")" -v ta="$(get "$name-cpu-top1")" -v tb="$(get "$name-gpu-top1")" \
		'BEGIN { if (a == "n/a" || b == "n/a") print "n/a"; else { d = a - b; if (d < 0) d = -d; t = ta - tb; if (t < 0) t = -t;
		  printf "%s (test loss %.6g vs %.6g, top-1 %.4f vs %.4f)", (d <= 1e-2 * (a < 0 ? -a : a) && t <= 0.02) ? "yes" : "NO", a, b, ta, tb } }')"
}
pair parity "${parity[@]}"

# The same run with hierarchical cross-entropy (hxe): its group term sums
# the softmax over each node's classes in float64 on the device. The
# similarity: two groups of classes (first half, second half), 0.5 within.
"$py" - "$work/sim.npy" "$parity_classes" <<'EOF' || result "status:hxe-sim" "FAIL (numpy)"
import sys
import numpy as np
n = int(sys.argv[2])
s = np.zeros((n, n))
for i in range(n):
    for j in range(n):
        s[i, j] = 1.0 if i == j else (0.5 if (2 * i) // n == (2 * j) // n else 0.0)
np.save(sys.argv[1], s)
EOF
hxe=(--strategy hxe --matrix "$work/sim.npy" --param alpha=0.2)
pair hxe "${parity[@]}" "${hxe[@]}"

# ---- 4. throughput: lcl next to PyTorch eager ------------------------------

# bench NAME LCL_ARGS... -- REF_ARGS...
rows=${LCL_GPUCHECK_ROWS:-r50-fp32 r50-bf16 r50-bf16-cl r18-fp32 r18-bf16 r18-bf16-cl}
bench() {
	local name=$1
	shift
	case " $rows " in *" $name "*) ;; *) result "status:lcl-$name" "not asked (LCL_GPUCHECK_ROWS)"; result "status:torch-$name" "not asked"; return 0 ;; esac
	local la=() ra=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do la+=("$1"); shift; done
	shift
	ra=("$@")
	watch_start
	step "lcl-$name" "$bench_t" "${lclx[@]}" bench step --device "$dev" "${la[@]}" "${thr[@]}"
	result "smi-lcl-$name" "$(watch_stop)"
	watch_start
	step "torch-$name" "$bench_t" "$py" "$root/bench/step_ref.py" --device "$dev" --threads "$threads" "${ra[@]}"
	result "smi-torch-$name" "$(watch_stop)"
	for side in lcl torch; do
		result "ips-$side-$name" "$(num "$(jget "$logs/$side-$name.log" img_per_s)")"
		result "alloc-$side-$name" "$(mib "$(jget "$logs/$side-$name.log" peak_allocated)")"
		result "resv-$side-$name" "$(mib "$(jget "$logs/$side-$name.log" peak_reserved)")"
	done
}
# The acceptance figure first (ResNet-50 bf16 channels-last), then the
# pipeline, then the rest: a spent budget skips the least important.
bench r50-bf16-cl "${r50[@]}" --precision bf16 --channels-last -- "${r50_ref[@]}" --precision bf16 --channels-last

# ---- 5. the image pipeline on all cores ------------------------------------

step jpegs 120 "${lclx[@]}" bench jpegs --out "$work/jpegs" --n "$jpegs"
step loader-1 120 "${lclx[@]}" bench loader --data "folder:$work/jpegs" --workers 1 --batch "$loader_batch" --passes 1
step loader-all 120 "${lclx[@]}" bench loader --data "folder:$work/jpegs" --workers "$ncpu" --batch "$loader_batch" --passes "$passes"
result loader-1 "$(num "$(jget "$logs/loader-1.log" img_per_s)")"
result loader-all "$(num "$(jget "$logs/loader-all.log" img_per_s)")"
result loader-decoder "$(jget "$logs/loader-all.log" decoder)"

bench r50-fp32 "${r50[@]}" --precision fp32 -- "${r50_ref[@]}" --precision fp32
bench r50-bf16 "${r50[@]}" --precision bf16 -- "${r50_ref[@]}" --precision bf16
bench r18-fp32 "${r18[@]}" --precision fp32 -- "${r18_ref[@]}" --precision fp32
bench r18-bf16 "${r18[@]}" --precision bf16 -- "${r18_ref[@]}" --precision bf16
bench r18-bf16-cl "${r18[@]}" --precision bf16 --channels-last -- "${r18_ref[@]}" --precision bf16 --channels-last

# ---- 6. the table ----------------------------------------------------------

{
	echo "## GPU check ($mode): $(get gpu), PyTorch $(get torch), $ncpu CPUs, $(elapsed) s"
	echo
	echo "lcl: $(get info)"
	echo
	echo "| check | result |"
	echo "|---|---|"
	echo "| shim build against this PyTorch | $(get status:shim-build) in $(get time:shim-build); data-parallel backends: $(get shim-dist) |"
	echo "| lcl train on $dev (1 epoch, learnable synthetic data, bf16, channels-last) | $(get status:train): test top-1 $(get train-top1), $(get train-imgs) img/s; learns: $(get train-learns) |"
	echo "| lcl train on $dev, --strategy ols --mixup 0.8 --cutmix 1 (2 epochs, bf16, channels-last) | $(get status:recipe): test top-1 $(get recipe-top1) |"
	echo "| lcl eval on cpu | $(get status:eval-cpu): top-1 $(pct "$(get eval-cpu-top1)"), loss $(get eval-cpu-loss) |"
	echo "| lcl eval on $dev | $(get status:eval-gpu): top-1 $(pct "$(get eval-gpu-top1)"), loss $(get eval-gpu-loss) |"
	echo "| same accuracy on CPU and GPU | $(get eval-same) |"
	echo "| AdamW + clipping + EMA + validation split, fp32, the same run on cpu and $dev | $(get status:parity-cpu) / $(get status:parity-gpu): same: $(get parity-same) |"
	echo "| the same run with --strategy hxe (group term in float64) on cpu and $dev | $(get status:hxe-cpu) / $(get status:hxe-gpu): same: $(get hxe-same) |"
	echo "| image pipeline ($(get loader-decoder), random-resized crop 224 + flip, uint8) | 1 worker $(get loader-1) img/s ($(get status:loader-1)); $ncpu workers $(get loader-all) img/s ($(get status:loader-all)) |"
	echo "| pipeline / GPU (ResNet-50 bf16 channels-last, lcl) | $(ratio "$(get loader-all)" "$(get ips-lcl-r50-bf16-cl)") (≥ 1: the GPU sets the pace) |"
	echo
	echo "| model | precision | lcl img/s | PyTorch img/s | lcl/PyTorch | peak alloc / reserved MiB, lcl | PyTorch | nvidia-smi MiB, lcl / PyTorch |"
	echo "|---|---|---|---|---|---|---|---|"
	for n in r50-fp32 r50-bf16 r50-bf16-cl r18-fp32 r18-bf16 r18-bf16-cl; do
		case $n in r50*) m="ResNet-50 224² b256" ;; *) m="ResNet-18 CIFAR 32² b512" ;; esac
		[ "$mode" = cpu ] && m="$m (small, CPU)"
		case $n in *-fp32) p="fp32 (TF32)" ;; *-bf16) p=bf16 ;; *) p="bf16 + channels-last" ;; esac
		l=$(get "ips-lcl-$n") t=$(get "ips-torch-$n")
		[ "$(get "status:lcl-$n")" = OK ] || l="$(get "status:lcl-$n")"
		[ "$(get "status:torch-$n")" = OK ] || t="$(get "status:torch-$n")"
		printf '| %s | %s | %s | %s | %s | %s / %s | %s / %s | %s / %s |\n' "$m" "$p" "$l" "$t" "$(ratio "$l" "$t")" \
			"$(get "alloc-lcl-$n")" "$(get "resv-lcl-$n")" "$(get "alloc-torch-$n")" "$(get "resv-torch-$n")" \
			"$(get "smi-lcl-$n")" "$(get "smi-torch-$n")"
	done
} >"$out/table.md"
{
	echo "gpu-check ($mode) finished in $(elapsed) s"
	awk -F '\t' '$1 ~ /^status:/ { sub(/^status:/, "", $1); s[$1] = $2; o[++n] = $1 } $1 ~ /^time:/ { sub(/^time:/, "", $1); t[$1] = $2 }
		END { for (i = 1; i <= n; i++) { k = o[i]; if (seen[k]++) continue; printf "%-22s %-18s %s\n", k, s[k], t[k]; if (s[k] !~ /^(OK|not asked)/) bad++ }
		      printf "\n%d step(s) not OK\n", bad }' "$out/results.tsv"
} >"$out/summary.txt"
cat "$out/table.md"
echo
cat "$out/summary.txt"
if [ "$keep" = 0 ] && tar -czf "$out/logs.tgz" -C "$out" logs 2>/dev/null; then rm -rf "$logs"; fi
# Exit status: 0 when every step ran OK.
grep -q "^0 step(s) not OK" "$out/summary.txt"
