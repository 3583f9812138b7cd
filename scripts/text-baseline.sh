#!/usr/bin/env bash
# Every output of the fixed traces (text, CSV, a timeline PNG), one file per command, into DIR: run it before and after a change
# that must not change behaviour (a refactoring, a formatter's pass) and compare the two directories with
# `diff -r`. The fixed traces are the repository's (tests/data) and, where this checkout sits beside them,
# the real PyTorch profiler traces of ../shared/real-traces. Paths in the outputs are the inputs' own, so
# run both sides from checkouts at the same path, or compare after replacing it.
#
#   scripts/text-baseline.sh /tmp/before     # on the old code
#   scripts/text-baseline.sh /tmp/after      # on the new
#   diff -r /tmp/before /tmp/after
#
# More traces after DIR (recordings of your own: --gpu-activity beside a hog, bounds mode) join the fixed ones, so
# that a change to the GPU side's words is compared too.
set -uo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 DIR [TRACE...] (DIR: where the outputs go; created, must not exist)" >&2
  exit 2
fi
# absolute before the cd below, so that a relative DIR is the caller's
out=$(realpath -m -- "$1")
shift
extra=()
for trace in "$@"; do
  extra+=("$(realpath -- "$trace")") || exit 2
done
if [ -e "$out" ]; then
  echo "$out exists: give a new directory" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
repo=$PWD
# this checkout's package, whichever checkout the venv was installed from (a worktree may borrow one)
launchgap=(env PYTHONPATH="$repo/python" "$repo/.venv/bin/python" -m launchgap.cli)
if [ ! -x "$repo/.venv/bin/python" ]; then
  echo "no .venv here: run make setup first" >&2
  exit 2
fi
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# interrupted: stop (the EXIT trap cleans up), rather than go on writing empty outputs
trap 'exit 130' INT TERM

# one command's stdout, stderr and exit status, under a name; a fixed terminal width and no colour
run() {
  local name=$1
  shift
  COLUMNS=100 NO_COLOR=1 "${launchgap[@]}" "$@" >"$out/$name.out" 2>"$work/stderr"
  echo "exit $?" >>"$work/stderr"
  # the scratch directory's name is new each run
  sed "s#$work#SCRATCH#g" "$work/stderr" >"$out/$name.err"
}

inputs=("tests/data/format1-cudasim.lg" "tests/data/cuda_sched_trace-cudasim.csv")
for kineto in ../shared/real-traces/kineto/*.json.gz; do
  [ -e "$kineto" ] && inputs+=("$kineto")
done
inputs+=("${extra[@]}")

for input in "${inputs[@]}"; do
  name=$(basename "$input")
  run "$name.report" report "$input"
  run "$name.report-v" report -v "$input"
  run "$name.report-json" report --json "$input"
  run "$name.report-by-process" report --culprits-by process "$input"
  run "$name.export-csv" export --csv -o "$work/$name.csv" "$input"
  [ -f "$work/$name.csv" ] && cp "$work/$name.csv" "$out/$name.study.csv"
  run "$name.timeline" timeline -o "$work/$name.png" "$input"
  [ -f "$work/$name.png" ] && cp "$work/$name.png" "$out/$name.timeline.png"
done
run "diff.report" diff tests/data/format1-cudasim.lg tests/data/cuda_sched_trace-cudasim.csv
run "diff.json" diff --json tests/data/format1-cudasim.lg tests/data/cuda_sched_trace-cudasim.csv
for command in "" convert cudasim-truth diff doctor experiment export import monitor probes record report \
               running-waiting timeline; do
  run "help-${command:-launchgap}" $command --help
done
echo "$(ls "$out" | wc -l) outputs in $out"
