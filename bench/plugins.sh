#!/usr/bin/env bash
# Per-epoch cost of the lcl strategy against sl, both served as plugins, on
# Fashion-MNIST (CPU): the same model, data fraction, seed and threads; the
# report is the ratio of mean seconds per epoch (epochs after the first).
# Acceptance: lcl/sl ≤ 1.02. Also the Go benchmarks of one plan in-process vs
# over the protocol (C = 100, 1000).
#   bench/plugins.sh [EPOCHS] [FRACTION]
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-4}
fraction=${2:-0.1}
lcl=${LCL:-bin/lcl}
[ -x "$lcl" ] || go build -o "$lcl" ./cmd/lcl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

/usr/bin/python3 - "$tmp/sim.npy" <<'PY'
import sys, numpy as np
r = np.random.default_rng(0)
s = r.uniform(0, 1, (10, 10)); np.fill_diagonal(s, 1)
np.save(sys.argv[1], s)
PY

for s in sl lcl; do
  "$lcl" --store "$tmp/store" --quiet train --synsets fashion-mnist --model cnn --strategy "$s" --matrix "$tmp/sim.npy" \
    --fraction "$fraction" --epochs "$epochs" --threads 2 --seed 1 --no-store --out "$tmp/$s" >/dev/null
done

/usr/bin/python3 - "$tmp" <<'PY'
import json, sys
def per_epoch(d):
    xs = [json.loads(l)["seconds"] for l in open(d + "/metrics.jsonl") if '"epoch"' in l]
    xs = xs[1:] or xs  # the first epoch carries start-up costs
    return sum(xs) / len(xs)
sl, lcl = per_epoch(sys.argv[1] + "/sl"), per_epoch(sys.argv[1] + "/lcl")
print(f"plugins: seconds/epoch sl {sl:.3f}, lcl {lcl:.3f}; ratio lcl/sl {lcl/sl:.4f} (acceptance ≤ 1.02)")
PY
go test -run '^$' -bench PlanLCL -benchtime 20x ./plugins | grep Benchmark
