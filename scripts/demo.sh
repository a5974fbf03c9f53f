#!/usr/bin/env bash
# `make demo`: the main job on embedded defaults, offline, on the CPUs.
#   Fashion-MNIST's classes → WordNet documents → doc2vec vectors → semantic
#   similarity (plus the lca hierarchy similarity) → the small CNN at DR 10 %
#   with SL, LS and LCL (ε 0.9, 0.99) for 3 seeds → the table and an HTML report.
# `make demo-quickdraw` (LCL_DEMO=quickdraw) asks the paper's question where it
# says it matters, many classes with few images each: Quick, Draw!'s 345
# categories (scripts/deps.sh quickdraw), 80 or 20 drawings per category,
# SL, LS and LCL for 3 seeds (experiments/quickdraw-demo.yaml);
# `LCL_DEMO=quickdraw-full` the whole methods grid (experiments/quickdraw.yaml).
# `make demo-full` (LCL_DEMO=full) runs the 4-seed × 4-DR grid instead;
# `make demo-methods` (LCL_DEMO=methods) the demo's protocol with the later
# soft-label methods (experiments/methods.yaml: + MBM's soft labels and HXE on the
# WordNet LCA heights, KD, OLS), its table adding mistake severity and hier. dist@k.
# Everything is resumable: run it again after Ctrl-C and it finishes only what
# is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

LCL=${LCL:-bin/lcl}
export LCL_STORE=${LCL_STORE:-$PWD/.demo/store}
RUNS=${LCL_DEMO_RUNS:-$PWD/.demo/runs}
GRID=experiments/demo.yaml
OUT=${LCL_DEMO_OUT:-$PWD/.demo/report}
case "${LCL_DEMO:-}" in
  full)
    GRID=experiments/demo-full.yaml
    OUT=${LCL_DEMO_OUT:-$PWD/.demo/report-full} ;;
  methods)
    GRID=experiments/methods.yaml
    OUT=${LCL_DEMO_OUT:-$PWD/.demo/report-methods} ;;
  quickdraw)
    SET=quickdraw
    GRID=experiments/quickdraw-demo.yaml
    OUT=${LCL_DEMO_OUT:-$PWD/.demo/report-quickdraw} ;;
  quickdraw-full)
    SET=quickdraw
    GRID=experiments/quickdraw.yaml
    OUT=${LCL_DEMO_OUT:-$PWD/.demo/report-quickdraw-full} ;;
  "") ;;
  *) echo "LCL_DEMO=$LCL_DEMO: want full, methods, quickdraw, quickdraw-full or nothing" >&2; exit 2 ;;
esac
SET=${SET:-fashion-mnist}
start=$(date +%s)
# Where the time went: each stage's seconds, printed as a table at the end
# (LCL_DEMO_START, set by `make demo`, adds the build before this script).
stages=""
t_last=$start
if [ -n "${LCL_DEMO_START:-}" ]; then
  stages="build (make deps, go build)|$(( start - LCL_DEMO_START ))"
fi
current=""
step() {
  now=$(date +%s)
  [ -n "$current" ] && stages="$stages${stages:+
}$current|$(( now - t_last ))"
  current=$1
  t_last=$now
  printf '\n== %s (%ds)\n' "$*" $(( now - start )) >&2
}
timings() {
  step "done"
  total=0
  printf '\nwhere the time went:\n' >&2
  while IFS='|' read -r name secs; do
    printf '  %-66s %5d s\n' "$name" "$secs" >&2
    total=$(( total + secs ))
  done <<EOF_STAGES
$stages
EOF_STAGES
  printf '  %-66s %5d s\n' "total" "$total" >&2
}

step "WordNet documents for $SET's classes"
"$LCL" wiki fetch --synsets "$SET" --source wordnet

step "doc2vec class vectors (one document per WordNet noun synset)"
if "$LCL" store ls --kind vectors | grep -q "vec/$SET/"; then
  echo "vectors already stored (remove $LCL_STORE to recompute)"
else
  "$LCL" embed --synsets "$SET" --source wordnet
fi

step "similarity matrices: semantic (doc2vec cosine), lca (Wu-Palmer)"
"$LCL" similarity --synsets "$SET" --source semantic
"$LCL" similarity --synsets "$SET" --source lca
# (the first classes only: a file, not a pipe into head, which would end lcl early)
show=$(mktemp); trap 'rm -f "$show"' EXIT
"$LCL" similarity show --synsets "$SET" --source semantic --top 3 >"$show"
head -n 12 "$show"
case "${LCL_DEMO:-}" in
  methods | quickdraw | quickdraw-full)
    # MBM-soft and HXE (and LCL on lca) train on `--source lca`, the latest lca
    # matrix of the set: the LCA-height form (MBM's), stored again now so that
    # it is the latest whatever was stored before (the Wu-Palmer one above).
    # The hierarchical metrics use the WordNet graph itself, not this matrix.
    step "similarity matrix: lca, LCA-height form (MBM's distance)"
    "$LCL" similarity --synsets "$SET" --source lca --form height --force ;;
esac

# The runs train side by side, one thread each, as many as there are CPUs
# (LCL_DEMO_JOBS): on 2 idle AMD EPYC vCPUs two one-thread runs of this CNN
# finished a grid in 0.77x the time of the same runs one after another with
# two threads each (a step this small scales poorly across threads).
jobs=${LCL_DEMO_JOBS:-$(nproc)}
threads=$(( $(nproc) / jobs )); [ "$threads" -ge 1 ] || threads=1
step "training: $GRID (runs at a time: $jobs, threads each: $threads)"
"$LCL" experiment run "$GRID" --run-dir "$RUNS" --jobs "$jobs" --threads "$threads"

step "report"
"$LCL" report --grid "$GRID" --out "$OUT"
timings
echo "open $OUT/report.html" >&2
