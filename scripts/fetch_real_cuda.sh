#!/usr/bin/env bash
# Fetches NVIDIA's real CUDA host libraries (no GPU needed to load them) into
# .cache/real-cuda/, for the tests that check probe placement and recording
# against the real instruction shapes, not only cudasim's stand-ins:
#   driver-535/libcuda.so.1     NVIDIA driver 535 (Debian bookworm non-free: libcuda1)
#   cudart-11/libcudart.so.11.0 CUDA runtime 11.8 (Debian bookworm non-free: libcudart11.0)
#   cudart-12/libcudart.so.12   CUDA runtime 12.9 (PyPI: nvidia-cuda-runtime-cu12)
#   cupti-12/libcupti.so.12     CUPTI 12.9 (PyPI: nvidia-cuda-cupti-cu12): loads here, fails
#                               without NVIDIA's driver (the "broken CUPTI" tests)
#   cuda-12-include/{cupti,runtime,nvcc}/  NVIDIA's headers the CUPTI collector is built
#                               against (recorder/build.rs): cupti*.h from the CUPTI wheel,
#                               cuda.h and builtin_types.h from the runtime wheel, and the
#                               crt/ headers they include from nvidia-cuda-nvcc-cu12
# The host's apt configuration is left alone: a private sources list (with
# non-free) and private list/cache directories under .cache/real-cuda/apt.
# Fast when everything is there; a failed fetch warns and the tests that need
# the file say why they skip.
set -uo pipefail
cd "$(dirname "$0")/.."

DEST=.cache/real-cuda
CUDART12_WHEEL="nvidia-cuda-runtime-cu12==12.9.79"
CUPTI12_WHEEL="nvidia-cuda-cupti-cu12==12.9.79"
NVCC12_WHEEL="nvidia-cuda-nvcc-cu12==12.9.86"
DEBIAN_MIRROR=${LAUNCHGAP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

log() { printf '\033[1msetup:\033[0m %s\n' "$*"; }
warn() { printf '\033[1msetup:\033[0m warning: %s\n' "$*" >&2; }

APT_DIR="$PWD/$DEST/apt"

private_apt() {
  local apt_dir=$APT_DIR
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  echo "deb [signed-by=$KEYRING] $DEBIAN_MIRROR bookworm main non-free" > "$apt_dir/sources.list"
  "$@" -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
       -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" \
       -o APT::Sandbox::User=root
}

# Extracts FILE_GLOB of a Debian package into DIR as NAME (plus the real file).
fetch_deb() {
  local package=$1 file_glob=$2 dir=$3 name=$4
  [ -e "$DEST/$dir/$name" ] && return 0
  if [ ! -f "$DEST/apt/.updated" ]; then
    private_apt apt-get -qq update >/dev/null 2>&1 || { warn "apt-get update (private, non-free) failed"; return 1; }
    touch "$DEST/apt/.updated"
  fi
  local work
  work=$(mktemp -d)
  if (cd "$work" && private_apt apt-get -qq download "$package" >/dev/null 2>&1); then
    dpkg-deb -x "$work"/"$package"_*.deb "$work/x"
    local found
    found=$(find "$work/x" -name "$file_glob" -type f | head -n 1)
    if [ -n "$found" ]; then
      mkdir -p "$DEST/$dir"
      cp "$found" "$DEST/$dir/"
      ln -sf "$(basename "$found")" "$DEST/$dir/$name"
      log "fetched $package: $DEST/$dir/$name"
    else
      warn "$package holds no $file_glob"
    fi
  else
    warn "could not download $package from $DEBIAN_MIRROR (non-free)"
  fi
  rm -rf "$work"
  [ -e "$DEST/$dir/$name" ]
}

fetch_cudart12() {
  [ -e "$DEST/cudart-12/libcudart.so.12" ] && return 0
  local work
  work=$(mktemp -d)
  if .venv/bin/python -m pip download -q --no-deps --only-binary=:all: -d "$work" "$CUDART12_WHEEL" >/dev/null 2>&1; then
    mkdir -p "$DEST/cudart-12"
    .venv/bin/python -m zipfile -e "$work"/*.whl "$work/x"
    cp "$work/x/nvidia/cuda_runtime/lib/libcudart.so.12" "$DEST/cudart-12/"
    log "fetched $CUDART12_WHEEL: $DEST/cudart-12/libcudart.so.12"
  else
    warn "could not download $CUDART12_WHEEL from PyPI"
  fi
  rm -rf "$work"
}

# Extracts the members of WHEEL under PREFIX into DIR (wheels are zip files).
unzip_members() {
  local wheel=$1 prefix=$2 dir=$3
  .venv/bin/python - "$wheel" "$prefix" "$dir" <<'PY'
import sys, zipfile
from pathlib import Path
wheel, prefix, dest = sys.argv[1], sys.argv[2], Path(sys.argv[3])
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = dest / name[len(prefix):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(name))
PY
}

# NVIDIA's CUPTI library and the headers the collector is built against: only what
# is needed of each wheel is kept (the nvcc wheel is 40 MB for 24 small headers).
fetch_cupti12() {
  local include="$DEST/cuda-12-include"
  [ -e "$DEST/cupti-12/libcupti.so.12" ] && [ -e "$include/cupti/cupti.h" ] && [ -e "$include/runtime/cuda.h" ] \
    && [ -e "$include/nvcc/crt/host_defines.h" ] && return 0
  local work
  work=$(mktemp -d)
  if .venv/bin/python -m pip download -q --no-deps --only-binary=:all: -d "$work" \
       "$CUPTI12_WHEEL" "$CUDART12_WHEEL" "$NVCC12_WHEEL" >/dev/null 2>&1; then
    rm -rf "$DEST/cupti-12" "$include"
    mkdir -p "$DEST/cupti-12" "$include"
    unzip_members "$work"/nvidia_cuda_cupti_cu12-*.whl nvidia/cuda_cupti/lib/libcupti.so.12 "$DEST/cupti-12/libcupti.so.12"
    unzip_members "$work"/nvidia_cuda_cupti_cu12-*.whl nvidia/cuda_cupti/include/ "$include/cupti"
    unzip_members "$work"/nvidia_cuda_runtime_cu12-*.whl nvidia/cuda_runtime/include/ "$include/runtime"
    unzip_members "$work"/nvidia_cuda_nvcc_cu12-*.whl nvidia/cuda_nvcc/include/crt/ "$include/nvcc/crt"
    log "fetched $CUPTI12_WHEEL (libcupti.so.12, headers) and the CUDA 12.9 headers it includes: $DEST/cupti-12, $include"
  else
    warn "could not download $CUPTI12_WHEEL, $CUDART12_WHEEL and $NVCC12_WHEEL from PyPI"
  fi
  rm -rf "$work"
}

mkdir -p "$DEST"
fetch_deb libcuda1 'libcuda.so.*.*' driver-535 libcuda.so.1
fetch_deb libcudart11.0 'libcudart.so.11.*.*' cudart-11 libcudart.so.11.0
fetch_cudart12
fetch_cupti12
rm -rf "$APT_DIR"  # the package lists are only needed while fetching
exit 0
