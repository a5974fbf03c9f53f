#!/usr/bin/env bash
# `make demo`: the main job on embedded defaults, offline, on the CPUs.
#   Fashion-MNIST's classes → WordNet documents → doc2vec vectors → semantic
#   similarity (plus the lca hierarchy similarity) → the small CNN at DR 10 %
#   with SL, LS and LCL (ε 0.9, 0.99) for 3 seeds → the table and an HTML report.
# `make demo-full` (LCL_DEMO=full) runs the 4-seed × 4-DR grid instead.
# Everything is resumable: run it again after Ctrl-C and it finishes only what
# is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

LCL=${LCL:-bin/lcl}
export LCL_STORE=${LCL_STORE:-$PWD/.demo/store}
RUNS=${LCL_DEMO_RUNS:-$PWD/.demo/runs}
GRID=experiments/demo.yaml
OUT=${LCL_DEMO_OUT:-$PWD/.demo/report}
if [ "${LCL_DEMO:-}" = full ]; then
  GRID=experiments/demo-full.yaml
  OUT=${LCL_DEMO_OUT:-$PWD/.demo/report-full}
fi
start=$(date +%s)
step() { printf '\n== %s (%ds)\n' "$*" $(( $(date +%s) - start )) >&2; }

step "WordNet documents for Fashion-MNIST's classes"
"$LCL" wiki fetch --synsets fashion-mnist --source wordnet

step "doc2vec class vectors (trained on one document per WordNet noun synset)"
if "$LCL" store ls --kind vectors | grep -q 'vec/fashion-mnist/'; then
  echo "vectors already stored (remove $LCL_STORE to recompute)"
else
  "$LCL" embed --synsets fashion-mnist --source wordnet
fi

step "similarity matrices: semantic (doc2vec cosine) and lca (WordNet Wu-Palmer)"
"$LCL" similarity --synsets fashion-mnist --source semantic
"$LCL" similarity --synsets fashion-mnist --source lca
"$LCL" similarity show --synsets fashion-mnist --source semantic --top 3

step "training: $GRID"
"$LCL" experiment run "$GRID" --run-dir "$RUNS"

step "report"
"$LCL" report --grid "$GRID" --out "$OUT"
step "done: open $OUT/report.html"
