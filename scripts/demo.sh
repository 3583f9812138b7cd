#!/usr/bin/env bash
# The main job on the embedded default workload. Until the recorder lands this
# runs cudasim and prints a summary of its ground truth.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
workloads/cudasim/build/bin/cudasim decode --truth "$out/truth.json"
.venv/bin/launchgap cudasim-truth "$out/truth.json"
