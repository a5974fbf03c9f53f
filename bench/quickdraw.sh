#!/bin/sh
# bench/quickdraw.sh: is lcl's trainer right on 345 classes? lcl's SL runs of
# the Quick, Draw! grid's net (experiments/quickdraw.yaml: cnn:channels=16x32x64,
# fmnist-cnn preset, 20 epochs, DR 100 %) against bench/quickdraw_ref.py, an
# independent PyTorch reference (Debian's python3-torch) of the same net,
# split, quantisation, normalisation and SL protocol, seed for seed. Prints
# each side's top-1 per seed, mean ± std, and whether lcl's mean lies within
# the reference's seed spread (mean ± 2 std). The models differ in their random
# draws (initialisation, batch order), so the check is statistical, not bitwise.
# lcl trains in fp32 here, as the reference does.
#   usage: bench/quickdraw.sh [seeds] [epochs] [fraction]   (defaults 1,2,3 20 1)
# Needs `scripts/deps.sh quickdraw` (make deps installs it) and python3-torch.
set -eu
cd "$(dirname "$0")/.."
seeds=${1:-1,2,3}
epochs=${2:-20}
fraction=${3:-1}
model=cnn:channels=16x32x64
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/lcl" ./cmd/lcl
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
lcl_top1=""
for s in $(echo "$seeds" | tr ',' ' '); do
  "$tmp/lcl" --store "$tmp/store" --quiet train --synsets quickdraw --data quickdraw --model "$model" \
    --strategy sl --epochs "$epochs" --fraction "$fraction" --seed "$s" --threads 2 --precision fp32 \
    --out "$tmp/run$s" >/dev/null
  t=$(sed -n 's/.*"test_top1": *\([0-9.e-]*\).*/\1/p' "$tmp/run$s/result.json" | head -n 1)
  echo "lcl     seed $s: top-1 $t"
  lcl_top1="$lcl_top1 $t"
done
/usr/bin/python3 bench/quickdraw_ref.py --model "$model" --epochs "$epochs" --fraction "$fraction" \
  --seeds "$seeds" --threads 2 >"$tmp/ref.jsonl"
/usr/bin/python3 - "$tmp/ref.jsonl" $lcl_top1 <<'EOF'
import json, statistics as st, sys
ref = [json.loads(l) for l in open(sys.argv[1]) if '"seed"' in l]
r = [x["top1"] for x in ref]
l = [float(v) for v in sys.argv[2:]]
for x in ref:
    print("PyTorch seed %d: top-1 %.4f (%.1f s)" % (x["seed"], x["top1"], x["seconds"]))
sd = lambda v: st.stdev(v) if len(v) > 1 else 0.0
print("lcl     %.2f ± %.2f %%" % (100 * st.mean(l), 100 * sd(l)))
print("PyTorch %.2f ± %.2f %%" % (100 * st.mean(r), 100 * sd(r)))
ok = abs(st.mean(l) - st.mean(r)) <= 2 * max(sd(r), 0.002)
print("lcl's mean is %s PyTorch's mean ± 2 std" % ("within" if ok else "OUTSIDE"))
sys.exit(0 if ok else 1)
EOF
