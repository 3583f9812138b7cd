#!/usr/bin/env bash
# One-step set-up for a fresh machine of this kind; fast when nothing changed.
#   apt packages (compiler for BPF, libbpf's build deps, tools the tests compare with),
#   the Python virtual environment with launchgap installed editable,
#   NVIDIA's real CUDA libraries and CUPTI headers (scripts/fetch_real_cuda.sh:
#   the tests compare with the libraries, and the recorder's CUPTI collector is
#   built against the headers), an older kernel's BTF (scripts/fetch_kernel_btf.sh:
#   the tests play a kernel launchgap refuses), then cudasim (C) and the recorder (Rust).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  clang llvm            # compiles the BPF C (CO-RE) programs
  libelf-dev zlib1g-dev pkg-config  # libbpf in the recorder's build script links against these
  autoconf automake autopoint flex bison gawk  # libbpf-sys builds libelf (elfutils) from source,
                        # to link it into the recorder and monitor (they need only glibc)
  bpftool               # inspects loaded programs in tests
  bpftrace              # the one-uprobe "floor" in bench/recorder_overhead
  linux-perf            # perf sched: the cross-check for switch counts
  binutils              # objdump / readelf for the prologue and symbol checks; objcopy takes an older kernel's BTF out
  xz-utils              # decompresses that kernel's vmlinuz (scripts/fetch_kernel_btf.sh)
  debian-archive-keyring  # verifies the Debian package that BTF comes from
  stress-ng iperf3 fio  # noisy neighbours for experiments and end-to-end tests
  strace                # tests prove `launchgap doctor` writes nothing
  trace-cmd             # .dat files for the import tests
  chromium-headless-shell  # screenshots of the interactive HTML views in tests
  prometheus            # a real server and promtool for the monitor's deployment tests
)

log() { printf '\033[1msetup:\033[0m %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_apt_packages() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing apt packages: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

check_rust() {
  if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install Rust (rustup, 1.88 or newer) and re-run" >&2
    exit 1
  fi
  # make lint checks the Rust's layout with cargo fmt; a minimal rustup profile leaves it out
  if ! cargo fmt --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
      log "adding rustfmt (rustup component add rustfmt)"
      rustup component add rustfmt >/dev/null
    else
      echo "setup: cargo fmt not found (make lint needs it); install rustfmt and re-run" >&2
      exit 1
    fi
  fi
}

setup_python() {
  local stamp=.venv/.launchgap-installed
  if [ ! -x .venv/bin/python ]; then
    log "creating .venv"
    python3 -m venv .venv
  fi
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    log "installing the launchgap Python package (editable) and its dependencies"
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[dev]'
    touch "$stamp"
  fi
}

build_cudasim() {
  make -s -C workloads/cudasim all
  make -s -C workloads/storm
  make -s -C workloads/levers
}

build_recorder() {
  if [ -f recorder/Cargo.toml ]; then
    (cd recorder && cargo build --release --quiet)
  fi
}

install_apt_packages
check_rust
setup_python
scripts/fetch_real_cuda.sh
# Linux 5.10's BTF, for the tests that play that kernel: in CI (CI set) set-up fails without it, as those tests
# would (tests/census.py); elsewhere a failure is warned, and the tests fetch it again or say why they cannot
if ! scripts/fetch_kernel_btf.sh && [ -n "${CI:-}" ] && [ "${CI}" != 0 ] && [ "${CI}" != false ]; then
  echo "setup: CI: Linux 5.10's BTF could not be fetched (.cache/kernel-btf): the kernel-support tests need it" >&2
  exit 1
fi
build_cudasim
build_recorder
log "ready"
