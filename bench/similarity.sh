#!/bin/sh
# Side-by-side benchmark of lcl's similarity sources: SimRank speed against
# networkx and a sparse NumPy/SciPy iteration (same run, same machine), and
# the zero-pair share and Spearman correlation with Wu-Palmer of the SimRank
# remedies. Needs Debian's python3-networkx, python3-numpy, python3-scipy
# (make bench-deps) and WordNet 3.0 (make deps).
set -eu
cd "$(dirname "$0")/.."
exec go run ./bench/similarity "$@"
