#!/bin/sh
# bench/trainer.sh: training throughput of lcl's libtorch binding next to
# PyTorch (Debian's python3-torch, the same libtorch 1.13) for the same
# architecture, batch, threads, soft-target loss and SGD, in the same run.
# Prints img/s of both and the ratio lcl/PyTorch (target >= 0.95).
#   usage: bench/trainer.sh [threads]   env: OMP_WAIT_POLICY (default PASSIVE)
set -eu
cd "$(dirname "$0")/.."
threads=${1:-2}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
py=/usr/bin/python3
bin=$(mktemp -d)/trainerbench
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./bench/trainer
printf '%-10s %6s %6s %10s %10s %7s\n' model batch steps lcl_img/s torch_img/s ratio
for spec in "cnn 128 30" "resnet18 64 6"; do
	set -- $spec
	# Alternate the two sides twice and keep each side's best, so a burst of
	# load on the shared machine does not decide the ratio.
	best_l=0; best_p=0
	for _ in 1 2; do
		l=$("$bin" -model "$1" -batch "$2" -steps "$3" -threads "$threads")
		p=$("$py" bench/trainer_ref.py --model "$1" --batch "$2" --steps "$3" --threads "$threads")
		best_l=$(echo "$l $best_l" | awk '{print ($1>$2)?$1:$2}')
		best_p=$(echo "$p $best_p" | awk '{print ($1>$2)?$1:$2}')
	done
	printf '%-10s %6s %6s %10s %10s %7.3f\n' "$1" "$2" "$3" "$best_l" "$best_p" "$(echo "$best_l $best_p" | awk '{print $1/$2}')"
done
echo "OMP_WAIT_POLICY=$OMP_WAIT_POLICY threads=$threads"
