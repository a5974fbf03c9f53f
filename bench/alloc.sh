#!/bin/sh
# bench/alloc.sh: what lcl's CPU memory and BLAS settings buy. Trains the
# demo's model (small CNN at half width, Fashion-MNIST DR 10 %, SL) for a few
# epochs under each setting, in turn, ROUNDS times, and prints per setting
# the median training and evaluation throughput, the process's page faults
# and its system-time share (docs/trainer.md, "Where the time goes").
#   LCL_CPU_ALLOCATOR: system (glibc and libtorch defaults), malloc (glibc
#     tuned: one arena, no trimming, mmap only above 32 MiB), caching (the
#     default: malloc tuned plus lcl's caching allocator in libtorch)
#   LCL_BLAS_THREADS: 0 leaves OpenBLAS's own thread pool alone, 1 (default)
#   usage: bench/alloc.sh [epochs] [rounds]
set -eu
cd "$(dirname "$0")/.."
epochs=${1:-3}
rounds=${2:-2}
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/lcl" ./cmd/lcl
settings="system:0 malloc:0 system:1 malloc:1 caching:1"
r=0
while [ "$r" -lt "$rounds" ]; do
	for s in $settings; do
		a=${s%:*} b=${s#*:}
		out="$tmp/run-$a-$b-$r"
		LCL_CPU_ALLOCATOR=$a LCL_BLAS_THREADS=$b /usr/bin/time -f "%R" -o "$tmp/faults" \
			"$tmp/lcl" --quiet --json train --synsets fashion-mnist --model cnn:channels=16x32 --fraction 0.1 \
			--epochs "$epochs" --threads 2 --no-store --out "$out" >"$tmp/summary" 2>"$tmp/err" ||
			{ cat "$tmp/err" >&2; exit 1; }
		"$py" -I -c "
import json
s = [json.loads(l) for l in open('$tmp/summary') if '\"summary\"' in l][-1]
e = [json.loads(l) for l in open('$out/metrics.jsonl')][1:]
tr = sorted(m['img_per_s'] for m in e)[len(e) // 2]
ev = sorted(m['eval_img_per_s'] for m in e)[len(e) // 2]
print('$a', '$b', tr, ev, open('$tmp/faults').read().split()[-1], s['system_seconds'], s['user_seconds'])" >>"$tmp/rows"
	done
	r=$((r + 1))
done
"$py" -I -c "
import statistics
rows = {}
for l in open('$tmp/rows'):
    a, b, tr, ev, f, sy, us = l.split()
    rows.setdefault((a, b), []).append((float(tr), float(ev), int(f), float(sy), float(us)))
print('%-9s %5s %10s %10s %8s %10s %8s' % ('allocator', 'blas', 'train_i/s', 'eval_i/s', 'ev/tr', 'faults', 'system'))
for s in '$settings'.split():
    a, b = s.split(':')
    v = rows[(a, b)]
    med = lambda k: statistics.median(x[k] for x in v)
    print('%-9s %5s %10.0f %10.0f %8.2f %10d %7.1f%%' % (a, 'own' if b == '0' else b, med(0), med(1), med(1) / med(0), med(2),
          100 * med(3) / (med(3) + med(4))))
"
echo "epochs=$epochs rounds=$rounds load: $(cut -d' ' -f1-3 /proc/loadavg)"
