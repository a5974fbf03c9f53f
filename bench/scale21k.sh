#!/usr/bin/env bash
# ImageNet-21k scale: every step a user runs for the 21,843 classes of
# `--synsets imagenet21k`, offline, in a fresh store: WordNet documents, doc2vec
# vectors, the three similarity sources, show/export/plot of a 1.9 GB matrix,
# LCL's per-epoch plan over the plugin protocol, and one epoch of training with
# LCL (semantic and simrank similarity) and LS on synthetic data.
#
# Each row: wall seconds and peak RSS of the command (/usr/bin/time -v: its
# largest process), and the peak of lcl, its plugins and their shared matrix
# files together (sampled every 0.2 s). Budgets (the issue's acceptance):
# each `lcl similarity` ≤ 60 s and ≤ 8 GB; one LCL plan ≤ 5 s; each training
# run ≤ 8 GB. Needs about 12 GB of disk and WordNet (make deps).
#   bench/scale21k.sh [EXAMPLES]      (synthetic training examples, default 4096)
set -euo pipefail
cd "$(dirname "$0")/.."
examples=${1:-4096}
lcl=${LCL:-bin/lcl}
[ -x "$lcl" ] || go build -o "$lcl" ./cmd/lcl
lcl=$(realpath "$lcl")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lcl-scale21k.XXXXXX")
shm=$(mktemp -d "$( [ -w /dev/shm ] && echo /dev/shm || echo "$tmp")/lcl-scale21k-shm.XXXXXX")
trap 'rm -rf "$tmp" "$shm"' EXIT
export LCL_PLUGIN_MATRIX_DIR=$shm
store=$tmp/store
status=0

# tree_kb PID: RSS (kB) of PID and its descendants, plus the shared matrix files.
tree_kb() {
  local rss files
  rss=$(ps -e -o pid=,ppid=,rss= | awk -v root="$1" '
    { parent[$1] = $2; rss[$1] = $3 }
    END { for (p in parent) { q = p; while (q != "" && q != root && q != 1 && q != 0) q = parent[q]; if (q == root) s += rss[p] }; print s + 0 }')
  files=$(du -sk "$shm" 2>/dev/null | awk '{print $1}')
  echo $((rss + ${files:-0}))
}

# step NAME MAX_SECONDS MAX_GB COMMAND...: run, time, check the budgets.
step() {
  local name=$1 maxs=$2 maxgb=$3
  shift 3
  /usr/bin/time -v -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" &
  local pid=$! peak=0 kb
  while kill -0 "$pid" 2>/dev/null; do
    kb=$(tree_kb "$pid")
    [ "$kb" -gt "$peak" ] && peak=$kb
    sleep 0.2
  done
  local rc=0
  wait "$pid" || rc=$?
  local secs rss verdict=ok
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$tmp/time")
  rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tmp/time")
  if [ "$rc" -ne 0 ]; then
    verdict="FAIL (exit $rc: $(tail -n 1 "$tmp/err"))"
  elif [ "$maxs" != - ] && awk -v s="$secs" -v m="$maxs" 'BEGIN { exit !(s > m) }'; then
    verdict="FAIL (over $maxs s)"
  elif [ "$maxgb" != - ] && awk -v k="$peak" -v r="$rss" -v m="$maxgb" 'BEGIN { exit !((k > r ? k : r) > m * 1e6) }'; then
    verdict="FAIL (over $maxgb GB)"
  fi
  [ "$verdict" = ok ] || status=1
  printf "  %-34s %8.1f s %8.2f GB %8.2f GB   %s\n" "$name" "$secs" "$(awk -v k="$rss" 'BEGIN { print k / 1e6 }')" \
    "$(awk -v k="$peak" 'BEGIN { print k / 1e6 }')" "$verdict"
}

echo "ImageNet-21k (21,843 classes) on $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf "  %-34s %10s %11s %11s   %s\n" step seconds "peak RSS" "with plugins" verdict
L=("$lcl" --quiet --store "$store")
step "synsets (named from WordNet)" - - "${L[@]}" synsets imagenet21k
[ "$(grep -c . "$tmp/out")" -eq 21844 ] || { echo "  lcl synsets imagenet21k: $(grep -c . "$tmp/out") lines, want 21844"; status=1; }
step "wiki fetch --source wordnet" - - "${L[@]}" wiki fetch --synsets imagenet21k --source wordnet
step "embed (doc2vec d=100)" - - "${L[@]}" embed --synsets imagenet21k
for src in lca simrank semantic; do
  step "similarity --source $src" 60 8 "${L[@]}" similarity --synsets imagenet21k --source "$src" --max-memory 8GB
done
step "similarity show --top 5" - 8 "${L[@]}" similarity show --synsets imagenet21k --source semantic --top 5
key=$("$lcl" --store "$store" --json store ls | awk -F'"key":"' '/sim\/imagenet21k\/semantic/ { split($2, k, "\""); print k[1] }' | head -n 1)
step "store export --format npy" - 8 "${L[@]}" store export "$key" --format npy -o "$tmp/semantic.npy"
/usr/bin/python3 - "$tmp/semantic.npy" <<'PY' || status=1
import sys, numpy as np
a = np.load(sys.argv[1], mmap_mode="r")
assert a.shape == (21843, 21843) and a.dtype == np.float32, (a.shape, a.dtype)
assert float(a[0, 0]) == 1.0 and float(a[123, 456]) == float(a[456, 123])
PY
rm -f "$tmp/semantic.npy"
step "similarity plot" - 8 "${L[@]}" similarity plot --synsets imagenet21k --source semantic -o "$tmp/plots"
echo "  one LCL plan over the plugin protocol (lcl plugins serve), a random 21,843² similarity:"
go run ./bench/scale21k -lcl "$lcl" -epochs 3 -limit 5 || status=1
data="synthetic?n=$examples&test=512&classes=21843&shape=1,28,28"
for s in lcl:semantic lcl:simrank ls:semantic; do
  strategy=${s%%:*} source=${s#*:}
  name="train 1 epoch: $strategy"
  [ "$strategy" = lcl ] && name="$name --source $source"
  step "$name" - 8 "${L[@]}" train --synsets imagenet21k --data "$data" --model mlp:hidden=64 \
    --strategy "$strategy" --source "$source" --epochs 1 --batch 128 --threads 2 --no-store --out "$tmp/run-$strategy-$source"
done
[ "$status" -eq 0 ] && echo "  all steps within their budgets: PASS" || echo "  some step failed or exceeded its budget: FAIL"
exit "$status"
