#!/usr/bin/env bash
# Runs every benchmark: Go benchmarks, then the side-by-side comparisons with
# the reference tools (each script prints ratios measured in the same run).
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench . -benchtime 1x ./... 
for s in bench/*.sh; do
  [ -e "$s" ] || continue
  echo "== $s"
  bash "$s"
done
