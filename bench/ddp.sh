#!/bin/sh
# bench/ddp.sh: data-parallel training throughput. Trains the small CNN on a
# part of Fashion-MNIST for one epoch (batch 128) as one process with T
# threads, one process with T/2 threads, and `--nproc 2` (T/2 threads
# each, Gloo over loopback), alternating `rounds` times and keeping each
# setup's best training img/s (metrics.jsonl, evaluation excluded); prints
# the ratios against the one-process run with T threads (the same cores).
#   usage: bench/ddp.sh [threads] [rounds] [fraction]
set -eu
cd "$(dirname "$0")/.."
threads=${1:-2}
rounds=${2:-2}
fraction=${3:-0.1}
half=$(( threads / 2 > 0 ? threads / 2 : 1 ))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/lcl" ./cmd/lcl
run() { # name extra-args...
	name=$1; shift
	rm -rf "$tmp/$name"
	"$tmp/lcl" train --synsets fashion-mnist --model cnn --fraction "$fraction" --epochs 1 --batch 128 --seed 1 \
		--no-store --quiet --out "$tmp/$name" "$@" >/dev/null
	sed -n 's/.*"img_per_s":\([0-9.e+]*\).*/\1/p' "$tmp/$name/metrics.jsonl"
}
best() { awk -v a="$1" -v b="$2" 'BEGIN{print (a>b)?a:b}'; }
one=0; onehalf=0; two=0
for _ in $(seq "$rounds"); do
	one=$(best "$one" "$(run one --threads "$threads")")
	onehalf=$(best "$onehalf" "$(run onehalf --threads "$half")")
	two=$(best "$two" "$(run two --nproc 2 --threads "$half")")
done
printf '%-34s %10s %7s\n' setup img/s ratio
printf '%-34s %10.0f %7.2f\n' "1 process, $threads threads" "$one" 1
printf '%-34s %10.0f %7.2f\n' "1 process, $half threads" "$onehalf" "$(awk -v a="$onehalf" -v b="$one" 'BEGIN{print a/b}')"
printf '%-34s %10.0f %7.2f\n' "--nproc 2, $half threads each" "$two" "$(awk -v a="$two" -v b="$one" 'BEGIN{print a/b}')"
