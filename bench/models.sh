#!/bin/sh
# bench/models.sh: one training step of each of the paper's nine
# architectures at its paper input size, with lcl (lcl bench step) and with
# the same module in PyTorch (torchvision, or bench/models_ref.py where
# torchvision has none) on the same libtorch, same threads, same
# soft-target loss and SGD, in the same run. Prints images per second (wall
# clock) and per CPU second of both sides and the ratios lcl/PyTorch.
#   usage: bench/models.sh [threads] [batch] [steps]
#   env: TINY=1 runs reduced configurations on small inputs (a quick check
#        that everything runs, not a measurement); OMP_WAIT_POLICY (PASSIVE);
#        BENCH_MODE: fp32 (default), cl (channels-last), bf16 (autocast) or
#        bf16-cl, the same on both sides; BENCH_MODELS: names of the table
#        to run (all when unset), e.g. "resnet18 resnet50"; BENCH_ROUNDS
#        (1): rounds of the two sides in turn, each keeping its best
set -eu
cd "$(dirname "$0")/.."
threads=${1:-2}
batch=${2:-2}
steps=${3:-2}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
py=/usr/bin/python3
mode=${BENCH_MODE:-fp32}
flags=""
case $mode in
fp32 | cl | bf16 | bf16-cl) ;;
*) echo "bench/models.sh: BENCH_MODE=$mode: want fp32, cl, bf16 or bf16-cl" >&2; exit 2 ;;
esac
case $mode in *cl) flags="--channels-last" ;; esac
case $mode in bf16*) flags="$flags --precision bf16" ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/lcl" ./cmd/lcl
# jnum KEY: KEY's number in the JSON line on stdin.
jnum() { sed -n "s/.*\"$1\": *\([0-9.eE+-]*\).*/\1/p" | tail -n 1; }
# name | lcl model | C,H,W | classes | reference | reference options (JSON)
if [ "${TINY:-0}" = 1 ]; then
	table='resnet18|resnet18:stem=imagenet|3,32,32|10|resnet18|{}
resnet34|resnet34:stem=imagenet,layers=1x1x1x1|3,32,32|10|resnet34|{"layers":[1,1,1,1]}
resnet50|resnet50:stem=imagenet,layers=1x1x1x1|3,32,32|10|resnet50|{"layers":[1,1,1,1]}
resnet101|resnet101:stem=imagenet,layers=1x1x1x1|3,32,32|10|resnet101|{"layers":[1,1,1,1]}
wrn-28-10|wrn:depth=10,widen=1|3,32,32|10|wrn-28-10|{"depth":10,"widen":1}
resnext101-32x8d|resnext101-32x8d:stem=imagenet,layers=1x1x1x1,group-width=2|3,32,32|10|resnext101-32x8d|{"layers":[1,1,1,1],"group_width":2}
senet154|senet154:layers=1x1x1x1,groups=8|3,32,32|10|senet154|{"layers":[1,1,1,1],"groups":8}
inception-resnet-v2|inception-resnet-v2:repeats=1x1x1|3,75,75|10|inception-resnet-v2|{"repeats":[1,1,1]}
densenet-bc-190-40|densenet-bc-190-40:depth=10,growth=4|3,32,32|10|densenet-bc-190-40|{"depth":10,"growth":4}'
else
	table='resnet18|resnet18|3,224,224|1000|resnet18|{}
resnet34|resnet34|3,224,224|1000|resnet34|{}
resnet50|resnet50|3,224,224|1000|resnet50|{}
resnet101|resnet101|3,224,224|1000|resnet101|{}
wrn-28-10|wrn-28-10|3,32,32|100|wrn-28-10|{}
resnext101-32x8d|resnext101-32x8d|3,224,224|1000|resnext101-32x8d|{}
senet154|senet154|3,224,224|1000|senet154|{}
inception-resnet-v2|inception-resnet-v2|3,299,299|1000|inception-resnet-v2|{}
densenet-bc-190-40|densenet-bc-190-40|3,32,32|100|densenet-bc-190-40|{}'
fi
# PyTorch at its best: the two settings that won bench/trainer.sh's search
# (glibc malloc tuned as lcl tunes it in-process, or tcmalloc; one OpenBLAS
# thread, as lcl runs), the faster of the two for each model.
lib=/usr/lib/x86_64-linux-gnu
tun=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=2147483647
settings="GLIBC_TUNABLES=$tun LD_PRELOAD=$lib/libtcmalloc_minimal.so.4"
[ -e "$lib/libtcmalloc_minimal.so.4" ] || { echo "bench/models.sh: $lib/libtcmalloc_minimal.so.4 is missing: make bench-deps" >&2; exit 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a/b}'; }
# better A B: the faster of two "IMG/S IMG/CPU-S" pairs (by wall clock).
better() { if [ "$(awk -v a="${1% *}" -v b="${2% *}" 'BEGIN{print (a>b)}')" = 1 ]; then echo "$1"; else echo "$2"; fi; }
rounds=${BENCH_ROUNDS:-1}
printf '%-20s %-11s %5s %10s %10s %7s   %12s %12s %7s  %s\n' model input batch lcl_img/s torch_img/s ratio lcl_img/cpu-s torch_img/cpu-s ratio \
	"torch setting"
echo "$table" | while IFS='|' read -r name model shape classes ref kw; do
	case " ${BENCH_MODELS:-$name} " in *" $name "*) ;; *) continue ;; esac
	# shellcheck disable=SC2086 # flags is a word list
	lcl() {
		o=$("$tmp/lcl" --quiet bench step --model "$model" --input "$shape" --classes "$classes" --batch "$batch" --steps "$steps" \
			--warmup 1 --threads "$threads" $flags)
		echo "$(echo "$o" | jnum img_per_s) $(echo "$o" | jnum img_per_cpu_s)"
	}
	# shellcheck disable=SC2086
	torch() {
		env "$1" OPENBLAS_NUM_THREADS=1 "$py" -I bench/models_ref.py --model "$ref" --kwargs "$kw" --shape "$shape" \
			--classes "$classes" --batch "$batch" --steps "$steps" --warmup 1 --threads "$threads" $flags
	}
	# PyTorch's setting: the faster first run; then both sides run in turn
	# for the rounds and each keeps its best (the pick's runs do not count,
	# so neither side is the best of more runs than the other).
	p="0 0" e=""
	for x in $settings; do
		q=$(torch "$x")
		[ "$(better "$q" "$p")" = "$p" ] || { p=$q e=$x; }
	done
	case $e in LD_PRELOAD=*) won=tcmalloc ;; *) won="malloc tunables" ;; esac
	l="0 0" p="0 0"
	for _ in $(seq "$rounds"); do
		l=$(better "$(lcl)" "$l")
		p=$(better "$(torch "$e")" "$p")
	done
	printf '%-20s %-11s %5s %10.2f %10.2f %7s   %12.2f %12.2f %7s  %s\n' "$name" "$(echo "$shape" | tr , x)" "$batch" \
		"${l% *}" "${p% *}" "$(ratio "${l% *}" "${p% *}")" "${l#* }" "${p#* }" "$(ratio "${l#* }" "${p#* }")" "$won"
done
echo "mode=$mode rounds=$rounds (best of each; ratios lcl/PyTorch, > 1: lcl faster) OMP_WAIT_POLICY=$OMP_WAIT_POLICY threads=$threads batch=$batch steps=$steps tiny=${TINY:-0} load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); bf16 units: $(grep -o -m1 -w 'amx_bf16\|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
