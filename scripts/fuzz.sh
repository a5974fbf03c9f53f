#!/bin/sh
# Runs every fuzz target of the module (func FuzzXxx in a _test.go file) for
# $FUZZTIME each (default 60s), $FUZZPARALLEL workers (default: all CPUs).
# A failing input is saved by go test under the package's
# testdata/fuzz/FuzzXxx/ and from then on runs as a regression case in
# `make test`. FUZZ=regexp runs only the matching targets.
# Usage: make fuzz [FUZZTIME=30s] [FUZZ=Npy]
set -u
cd "$(dirname "$0")/.."
t=${FUZZTIME:-60s}
p=${FUZZPARALLEL:-$(nproc)}
only=${FUZZ:-.}
failed=""
n=0
for f in $(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do
	pkg=./$(dirname "${f#./}")
	for fn in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f"); do
		echo "$pkg $fn" | grep -q -- "$only" || continue
		n=$((n + 1))
		echo "== $pkg $fn ($t, $p workers)"
		if ! go test -run '^$' -fuzz "^$fn\$" -fuzztime "$t" -parallel "$p" "$pkg"; then
			failed="$failed $pkg.$fn"
		fi
	done
done
if [ -n "$failed" ]; then
	echo "fuzz: failures in:$failed (inputs saved under testdata/fuzz/)" >&2
	exit 1
fi
echo "fuzz: $n targets, $t each: no failure"
