#!/bin/sh
# bench/trainer.sh: training throughput of lcl's libtorch binding next to
# PyTorch (Debian's python3-torch, the same libtorch 1.13) for the same
# architecture, batch, threads, soft-target loss and SGD, in the same run.
# Prints images per second (wall clock) and images per CPU second (all
# threads of the process: steadier on a shared machine) of both sides and the
# ratios lcl/PyTorch (target >= 0.95).
#   usage: bench/trainer.sh [threads] [rounds]
#   env: OMP_WAIT_POLICY (default PASSIVE, what lcl runs with)
set -eu
cd "$(dirname "$0")/.."
threads=${1:-2}
rounds=${2:-3}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/trainerbench" ./bench/trainer
best() { awk -v a="$1" -v b="$2" 'BEGIN{print (a>b)?a:b}'; }
printf '%-9s %5s %5s %10s %10s %7s   %10s %10s %7s\n' model batch steps lcl_img/s torch_img/s ratio lcl_img/cpu-s torch_img/cpu-s ratio
for spec in "cnn 128 30" "resnet18 64 6"; do
	set -- $spec
	# Alternate the two sides and keep each side's best round, so a burst of
	# load from other processes does not decide the ratio.
	lw=0 lc=0 pw=0 pc=0
	i=0
	while [ "$i" -lt "$rounds" ]; do
		set -- $spec
		l=$("$tmp/trainerbench" -model "$1" -batch "$2" -steps "$3" -threads "$threads")
		p=$("$py" bench/trainer_ref.py --model "$1" --batch "$2" --steps "$3" --threads "$threads")
		lw=$(best "$lw" "${l% *}"); lc=$(best "$lc" "${l#* }")
		pw=$(best "$pw" "${p% *}"); pc=$(best "$pc" "${p#* }")
		i=$((i + 1))
	done
	set -- $spec
	printf '%-9s %5s %5s %10s %10s %7.3f   %10s %10s %7.3f\n' "$1" "$2" "$3" "$lw" "$pw" \
		"$(awk -v a="$lw" -v b="$pw" 'BEGIN{print a/b}')" "$lc" "$pc" "$(awk -v a="$lc" -v b="$pc" 'BEGIN{print a/b}')"
done
echo "OMP_WAIT_POLICY=$OMP_WAIT_POLICY threads=$threads rounds=$rounds load: $(cut -d' ' -f1-3 /proc/loadavg)"
