#!/bin/sh
# bench/bf16.sh: bf16 autocast against fp32 on the CPU for the demo's
# protocol (experiments/demo.yaml: the small CNN at half width,
# channels-last, Fashion-MNIST DR 10 %, 20 epochs, SL), per seed: test top-1
# after the last epoch, and the median seconds of a training epoch and of an
# evaluation (metrics.jsonl; the first epoch left out as warm-up). The two
# precisions alternate, seed by seed. bf16 is fast only where the CPU has
# bf16 units (amx_bf16 or avx512_bf16 in /proc/cpuinfo; the line says which);
# elsewhere libtorch emulates it and it is slower than fp32.
#   usage: bench/bf16.sh [epochs] [seeds]
set -eu
cd "$(dirname "$0")/.."
epochs=${1:-20}
seeds=${2:-"1 2 3"}
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/lcl" ./cmd/lcl
for s in $seeds; do
	for p in fp32 bf16; do
		"$tmp/lcl" --quiet train --synsets fashion-mnist --model cnn:channels=16x32 --fraction 0.1 --epochs "$epochs" \
			--seed "$s" --threads 2 --channels-last --precision "$p" --no-store --out "$tmp/$p-$s" >/dev/null
	done
done
"$py" -I - "$tmp" "$seeds" <<'EOF'
import json, statistics as st, sys
tmp, seeds = sys.argv[1], sys.argv[2].split()
rows = {}
for p in ("fp32", "bf16"):
    acc, tr, ev = [], [], []
    for s in seeds:
        m = [json.loads(l) for l in open("%s/%s-%s/metrics.jsonl" % (tmp, p, s))]
        m = [x for x in m if x.get("message_type", "epoch") == "epoch" and "seconds" in x]
        acc.append(m[-1]["test_top1"])
        tr += [x["seconds"] for x in m[1:]]
        ev += [x["eval_seconds"] for x in m[1:]]
    rows[p] = (acc, st.median(tr), st.median(ev))
    sd = st.stdev(acc) if len(acc) > 1 else 0
    print("%-5s top-1 %s  mean %.4f ± %.4f   train epoch %.3f s   eval %.3f s" %
          (p, " ".join("%.4f" % a for a in acc), st.mean(acc), sd, rows[p][1], rows[p][2]))
f, b = rows["fp32"], rows["bf16"]
diff = [y - x for x, y in zip(f[0], b[0])]
print("bf16 - fp32 top-1 per seed: %s (mean %+.4f)" % (" ".join("%+.4f" % d for d in diff), st.mean(diff)))
print("speed bf16/fp32: training %.2fx, evaluation %.2fx" % (f[1] / b[1], f[2] / b[2]))
EOF
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); bf16 units: $(grep -ow 'amx_bf16\|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
