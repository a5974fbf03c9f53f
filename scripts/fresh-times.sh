#!/usr/bin/env bash
# scripts/fresh-times.sh [REPO] [DIR]: the README's two set-up commands timed
# from `git clone`, as a newcomer runs them: clone REPO (default: this
# checkout) into DIR (default: a new temporary folder), then `make demo`, then
# `make test`, and print a stage table: installs, build, each demo stage, the
# test packages that took longest, and the totals, with the CPU model and the
# load average before and after (a figure is only an idle figure when the
# load is ≲ 1). On a machine where nothing was installed before, the installs
# are the package manager's time; run again, they are only the checks.
# Go's caches are the user's own (empty on a fresh machine); set GOCACHE and
# GOMODCACHE to empty folders to time a cold build on a used one.
set -euo pipefail
repo=${1:-$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)}
dir=${2:-$(mktemp -d /tmp/lcl-fresh.XXXXXX)/lcl}
log=$(dirname "$dir")/logs
mkdir -p "$log"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }

t0=$(now)
git clone -q "$repo" "$dir"
t1=$(now)
cd "$dir"
# make demo prints its own stage table (the build with its installs first).
make demo >"$log/demo.log" 2>&1 || { tail -20 "$log/demo.log" >&2; echo "fresh-times: make demo failed (log: $log/demo.log)" >&2; exit 1; }
t2=$(now)
# make test = the test set's installs, then go test: timed apart, as make does them.
scripts/deps.sh test >"$log/test-deps.log" 2>&1 || { cat "$log/test-deps.log" >&2; exit 1; }
t3=$(now)
make test >"$log/test.log" 2>&1 || { tail -40 "$log/test.log" >&2; echo "fresh-times: make test failed (log: $log/test.log)" >&2; exit 1; }
t4=$(now)
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

printf '\n%s, %s CPUs; load before %s, after %s\n' "$cpu" "$(nproc)" "$load_before" "$load_after"
printf '%-58s %6s\n' stage seconds
printf '%-58s %6s\n' "git clone" "$(secs "$t0" "$t1")"
sed -n 's/^  \(.*[^ ]\)  *\([0-9][0-9]*\) s$/\1|\2/p' "$log/demo.log" | grep -v '^total|' |
  while IFS='|' read -r name s; do printf '%-58s %6s\n' "make demo: ${name:0:46}" "$s"; done
printf '%-58s %6s\n' "make demo (total)" "$(secs "$t1" "$t2")"
printf '%-58s %6s\n' "make test: installs (scripts/deps.sh test)" "$(secs "$t2" "$t3")"
printf '%-58s %6s\n' "make test: go test ./... (total)" "$(secs "$t3" "$t4")"
grep -E '^ok ' "$log/test.log" | awk '{ t = $3; sub(/s$/, "", t); print t, $2 }' | sort -rn | head -5 |
  while read -r s pkg; do printf '%-58s %6.0f\n' "  ${pkg#github.com/lcl-project/lcl/}" "$s"; done
printf '%-58s %6s\n' "make test (total, installs included)" "$(secs "$t2" "$t4")"
echo "logs: $log"
