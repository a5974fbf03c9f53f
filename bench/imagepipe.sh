#!/bin/sh
# bench/imagepipe.sh: the image pipeline, lcl next to torchvision, in the same
# run on the same data, uint8 batches of 64, with 1 worker (per core) and 2
# (lcl: goroutines; PyTorch: DataLoader processes):
#   224: a folder of N synthetic ImageNet-sized JPEGs (500x375, quality 90;
#        lcl bench jpegs): decode, random-resized crop 224, flip;
#   32:  a synthetic CIFAR-100 binary file of 10,000 images: random crop 32
#        with padding 4, flip (lcl's small-image path);
# each with no policy, RandAugment(2, 9) and TrivialAugmentWide. torchvision
# runs both of its backends, PIL images and uint8 tensors (JPEGs decoded by
# torchvision.io), and the ratio is lcl's to the faster of the two.
# Goal: lcl >= 2x torchvision per core (issue 30's policies as the crop+flip
# path).
#   usage: bench/imagepipe.sh [N] [passes]
#   env: LCL (an lcl binary; default: go build), PYTHON (/usr/bin/python3:
#        Debian's python3-pil and python3-torchvision, make bench-deps)
set -eu
cd "$(dirname "$0")/.."
n=${1:-300}
passes=${2:-2}
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lcl=${LCL:-}
if [ -z "$lcl" ]; then
	go build -o "$tmp/lcl" ./cmd/lcl
	lcl=$tmp/lcl
fi
"$lcl" bench jpegs --out "$tmp/jpegs" --n "$n" >/dev/null
mkdir "$tmp/cifar"
"$py" -I -c "
import numpy as np
r = np.random.default_rng(0)
for name, k in (('train.bin', 10000), ('test.bin', 100)):
    x = r.integers(0, 256, (k, 2 + 3072), dtype=np.uint8)
    x[:, 0] = x[:, 0] % 20; x[:, 1] = x[:, 1] % 100
    x.tofile('$tmp/cifar/' + name)"
val() { sed -n 's/.*"img_per_s": *\([0-9.e+-]*\).*/\1/p' | tail -n 1; }
printf '%-5s %-15s %-7s %10s %10s %10s %9s\n' input policy workers lcl_img/s pil_img/s tensor_img/s lcl/best
for input in 224 32; do
	if [ "$input" = 224 ]; then
		ldata="folder:$tmp/jpegs"
		pdata="$tmp/jpegs"
	else
		ldata="cifar100:$tmp/cifar"
		pdata="--cifar $tmp/cifar/train.bin"
	fi
	for policy in none randaugment trivialaugment; do
		case $policy in
		none) lflag="" ;;
		randaugment) lflag="--randaugment 2,9" ;;
		trivialaugment) lflag="--trivialaugment" ;;
		esac
		for w in 1 2; do
			# shellcheck disable=SC2086
			l=$("$lcl" bench loader --data "$ldata" --workers "$w" --batch 64 --passes "$passes" $lflag | val)
			# shellcheck disable=SC2086
			p=$("$py" bench/imagepipe_ref.py $pdata --policy "$policy" --backend pil --workers "$w" --batch 64 --passes "$passes" | val)
			# shellcheck disable=SC2086
			t=$("$py" bench/imagepipe_ref.py $pdata --policy "$policy" --backend tensor --workers "$w" --batch 64 --passes "$passes" | val)
			printf '%-5s %-15s %-7s %10.1f %10.1f %10.1f %9.2f\n' "$input" "$policy" "$w" "$l" "$p" "$t" \
				"$(awk -v a="$l" -v b="$p" -v c="$t" 'BEGIN{m = b > c ? b : c; print a/m}')"
		done
	done
done
echo "224: $n JPEGs 500x375 q90 ($("$lcl" bench info | sed -n 's/.*"jpeg":"\([^"]*\)".*/\1/p')); 32: 10000 images; $passes passes"
echo "cpu: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); load: $(cut -d' ' -f1-3 /proc/loadavg)"
