#!/usr/bin/env bash
# scripts/nogo-bench.sh e2e|step OUTFILE DEADLINE LCL...: lcl against the machine's
# own PyTorch on a machine with many cores and no Go (the GPU machine's CPU),
# several jobs at once on disjoint physical cores, two threads each: a way to
# get many rows inside a short lease, not the idle-machine protocol of
# bench/torch2.sh (the jobs share the L3 and memory; both sides of a pair
# share them alike). LCL is the command that runs lcl there, e.g.
#   env LD_LIBRARY_PATH=/tmp/shim:.gpucheck/lib .gpucheck/lcl
# with the bundle `make gpu-bundle` builds and a shim built there
# (trainer/torch/build-shim.sh "" /tmp/shim). No job starts a round after
# DEADLINE (seconds since the epoch). Rows are appended to OUTFILE as they end.
#
# e2e: bench/torch2.sh's protocol per net and mode (whole runs, Fashion-MNIST,
#   5 epochs, LS, evaluation after every epoch): PyTorch's setting picked from
#   glibc's defaults, the malloc tunables and jemalloc (JEMALLOC, the path of
#   a libjemalloc.so.2) by one run each, then ROUNDS rounds of lcl then
#   PyTorch. Rows: NET MODE pick-SETTING SECONDS, and NET MODE pair-R LCL_S
#   TORCH_S SETTING. FRAC is the fraction of the training set kept (0.1; 0.5
#   of a 12,000-image subset keeps the protocol's 6,000 images).
# step: ResNet-18 (CIFAR stem, batch 64) training steps, `lcl bench step`
#   against bench/step_ref.py, 4 modes × PyTorch's 2 malloc settings, each
#   job alternating the sides ROUNDS times. Rows: MODE SETTING ROUND
#   LCL_IMG_PER_S TORCH_IMG_PER_S.
set -u
[ $# -ge 4 ] || { echo "usage: scripts/nogo-bench.sh e2e|step OUTFILE DEADLINE LCL..." >&2; exit 2; }
what=$1 out=$2 deadline=$3
shift 3
lcl=("$@")
# Stopped (timeout, ^C): the jobs stop too (a run in flight ends on its own).
trap 'kill $(jobs -p) 2>/dev/null; exit 143' TERM INT
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
export OMP_WAIT_POLICY=PASSIVE
tun=GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=2147483647
jem=LD_PRELOAD=${JEMALLOC:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
envof() { # SETTING: what PyTorch's environment adds for it (OMP_WAIT_POLICY is exported above)
	case $1 in
	tunables) echo "$tun" ;;
	jemalloc) echo "$jem" ;;
	esac
}
flags() { # MODE: --precision P [--channels-last]
	local p=fp32
	case $1 in bf16*) p=bf16 ;; esac
	echo "--precision $p"
	case $1 in *cl*) echo --channels-last ;; esac
}
# One logical CPU per physical core, in pairs: "0,1 2,3 ...".
slots=$(lscpu -p=CPU,CORE | awk -F, '/^#/ { next } !seen[$2]++ { c[n++] = $1 }
	END { for (i = 0; i + 1 < n; i += 2) printf "%s%d,%d", (i ? " " : ""), c[i], c[i + 1] }')
read -r -a sl <<<"$slots"
[ ${#sl[@]} -gt 0 ] || { echo "scripts/nogo-bench.sh: fewer than 2 physical cores" >&2; exit 1; }
echo "scripts/nogo-bench.sh: slots $slots; CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

secs() { # CPUS ENV... CMD...: wall seconds, or FAIL
	local c=$1 s
	shift
	s=$(date +%s.%N)
	if ! taskset -c "$c" env "$@" >"/tmp/nogo.$c.log" 2>&1; then
		echo FAIL
		tail -n 3 "/tmp/nogo.$c.log" >&2
		return
	fi
	awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'
}
ips() { # LOG: img_per_s of its last JSON line, or FAIL
	python3 -c 'import json, sys
v = "FAIL"
for l in open(sys.argv[1]):
    l = l.strip()
    if l.startswith("{"):
        try:
            v = json.loads(l).get("img_per_s", v)
        except ValueError:
            pass
print(v)' "$1"
}

e2e() { # CPUS JOB...: JOB is NET,MODE
	local c=$1 j m mode best bt s cand r x y
	local frac=${FRAC:-0.1} epochs=${EPOCHS:-5}
	shift
	for j in "$@"; do
		m=${j%,*} mode=${j#*,} best=default bt=1e9
		[ "$(date +%s)" -lt "$deadline" ] || break
		for cand in default tunables jemalloc; do
			# shellcheck disable=SC2046 # word lists
			s=$(secs "$c" $(envof $cand) python3 -I bench/e2e_ref.py --model "$m" --fraction "$frac" --epochs "$epochs" \
				--threads 2 $(flags "$mode"))
			printf '%s\t%s\tpick-%s\t%s\n' "$m" "$mode" "$cand" "$s" >>"$out"
			if awk -v a="$s" -v b="$bt" 'BEGIN { exit !(a + 0 > 0 && a < b) }'; then bt=$s best=$cand; fi
		done
		for r in $(seq "$rounds"); do
			[ "$(date +%s)" -lt "$deadline" ] || break
			rm -rf "/tmp/nogo-run.$c"
			# shellcheck disable=SC2046
			x=$(secs "$c" LCL_ONEDNN=on "${lcl[@]}" --quiet train --synsets fashion-mnist --model "$m" --preset fmnist-cnn \
				--strategy ls --fraction "$frac" --epochs "$epochs" --threads 2 --no-store --out "/tmp/nogo-run.$c" \
				$(flags "$mode") --eval-batch 256)
			# shellcheck disable=SC2046
			y=$(secs "$c" $(envof $best) python3 -I bench/e2e_ref.py --model "$m" --fraction "$frac" --epochs "$epochs" \
				--threads 2 $(flags "$mode"))
			printf '%s\t%s\tpair-%s\t%s\t%s\t%s\n' "$m" "$mode" "$r" "$x" "$y" "$best" >>"$out"
		done
	done
}

step() { # CPUS MODE SETTING
	local c=$1 mode=$2 set=$3 r
	for r in $(seq "$rounds"); do
		[ "$(date +%s)" -lt "$deadline" ] || break
		# shellcheck disable=SC2046
		taskset -c "$c" env LCL_ONEDNN=on "${lcl[@]}" bench step --device cpu --model resnet18:stem=cifar --input 3,32,32 \
			--classes 10 --batch 64 --steps 8 --warmup 2 --threads 2 $(flags "$mode") >"/tmp/nogo-l.$c" 2>&1
		# shellcheck disable=SC2046
		taskset -c "$c" env $(envof "$set") python3 bench/step_ref.py --device cpu --model resnet18 --stem cifar --size 32 \
			--classes 10 --batch 64 --steps 8 --warmup 2 --threads 2 $(flags "$mode") >"/tmp/nogo-t.$c" 2>&1
		printf '%s\t%s\t%s\t%s\t%s\n' "$mode" "$set" "$r" "$(ips "/tmp/nogo-l.$c")" "$(ips "/tmp/nogo-t.$c")" >>"$out"
	done
}

case $what in
e2e)
	read -r -a jl <<<"${JOBS:-cnn:bn=0,bf16 cnn:channels=16x32,bf16 cnn:bn=0,bf16-cl cnn:channels=16x32,bf16-cl cnn:bn=0,fp32 cnn:channels=16x32,fp32 mlp,bf16 mlp,fp32 cnn:bn=0,cl cnn:channels=16x32,cl mlp,cl mlp,bf16-cl}"
	n=${#sl[@]}
	for i in "${!sl[@]}"; do
		mine=()
		for k in "${!jl[@]}"; do [ $((k % n)) -eq "$i" ] && mine+=("${jl[$k]}"); done
		[ ${#mine[@]} -gt 0 ] && e2e "${sl[$i]}" "${mine[@]}" &
	done
	;;
step)
	i=0
	for mode in fp32 cl bf16 bf16-cl; do
		for set in default tunables; do
			step "${sl[$((i % ${#sl[@]}))]}" "$mode" "$set" &
			i=$((i + 1))
		done
	done
	;;
*)
	echo "scripts/nogo-bench.sh: e2e or step, not $what" >&2
	exit 2
	;;
esac
wait
