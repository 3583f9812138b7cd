#!/usr/bin/env bash
# launchgap on a real GPU: the same commands as on cudasim, on real CUDA.
# What each part checks, and how to run it through the device tool:
# docs/gpu-validation.md. `scripts/gpu-validate.sh --help` for the options.
#
# Exit status: 0 every part asked for passed; 1 a part failed (the others
# still ran; see summary.json); 2 a usage error; 3 no GPU on this machine;
# 130/143 interrupted (what was started is stopped, the summary says so).
set -uo pipefail  # no -e: a failed part must not stop the others

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ME=gpu-validate
DEVICE_NODE=${GPU_VALIDATE_DEVICE_NODE:-/dev/nvidia0}
PYTHON=${PYTHON:-python3}
export PYTHONUNBUFFERED=1  # a step killed at its time limit still leaves its output in log.txt
NVCC=${NVCC:-}
CARRY_DIR=${GPU_VALIDATE_CARRY_DIR:-$REPO/.gpu}  # what `prepare` fills on a machine with Rust, for the GPU machine

usage() {
  cat <<'EOF'
usage: scripts/gpu-validate.sh [options] [PART...]

On a machine with an NVIDIA GPU: builds what it needs from this checkout,
records each workload with `launchgap record`, checks the counts against the
workloads' own, and writes the results under --out. Parts (default: all):

  b        launch_counts (workloads/gpu/launch_counts.cu, built with nvcc, runtime
           static): every launch path on two threads, untraced, traced, and traced
           with --api-names; recorded launches must equal the program's own count,
           per thread and API path                                      (~1 min)
  c        the same program with both threads pinned, then with a CPU hog
           (workloads/gpu/cpu_hog.py) on thread 0's CPU; the report must name
           the hog as that thread's culprit                             (~1 min)
  probes   `launchgap probes` on the real driver, if this checkout has it (seconds)
  g        GPU activity (record --gpu-activity: the CUPTI collector on the real
           driver and CUPTI): launch_counts recorded with it, every launch's
           kernel must be there (kernels recorded vs launched, per process and
           thread), the clock alignment each collector stated; then the decode
           of part a recorded with it, its tokens/s beside untraced and traced
           without it, and the report's GPU time                   (~2-3 min)
  a        Qwen3-0.6B-shaped PyTorch decode (workloads/gpu/qwen3_decode.py,
           random weights), untraced and traced, interleaved --repeats times;
           tokens/s, slowdown, the report's verdict                  (~3-4 min)
  all      b c probes g a, in that order (the longest last); ~9 min
  prepare  run HERE, on the machine with Rust and network, not on the GPU one:
           builds the recorder and fills .gpu/ (the recorder, the shared
           libraries it needs, polars wheels for Python 3.12) to carry along

The machine's facts (nvidia-smi, driver, nvcc, PyTorch) are always gathered.
Times are estimates, not yet measured on a GPU (docs/gpu-validation.md).

options:
  -o, --out DIR      results: summary.json, summary.txt, log.txt, env.txt,
                     details.tar.gz (default: $OUT if set, else a new
                     ./gpu-validate-YYYYmmdd-HHMMSS)
  --work DIR         traces and builds, which are large (default: a new
                     directory under ${TMPDIR:-/tmp}, named in the summary)
  --tokens N         part a: timed tokens a run (default 300)
  --repeats N        part a: untraced/traced pairs (default 3)
  --per-path N       part b: launches per API path and thread (default 2000)
  --hog-per-path N   part c: launches per API path and thread (default 20000)
  -h, --help         this text

environment: PYTHON (default python3, the one with PyTorch), NVCC (default:
nvcc on PATH, else /usr/local/cuda/bin/nvcc), LAUNCHGAP_RECORDER (a recorder
binary to use), GPU_VALIDATE_RECORD_ARGS (extra `launchgap record` options,
e.g. --cuda-lib PATH), GPU_VALIDATE_DECODE_ARGS (extra qwen3_decode.py
options, e.g. --layers 2), GPU_VALIDATE_CARRY_DIR (instead of .gpu/). Exit: 0 all passed, 1 a part failed, 2 usage, 3 no GPU.
EOF
}

usage_error() { echo "$ME: $*" >&2; exit 2; }

positive() {  # positive OPTION VALUE
  [[ "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "$1 wants a positive integer, not '$2'"
}

# --- arguments -----------------------------------------------------------------

PARTS=()
OUT_DIR=${OUT:-}
WORK=""
TOKENS=300
REPEATS=3
PER_PATH=2000
HOG_PER_PATH=20000
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    -o|--out|--work|--tokens|--repeats|--per-path|--hog-per-path)
      [ $# -ge 2 ] || usage_error "$1 needs a value"
      case "$1" in
        -o|--out) OUT_DIR=$2 ;;
        --work) WORK=$2 ;;
        --tokens) positive "$1" "$2"; TOKENS=$2 ;;
        --repeats) positive "$1" "$2"; REPEATS=$2 ;;
        --per-path) positive "$1" "$2"; PER_PATH=$2 ;;
        --hog-per-path) positive "$1" "$2"; HOG_PER_PATH=$2 ;;
      esac
      shift 2 ;;
    a|b|c|g|probes|all|prepare) PARTS+=("$1"); shift ;;
    -*) usage_error "unknown option '$1' (see --help)" ;;
    *) usage_error "unknown part '$1': choose from a, b, c, g, probes, all, prepare (see --help)" ;;
  esac
done
[ ${#PARTS[@]} -gt 0 ] || PARTS=(all)

wants() {  # wants PART: asked for, by name or through all
  local p
  for p in "${PARTS[@]}"; do
    [ "$p" = "$1" ] && return 0
    [ "$p" = all ] && [ "$1" != prepare ] && return 0
  done
  return 1
}

# --- prepare: on the machine that builds, not the GPU one ------------------------

# Libraries every Linux with glibc has; the rest the recorder needs are carried.
is_system_library() {
  case "$1" in
    linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libgcc_s.so*) return 0 ;;
  esac
  return 1
}

prepare() {
  local cargo=cargo
  command -v cargo >/dev/null 2>&1 || cargo=$HOME/.cargo/bin/cargo
  [ -x "$(command -v "$cargo")" ] || usage_error "prepare needs Rust (cargo) to build the recorder"
  echo "$ME: building the recorder"
  (cd "$REPO/recorder" && "$cargo" build --release --quiet) || { echo "$ME: the recorder did not build" >&2; exit 1; }
  local recorder=$REPO/recorder/target/release/launchgap-record
  rm -rf "$CARRY_DIR"
  mkdir -p "$CARRY_DIR/bin" "$CARRY_DIR/lib" "$CARRY_DIR/wheels"
  cp "$recorder" "$CARRY_DIR/bin/"
  local name path
  while read -r name path; do
    is_system_library "$name" || cp -L "$path" "$CARRY_DIR/lib/$name"
  done < <(ldd "$recorder" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
  echo "$ME: carried libraries (used there only where missing): $(ls "$CARRY_DIR/lib" | tr '\n' ' ')"
  # polars is what launchgap's analysis needs that the GPU image lacks (its
  # package list has pyarrow, numpy, click and rich); wheels for its Python.
  local py=$REPO/.venv/bin/python
  [ -x "$py" ] || py=python3
  local specs
  specs=$("$py" - <<'EOF' 2>/dev/null
from importlib.metadata import version, PackageNotFoundError
for name in ("polars", "polars-runtime-32"):
    try:
        print(f"{name}=={version(name)}")
    except PackageNotFoundError:
        pass
EOF
)
  [ -n "$specs" ] || specs=polars
  # shellcheck disable=SC2086  # one spec a word
  if "$py" -m pip download -q --no-deps --only-binary=:all: --python-version "${GPU_PYTHON_VERSION:-3.12}" \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 -d "$CARRY_DIR/wheels" $specs; then
    echo "$ME: wheels: $(ls "$CARRY_DIR/wheels" | tr '\n' ' ')"
  else
    echo "$ME: could not download wheels for $specs; the GPU machine will record without reports" >&2
  fi
  echo "$ME: .gpu/ holds $(du -sh "$CARRY_DIR" | cut -f1); carry it: the device tool's run with carry [\".gpu\"] and"
  echo "    command: scripts/gpu-validate.sh all"
}

if wants prepare; then
  [ ${#PARTS[@]} -eq 1 ] || usage_error "prepare runs alone, on the machine that builds (not with other parts)"
  prepare
  exit 0
fi

# --- is there a GPU? ---------------------------------------------------------------

no_gpu() { echo "$ME: no GPU found: $*" >&2; exit 3; }
command -v nvidia-smi >/dev/null 2>&1 || no_gpu "nvidia-smi is not installed"
listing=$(nvidia-smi -L 2>&1)
grep -q '^GPU [0-9]' <<<"$listing" || no_gpu "nvidia-smi lists no GPU ($(head -n1 <<<"$listing" | cut -c1-120))"
[ -e "$DEVICE_NODE" ] || no_gpu "$DEVICE_NODE is missing"

# --- where things go -----------------------------------------------------------------

[ -n "$OUT_DIR" ] || OUT_DIR=$PWD/gpu-validate-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT_DIR" || usage_error "cannot create $OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/launchgap-gpu-validate.XXXXXX") || usage_error "cannot create a work directory"
else
  mkdir -p "$WORK" || usage_error "cannot create $WORK"
  WORK=$(cd "$WORK" && pwd)
fi
LOG=$OUT_DIR/log.txt
SUMMARY=$OUT_DIR/summary.json
SUMMARY_TEXT=$OUT_DIR/summary.txt
rm -f "$SUMMARY" "$SUMMARY_TEXT"
: > "$LOG"

# --- stopping what we started, on every path ----------------------------------------------

CHILD=""        # the running step: a `timeout` that leads its own process group
HOG_PID=""
CURRENT_PART=""
FAILED=0
FINISHED=0

stop_children() {
  if [ -n "$CHILD" ]; then
    kill -TERM -- "-$CHILD" 2>/dev/null || kill -TERM "$CHILD" 2>/dev/null
    wait "$CHILD" 2>/dev/null
    CHILD=""
  fi
  stop_hog
}

stop_hog() {
  if [ -n "$HOG_PID" ]; then
    kill -TERM "$HOG_PID" 2>/dev/null
    wait "$HOG_PID" 2>/dev/null
    HOG_PID=""
  fi
}

on_signal() {
  trap '' INT TERM
  echo "$ME: $1: stopping what was started" >&2
  stop_children
  [ -n "$CURRENT_PART" ] && set_status "$CURRENT_PART" interrupted "stopped by $1"
  finish
  [ "$1" = SIGINT ] && exit 130
  exit 143
}

on_exit() {
  stop_children
  [ "$FINISHED" = 1 ] || finish
}

trap 'on_signal SIGINT' INT
trap 'on_signal SIGTERM' TERM
trap on_exit EXIT

# --- running steps ----------------------------------------------------------------------------

say() { echo "$ME: $*"; echo "## $*" >> "$LOG"; }

# step LIMIT_S COMMAND...: output appended to log.txt; STEP_TAIL holds its last lines.
step() {
  local limit=$1; shift
  printf '$ %s\n' "$*" >> "$LOG"
  local from
  from=$(stat -c %s "$LOG")
  timeout --kill-after=20 "$limit" "$@" >> "$LOG" 2>&1 &
  CHILD=$!
  wait "$CHILD"
  local rc=$?
  CHILD=""
  STEP_TAIL=$(tail -c +"$((from + 1))" "$LOG" | tail -n 3 | tr '\n' ' ' | cut -c1-300)
  [ $rc -eq 124 ] && STEP_TAIL="timed out after ${limit}s; $STEP_TAIL"
  printf '[exit %d]\n' "$rc" >> "$LOG"
  return $rc
}

# step_to FILE LIMIT_S COMMAND...: the same, standard output to FILE.
step_to() {
  local file=$1 limit=$2; shift 2
  printf '$ %s > %s\n' "$*" "$file" >> "$LOG"
  local from
  from=$(stat -c %s "$LOG")
  timeout --kill-after=20 "$limit" "$@" > "$file" 2>> "$LOG" &
  CHILD=$!
  wait "$CHILD"
  local rc=$?
  CHILD=""
  STEP_TAIL=$(tail -c +"$((from + 1))" "$LOG" | tail -n 3 | tr '\n' ' ' | cut -c1-300)
  [ $rc -eq 124 ] && STEP_TAIL="timed out after ${limit}s; $STEP_TAIL"
  printf '[exit %d]\n' "$rc" >> "$LOG"
  return $rc
}

HELPER=()
HELPER_OK=0

# set_status PART STATUS [NOTE] [DETAIL_FILE]: summary.json through the helper,
# summary.txt in plain bash (so a machine whose Python cannot run the helper still says).
set_status() {
  local part=$1 status=$2 note=${3:-} detail=${4:-}
  printf '%s\t%s\t%s\n' "$part" "$status" "$note" >> "$SUMMARY_TEXT"
  [ "$status" = failed ] && FAILED=1
  [ "$HELPER_OK" = 1 ] || return 0
  local args=("$SUMMARY" "$part" "$status")
  [ -n "$note" ] && args+=(--note "$note")
  [ -n "$detail" ] && [ -s "$detail" ] && args+=(--detail "$detail")
  "${HELPER[@]}" set-part "${args[@]}" >> "$LOG" 2>&1
}

finish() {
  FINISHED=1
  # small files only: the device tool brings back 8 files of at most 16 MiB
  local list=$WORK/details.list
  (cd "$WORK" && find . -type f \( -name '*.json' -o -name '*.txt' -o -name '*.log' \) -size -4M \
     -not -path './site/*' -not -path '*.lg/*' | sort > "$list"
   # traces: format 2's directories (their files), or a format-1 file
   find . -type f \( -name '*.lg' -o -path '*.lg/*' \) -size -6M | sort >> "$list")
  tar -C "$WORK" -czf "$OUT_DIR/details.tar.gz" -T "$list" 2>> "$LOG"
  if [ "$(stat -c %s "$OUT_DIR/details.tar.gz" 2>/dev/null || echo 0)" -gt $((15 * 1024 * 1024)) ]; then
    grep -v '\.lg\(/\|$\)' "$list" > "$list.small"
    tar -C "$WORK" -czf "$OUT_DIR/details.tar.gz" -T "$list.small" 2>> "$LOG"
  fi
  echo
  echo "$ME: summary ($OUT_DIR; traces and builds in $WORK)"
  if [ "$HELPER_OK" = 1 ] && [ -f "$SUMMARY" ] && "${HELPER[@]}" show "$SUMMARY" > "$SUMMARY_TEXT.shown" 2>> "$LOG"; then
    mv "$SUMMARY_TEXT.shown" "$SUMMARY_TEXT"
    cat "$SUMMARY_TEXT"
  elif [ -f "$SUMMARY_TEXT" ]; then
    column -t -s $'\t' "$SUMMARY_TEXT" 2>/dev/null || cat "$SUMMARY_TEXT"
  fi
}

# --- what this machine has --------------------------------------------------------------------------

find_nvcc() {
  if [ -n "$NVCC" ]; then :
  elif command -v nvcc >/dev/null 2>&1; then NVCC=$(command -v nvcc)
  elif [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc
  fi
  export NVCC
}

SITE=""
LG=()
CLI_NOTE=""

find_helper_and_cli() {
  if compgen -G "$CARRY_DIR/wheels/*.whl" >/dev/null; then
    SITE=$WORK/site
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$SITE" "$CARRY_DIR"/wheels/*.whl >> "$LOG" 2>&1 || SITE=""
  fi
  local path=$REPO/python${SITE:+:$SITE}
  HELPER=(env "PYTHONPATH=$path" "$PYTHON" -m launchgap.gpu_validation)
  if "${HELPER[@]}" --help >/dev/null 2>> "$LOG"; then HELPER_OK=1; fi
  if [ -x "$REPO/.venv/bin/launchgap" ] && "$REPO/.venv/bin/launchgap" --version >/dev/null 2>&1; then
    LG=("$REPO/.venv/bin/launchgap"); CLI_NOTE="launchgap from the checkout's .venv"
  elif env "PYTHONPATH=$path" "$PYTHON" -c 'import launchgap.cli' >/dev/null 2>&1; then
    LG=(env "PYTHONPATH=$path" "$PYTHON" -m launchgap.cli)
    CLI_NOTE="launchgap run by $PYTHON from python/${SITE:+ with the carried wheels}"
  else
    local why
    why=$(env "PYTHONPATH=$path" "$PYTHON" -c 'import launchgap.cli' 2>&1 | tail -n 1)
    CLI_NOTE="launchgap's Python side cannot run here ($why): recording with the recorder binary, no reports (carry .gpu/wheels: scripts/gpu-validate.sh prepare)"
  fi
}

RECORDER=""
RECORDER_NOTE=""

find_recorder() {
  local candidate
  # this checkout's own build before a carried copy, which may be older (re-run prepare after changes)
  for candidate in "${LAUNCHGAP_RECORDER:-}" "$REPO/recorder/target/release/launchgap-record" \
                   "$CARRY_DIR/bin/launchgap-record"; do
    [ -n "$candidate" ] && [ -x "$candidate" ] && { RECORDER=$candidate; break; }
  done
  if [ -z "$RECORDER" ] && command -v cargo >/dev/null 2>&1; then
    say "building the recorder with cargo"
    if step 600 bash -c "cd '$REPO/recorder' && cargo build --release --quiet"; then
      RECORDER=$REPO/recorder/target/release/launchgap-record
    fi
  fi
  if [ -z "$RECORDER" ]; then
    RECORDER_NOTE="no recorder binary: none carried in .gpu/bin, none built in recorder/target, no cargo here (run scripts/gpu-validate.sh prepare where Rust is, and carry .gpu)"
    return 1
  fi
  local missing
  missing=$(ldd "$RECORDER" 2>/dev/null | awk '/not found/ {print $1}' | tr '\n' ' ')
  if [ -n "$missing" ]; then
    local lib have=1
    for lib in $missing; do [ -e "$CARRY_DIR/lib/$lib" ] || have=0; done
    if [ $have = 0 ]; then
      RECORDER_NOTE="$RECORDER needs shared libraries this machine lacks: ${missing% } (not in $CARRY_DIR/lib either)"
      RECORDER=""
      return 1
    fi
    # only the missing ones, through the loader: LD_LIBRARY_PATH would reach the traced command too
    mkdir -p "$WORK/recorder-lib"
    for lib in $missing; do ln -sf "$CARRY_DIR/lib/$lib" "$WORK/recorder-lib/$lib"; done
    local loader
    loader=$(readelf -l "$RECORDER" 2>/dev/null | sed -n 's/.*program interpreter: \(.*\)]/\1/p')
    [ -n "$loader" ] || loader=/lib64/ld-linux-x86-64.so.2
    printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$loader" "$WORK/recorder-lib" "$RECORDER" \
      > "$WORK/launchgap-record"
    chmod +x "$WORK/launchgap-record"
    RECORDER_NOTE="$RECORDER with carried ${missing% } ($CARRY_DIR/lib)"
    RECORDER=$WORK/launchgap-record
  else
    RECORDER_NOTE=$RECORDER
  fi
  if ! "$RECORDER" --version >> "$LOG" 2>&1; then
    RECORDER_NOTE="$RECORDER does not run here ($(tail -n 1 "$LOG"))"
    RECORDER=""
    return 1
  fi
  export LAUNCHGAP_RECORDER=$RECORDER
}

# record TRACE [recorder options] -- COMMAND...
record() {
  local trace=$1; shift
  # shellcheck disable=SC2206  # extra options are words
  local extra=(${GPU_VALIDATE_RECORD_ARGS:-})
  if [ -z "$RECORDER" ]; then
    STEP_TAIL=$RECORDER_NOTE
    return 1
  fi
  if [ ${#LG[@]} -gt 0 ]; then
    step 300 "${LG[@]}" record -o "$trace" "${extra[@]}" "$@"
  else
    step 300 "$RECORDER" -o "$trace" "${extra[@]}" "$@"
  fi
}

# report TRACE JSON_OUT: `launchgap report --json`, where the Python side runs.
report() {
  if [ ${#LG[@]} -eq 0 ]; then
    STEP_TAIL="no report: $CLI_NOTE"
    return 1
  fi
  step_to "$2" 300 "${LG[@]}" report --json "$1"
}

# --- env: the machine ------------------------------------------------------------------------------

part_env() {
  CURRENT_PART="env"
  {
    echo "== nvidia-smi"; nvidia-smi
    echo "== nvidia-smi -L"; echo "$listing"
    echo "== kernel"; uname -a; cat /proc/cmdline 2>/dev/null
    echo "== os"; grep PRETTY_NAME /etc/os-release 2>/dev/null
    echo "== CPUs"; nproc
    echo "== BTF"; ls -l /sys/kernel/btf/vmlinux 2>&1
    echo "== preemption"; cat /sys/kernel/debug/sched/preempt 2>&1
    echo "== nvcc ($NVCC)"; [ -n "$NVCC" ] && "$NVCC" --version
    echo "== $PYTHON"; "$PYTHON" -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1
    echo "== CUDA libraries in the loader cache"; ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libcudart\.so'
    echo "== recorder"; echo "$RECORDER_NOTE"; [ -n "$RECORDER" ] && "$RECORDER" --version
    echo "== launchgap"; echo "$CLI_NOTE"
    echo "== work directory"; echo "$WORK"
  } > "$OUT_DIR/env.txt" 2>&1
  if [ "$HELPER_OK" = 1 ] && "${HELPER[@]}" environment --json-out "$WORK/env.json" \
       --set "recorder=$RECORDER_NOTE" --set "launchgap=$CLI_NOTE" --set "work=$WORK" \
       --set "nvcc_path=$NVCC" >> "$LOG" 2>&1; then
    set_status env ok "" "$WORK/env.json"
  else
    set_status env ok "the checks' helper cannot run in $PYTHON (it needs pyarrow and click): see env.txt"
  fi
  grep -m1 -E '^(GPU 0|NVIDIA-SMI)' "$OUT_DIR/env.txt" | sed "s/^/$ME: /"
  CURRENT_PART=""
}

# --- b and c: launch_counts -------------------------------------------------------------------------

PROGRAM=""
build_program() {
  [ -n "$PROGRAM" ] && return 0
  if [ -n "${GPU_VALIDATE_LAUNCH_PROGRAM:-}" ]; then  # a stand-in with the same interface (tests)
    PROGRAM=$GPU_VALIDATE_LAUNCH_PROGRAM
    return 0
  fi
  if [ -z "$NVCC" ]; then
    STEP_TAIL="nvcc not found (PATH, /usr/local/cuda/bin; or set NVCC)"
    return 1
  fi
  mkdir -p "$WORK/build"
  say "building launch_counts with $NVCC (runtime linked statically, nvcc's default)"
  local out=$WORK/build/launch_counts
  if step 300 "$NVCC" -O2 -arch=native -o "$out" "$REPO/workloads/gpu/launch_counts.cu" ||
     step 300 "$NVCC" -O2 -o "$out" "$REPO/workloads/gpu/launch_counts.cu"; then
    PROGRAM=$out
    if readelf -d "$out" 2>/dev/null | grep -q 'NEEDED.*libcudart'; then
      say "note: launch_counts links libcudart dynamically here"
    fi
    return 0
  fi
  return 1
}

# run_counts NAME [--pin A,B] [--per-path N]: untraced; counts in $WORK/NAME.counts.json
program_args() {  # program_args COUNTS_FILE PER_PATH [PIN]
  PROGRAM_ARGS=(--threads 2 --per-path "$2" --counts "$1")
  [ -n "${3:-}" ] && PROGRAM_ARGS+=(--pin "$3")
}

# compare_counts TRACE COUNTS OUT_JSON [--api-names]
compare_counts() {
  [ "$HELPER_OK" = 1 ] || { STEP_TAIL="the checks' helper cannot run in $PYTHON (pyarrow, click)"; return 1; }
  step 300 "${HELPER[@]}" compare "$1" "$2" --json-out "$3" "${@:4}"
}

part_b() {
  CURRENT_PART=b
  local dir=$WORK/b notes=() ok=1
  mkdir -p "$dir"
  set_status b running
  if ! build_program; then
    set_status b failed "launch_counts did not build: $STEP_TAIL"
    CURRENT_PART=""; return
  fi
  say "b: launch_counts untraced (2 threads, $PER_PATH calls per path each)"
  program_args "$dir/untraced.counts.json" "$PER_PATH"
  if ! step 300 "$PROGRAM" "${PROGRAM_ARGS[@]}"; then
    set_status b failed "launch_counts failed untraced (its own or the GPU's count is off, or no device): $STEP_TAIL"
    CURRENT_PART=""; return
  fi
  local merge=(untraced="$dir/untraced.counts.json")
  local mode flags
  for mode in driver api_names; do
    flags=(); [ $mode = api_names ] && flags=(--api-names)
    say "b: launch_counts recorded (${flags[*]:-driver probes only})"
    program_args "$dir/$mode.counts.json" "$PER_PATH"
    if ! record "$dir/$mode.lg" "${flags[@]}" -- "$PROGRAM" "${PROGRAM_ARGS[@]}"; then
      notes+=("$mode: recording failed: $STEP_TAIL"); ok=0; continue
    fi
    if compare_counts "$dir/$mode.lg" "$dir/$mode.counts.json" "$dir/$mode.compare.json" "${flags[@]}"; then
      say "b: $mode: recorded launches equal launch_counts' own, per thread and path"
    else
      notes+=("$mode: recorded launches differ from launch_counts' own (see detail)"); ok=0
    fi
    [ -s "$dir/$mode.compare.json" ] && merge+=("$mode=$dir/$mode.compare.json")
    if report "$dir/$mode.lg" "$dir/$mode.report.json"; then :; else notes+=("$mode: report: $STEP_TAIL"); fi
  done
  [ "$HELPER_OK" = 1 ] && "${HELPER[@]}" merge "$dir/detail.json" "${merge[@]}" >> "$LOG" 2>&1
  local note
  note=$(IFS='; '; echo "${notes[*]:-}")
  if [ $ok = 1 ]; then set_status b ok "$note" "$dir/detail.json"; else set_status b failed "$note" "$dir/detail.json"; fi
  CURRENT_PART=""
}

start_hog() {  # start_hog CPU
  "$PYTHON" "$REPO/workloads/gpu/cpu_hog.py" --cpu "$1" >> "$LOG" 2>&1 &
  HOG_PID=$!
  # running and renamed before the workload starts (it renames itself after pinning)
  local i
  for i in $(seq 50); do
    [ "$(cat "/proc/$HOG_PID/comm" 2>/dev/null)" = lg-cpu-hog ] && return 0
    kill -0 "$HOG_PID" 2>/dev/null || break
    sleep 0.1
  done
  STEP_TAIL="the CPU hog did not start (see log.txt)"
  stop_hog
  return 1
}

part_c() {
  CURRENT_PART=c
  local dir=$WORK/c notes=() ok=1
  mkdir -p "$dir"
  set_status c running
  local cpus=()
  read -r -a cpus < <("$PYTHON" -c 'import os; print(*sorted(os.sched_getaffinity(0)))')
  if [ ${#cpus[@]} -lt 2 ]; then
    set_status c skipped "needs two CPUs to pin the two launching threads apart (has ${#cpus[@]})"
    CURRENT_PART=""; return
  fi
  local cpu_hogged=${cpus[-1]} cpu_other=${cpus[-2]}
  if ! build_program; then
    set_status c failed "launch_counts did not build: $STEP_TAIL"
    CURRENT_PART=""; return
  fi
  local merge=() run
  for run in pinned hog; do
    if [ $run = hog ]; then
      say "c: CPU hog on CPU $cpu_hogged"
      if ! start_hog "$cpu_hogged"; then
        notes+=("hog: $STEP_TAIL"); ok=0; break
      fi
    fi
    say "c: launch_counts recorded, threads pinned to CPUs $cpu_hogged,$cpu_other ($run)"
    program_args "$dir/$run.counts.json" "$HOG_PER_PATH" "$cpu_hogged,$cpu_other"
    local recorded=1
    record "$dir/$run.lg" -- "$PROGRAM" "${PROGRAM_ARGS[@]}" || { notes+=("$run: recording failed: $STEP_TAIL"); ok=0; recorded=0; }
    local hog=$HOG_PID
    stop_hog
    [ $recorded = 1 ] || continue
    if ! compare_counts "$dir/$run.lg" "$dir/$run.counts.json" "$dir/$run.compare.json"; then
      notes+=("$run: recorded launches differ from launch_counts' own"); ok=0
    fi
    [ -s "$dir/$run.compare.json" ] && merge+=("$run=$dir/$run.compare.json")
    if ! report "$dir/$run.lg" "$dir/$run.report.json"; then
      notes+=("$run: report: $STEP_TAIL"); ok=0; continue
    fi
    if [ $run = hog ] && [ "$HELPER_OK" = 1 ]; then
      local baseline=()
      [ -s "$dir/pinned.report.json" ] && baseline=(--baseline "$dir/pinned.report.json" --baseline-counts "$dir/pinned.counts.json")
      if step 120 "${HELPER[@]}" culprit "$dir/hog.report.json" "$dir/hog.counts.json" --hog-pid "$hog" --thread 0 \
           "${baseline[@]}" --json-out "$dir/culprit.json"; then
        say "c: the report names the hog (pid $hog) as thread 0's top culprit"
      else
        notes+=("the report does not name the hog (pid $hog) as thread 0's top culprit: $STEP_TAIL"); ok=0
      fi
      [ -s "$dir/culprit.json" ] && merge+=("culprit=$dir/culprit.json")
    fi
  done
  [ "$HELPER_OK" = 1 ] && [ ${#merge[@]} -gt 0 ] && "${HELPER[@]}" merge "$dir/detail.json" "${merge[@]}" >> "$LOG" 2>&1
  local note
  note=$(IFS='; '; echo "${notes[*]:-}")
  if [ $ok = 1 ]; then set_status c ok "$note" "$dir/detail.json"; else set_status c failed "$note" "$dir/detail.json"; fi
  CURRENT_PART=""
}

# --- probes ---------------------------------------------------------------------------------------------

part_probes() {
  CURRENT_PART=probes
  local dir=$WORK/probes
  mkdir -p "$dir"
  if [ ${#LG[@]} -eq 0 ]; then
    set_status probes skipped "$CLI_NOTE"
    CURRENT_PART=""; return
  fi
  if ! "${LG[@]}" probes --help >/dev/null 2>&1; then
    set_status probes skipped "this checkout's launchgap has no 'probes' command; every trace's metadata still names each probe's cost class (the 'probes' lines of b and a)"
    CURRENT_PART=""; return
  fi
  local ok=1 notes=() libs=() extra word previous=""
  # shellcheck disable=SC2206  # extra options are words; probes takes their --cuda-lib ones
  extra=(${GPU_VALIDATE_RECORD_ARGS:-})
  for word in "${extra[@]}"; do
    [ "$previous" = --cuda-lib ] && libs+=(--cuda-lib "$word")
    previous=$word
  done
  if build_program; then
    say "probes: launch_counts"
    step_to "$dir/launch_counts.json" 120 "${LG[@]}" probes --json "${libs[@]}" -- "$PROGRAM" ||
      { ok=0; notes+=("launch_counts: $STEP_TAIL"); }
  fi
  say "probes: PyTorch"
  step_to "$dir/torch.json" 120 "${LG[@]}" probes --json "${libs[@]}" -- "$PYTHON" "$REPO/workloads/gpu/qwen3_decode.py" ||
    { ok=0; notes+=("torch: $STEP_TAIL"); }
  local detail=""
  if [ "$HELPER_OK" = 1 ] && [ -s "$dir/launch_counts.json" ] && [ -s "$dir/torch.json" ]; then
    "${HELPER[@]}" merge "$dir/detail.json" launch_counts="$dir/launch_counts.json" torch="$dir/torch.json" >> "$LOG" 2>&1 &&
      detail=$dir/detail.json
  fi
  local note
  note=$(IFS='; '; echo "${notes[*]:-}")
  if [ $ok = 1 ]; then set_status probes ok "$note" "$detail"; else set_status probes failed "$note" "$detail"; fi
  CURRENT_PART=""
}

# --- g: GPU activity through CUPTI -------------------------------------------------------------------------

part_g() {
  CURRENT_PART=g
  local dir=$WORK/g notes=() ok=1
  mkdir -p "$dir"
  set_status g running
  if build_program; then
    say "g: launch_counts recorded with --gpu-activity (2 threads, $PER_PATH calls per path each)"
    program_args "$dir/gpu.counts.json" "$PER_PATH"
    if record "$dir/gpu.lg" --gpu-activity -- "$PROGRAM" "${PROGRAM_ARGS[@]}"; then
      if [ "$HELPER_OK" = 1 ] && step 300 "${HELPER[@]}" gpu-activity "$dir/gpu.lg" --counts "$dir/gpu.counts.json" \
           --json-out "$dir/launch_counts.json"; then
        say "g: every launch of launch_counts has its kernel in the trace"
      else
        notes+=("launch_counts: kernels recorded differ from launches: $STEP_TAIL"); ok=0
      fi
      report "$dir/gpu.lg" "$dir/launch_counts.report.json" || notes+=("launch_counts report: $STEP_TAIL")
    else
      notes+=("launch_counts with --gpu-activity: recording failed: $STEP_TAIL"); ok=0
    fi
  else
    notes+=("launch_counts did not build: $STEP_TAIL"); ok=0
  fi
  # shellcheck disable=SC2206  # extra options are words
  local decode=("$PYTHON" "$REPO/workloads/gpu/qwen3_decode.py" --tokens "$TOKENS" ${GPU_VALIDATE_DECODE_ARGS:-})
  local i
  for i in $(seq "$REPEATS"); do
    say "g: decode $i/$REPEATS untraced, traced, traced with --gpu-activity ($TOKENS tokens)"
    step 240 "${decode[@]}" --result "$dir/untraced-$i.json" || { notes+=("untraced run $i: $STEP_TAIL"); ok=0; break; }
    record "$dir/traced-$i.lg" -- "${decode[@]}" --result "$dir/traced-$i.json" \
      || { notes+=("traced run $i: $STEP_TAIL"); ok=0; }
    if record "$dir/gpu-$i.lg" --gpu-activity -- "${decode[@]}" --result "$dir/gpu-$i.json"; then
      [ "$HELPER_OK" = 1 ] && "${HELPER[@]}" gpu-activity "$dir/gpu-$i.lg" --json-out "$dir/decode-$i.json" >> "$LOG" 2>&1 \
        || notes+=("decode $i: not every launch has its kernel (see decode-$i.json)")
      report "$dir/gpu-$i.lg" "$dir/decode-$i.report.json" || notes+=("decode $i report: $STEP_TAIL")
    else
      notes+=("decode $i with --gpu-activity: recording failed: $STEP_TAIL"); ok=0
    fi
  done
  local note
  note=$(IFS='; '; echo "${notes[*]:-}")
  local detail=""
  [ -s "$dir/launch_counts.json" ] && detail=$dir/launch_counts.json
  if [ $ok = 1 ]; then set_status g ok "$note" "$detail"; else set_status g failed "$note" "$detail"; fi
  CURRENT_PART=""
}

# --- a: PyTorch decode ----------------------------------------------------------------------------------

part_a() {
  CURRENT_PART=a
  local dir=$WORK/a notes=() ok=1
  mkdir -p "$dir"
  set_status a running
  # shellcheck disable=SC2206  # extra options are words
  local decode=("$PYTHON" "$REPO/workloads/gpu/qwen3_decode.py" --tokens "$TOKENS" ${GPU_VALIDATE_DECODE_ARGS:-})
  local untraced=() traced=() traces=() reports=() i
  for i in $(seq "$REPEATS"); do
    say "a: decode $i/$REPEATS untraced ($TOKENS tokens)"
    if step 240 "${decode[@]}" --result "$dir/untraced-$i.json"; then
      untraced+=(--untraced "$dir/untraced-$i.json")
    else
      notes+=("untraced run $i failed: $STEP_TAIL"); ok=0
      [ "$i" = 1 ] && break  # PyTorch or the GPU is not there: no use repeating it
    fi
    say "a: decode $i/$REPEATS recorded"
    if record "$dir/traced-$i.lg" -- "${decode[@]}" --result "$dir/traced-$i.json"; then
      traced+=(--traced "$dir/traced-$i.json"); traces+=(--trace "$dir/traced-$i.lg")
      if report "$dir/traced-$i.lg" "$dir/report-$i.json"; then
        reports+=(--report "$dir/report-$i.json")
      else
        notes+=("report $i: $STEP_TAIL")
      fi
    else
      notes+=("recorded run $i failed: $STEP_TAIL"); ok=0
    fi
  done
  local detail=""
  if [ ${#untraced[@]} -gt 0 ] && [ ${#traced[@]} -gt 0 ] && [ "$HELPER_OK" = 1 ]; then
    if step 300 "${HELPER[@]}" decode "${untraced[@]}" "${traced[@]}" "${traces[@]}" "${reports[@]}" \
         --json-out "$dir/detail.json"; then
      detail=$dir/detail.json
    else
      notes+=("summarising the runs failed: $STEP_TAIL"); ok=0
    fi
  fi
  local note
  note=$(IFS='; '; echo "${notes[*]:-}")
  if [ $ok = 1 ]; then set_status a ok "$note" "$detail"; else set_status a failed "$note" "$detail"; fi
  CURRENT_PART=""
}

# --- run ---------------------------------------------------------------------------------------------------

say "results in $OUT_DIR, traces and builds in $WORK"
find_nvcc
find_helper_and_cli
find_recorder || say "recording is not possible: $RECORDER_NOTE"
say "$CLI_NOTE"
part_env
wants b && part_b
wants c && part_c
wants probes && part_probes
wants g && part_g
wants a && part_a
finish
exit $FAILED
