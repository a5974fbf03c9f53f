#!/usr/bin/env bash
# The main job on embedded defaults. It grows with the pipeline; today it
# shows the demo label set with its WordNet synsets.
set -euo pipefail
cd "$(dirname "$0")/.."
LCL=${LCL:-bin/lcl}
export LCL_STORE=${LCL_STORE:-$PWD/.lcl/store}
echo "== Fashion-MNIST classes and their WordNet 3.0 synsets"
$LCL synsets fashion-mnist
