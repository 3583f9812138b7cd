#!/usr/bin/env bash
# The main job on the embedded default workload: record cudasim's decode loop
# with the eBPF recorder and its GPU activity (through cudasim's CUPTI stand-in),
# then print launchgap's report on it, GPU time first. Recording needs
# root (CAP_BPF, CAP_PERFMON); without it, cudasim's own ground truth is shown.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
workload=(workloads/cudasim/build/bin/cudasim decode --threads 2 --truth "$out/truth.json")
if [ "$(id -u)" -eq 0 ]; then
  recorder/target/release/launchgap-record --gpu-activity -o "$out/demo.lg" -- "${workload[@]}"
  echo
  .venv/bin/launchgap report "$out/demo.lg"
else
  echo "demo: recording needs root (sudo make demo); showing cudasim's ground truth instead" >&2
  "${workload[@]}"
  .venv/bin/launchgap cudasim-truth "$out/truth.json"
fi
