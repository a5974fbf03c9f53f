#!/bin/sh
# bench/imagepipe.sh: the image pipeline, lcl next to PIL + torchvision, in
# the same run on the same folder of synthetic ImageNet-sized JPEGs (N at
# 500x375, quality 90; lcl bench jpegs): the training transform
# (random-resized crop 224, flip) to uint8 batches of 64, with 1 worker (per
# core) and with 2 workers (lcl: goroutines; PyTorch: DataLoader processes).
# Prints img/s of both sides and the ratio lcl/PIL (goal >= 2 per core).
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
val() { sed -n 's/.*"img_per_s": *\([0-9.e+-]*\).*/\1/p' | tail -n 1; }
printf '%-8s %12s %12s %10s   %s\n' workers lcl_img/s pil_img/s lcl/pil decoder
for w in 1 2; do
	l=$("$lcl" bench loader --data "folder:$tmp/jpegs" --workers "$w" --batch 64 --passes "$passes" | val)
	p=$("$py" bench/imagepipe_ref.py "$tmp/jpegs" --workers "$w" --batch 64 --passes "$passes" | val)
	printf '%-8s %12.1f %12.1f %10.2f   %s\n' "$w" "$l" "$p" "$(awk -v a="$l" -v b="$p" 'BEGIN{print a/b}')" \
		"$("$lcl" bench info | sed -n 's/.*"jpeg":"\([^"]*\)".*/\1/p')"
done
echo "$n images 500x375 q90, $passes passes; load: $(cut -d' ' -f1-3 /proc/loadavg)"
