#!/usr/bin/env bash
# Planned content of scripts/demo.sh (`make demo`, `make demo-full`), written by
# the experiments helper; the lead wires it in once training lands. The steps
# marked PLACEHOLDER belong to other areas (wiki, embed, similarity): their
# exact commands are to be filled in from those areas' docs.
#
# make demo:       Fashion-MNIST, small CNN, DR 10 %, 20 epochs, SL, LS, LCL
#                  (ε 0.9, 0.99, semantic), 3 seeds: experiments/demo.yaml (12 runs)
# make demo-full:  LCL_DEMO=full, 4 seeds × DR {5,10,20,100} %: experiments/demo-full.yaml
# Offline, 2 CPU cores, target ≤ ~15 min for `make demo`. Everything is
# resumable: re-running skips finished steps and finished runs.
set -euo pipefail
cd "$(dirname "$0")/.."

LCL=${LCL:-bin/lcl}
export LCL_STORE=${LCL_STORE:-$PWD/.demo/store}   # a store of its own, next to the checkout
RUNS=${LCL_DEMO_RUNS:-$PWD/.demo/runs}
GRID=experiments/demo.yaml
OUT=${LCL_DEMO_OUT:-$PWD/.demo/report}
if [ "${LCL_DEMO:-}" = full ]; then
  GRID=experiments/demo-full.yaml
  OUT=${LCL_DEMO_OUT:-$PWD/.demo/report-full}
fi
start=$(date +%s)
step() { printf '\n== %s (%ds)\n' "$*" $(( $(date +%s) - start )) >&2; }

# 1. Data and tools: `make demo` depends on `make build`, which runs `make deps`
#    (wordnet-base, dataset-fashion-mnist, libtorch-dev).

# 2. Class documents from WordNet (offline source), doc2vec vectors, and the
#    similarity matrices the grid uses (semantic; plus lca over WordNet).
step "WordNet documents for Fashion-MNIST's classes"
# PLACEHOLDER(wiki):       "$LCL" wiki fetch --synsets fashion-mnist --source wordnet
step "doc2vec vectors"
# PLACEHOLDER(embed):      "$LCL" embed train --synsets fashion-mnist ...
step "similarity matrices"
# PLACEHOLDER(similarity): "$LCL" similarity build --synsets fashion-mnist --source semantic
# PLACEHOLDER(similarity): "$LCL" similarity build --synsets fashion-mnist --source lca

# 3. The grid: resumable (Ctrl-C, then `make demo` again, finishes only what is missing).
step "training: $GRID"
"$LCL" experiment run "$GRID" --run-dir "$RUNS"

# 4. The table (mean ± std per method, average ranks, paired differences
#    against SL and LS with p-values) and the self-contained HTML report.
step "report"
"$LCL" report --grid "$GRID" --out "$OUT"
step "done"
