#!/usr/bin/env bash
# Builds the wheel a GPU node installs with pip: the Python package with the
# recorder and monitor binaries inside it (launchgap/bin/), linked so they need
# nothing but glibc (libbpf, libelf and zlib are built in: recorder/Cargo.toml).
#   scripts/dist.sh [OUT_DIR]     (default dist/; `make dist` runs it after setup)
# LAUNCHGAP_DIST_BINARIES=DIR takes both binaries from DIR instead of the
# recorder's release build (binaries built elsewhere; the tests' refusal case).
# setuptools builds the wheel from a staged copy of the package with the binaries
# dropped in, so the checkout's editable install never runs copies of them that
# go stale. A binary needing any library outside glibc fails the build (rather
# than having it grafted in, as `auditwheel repair` would); auditwheel names the
# manylinux tag the binaries meet, and `wheel tags` puts that tag on the wheel.
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  -*) printf 'dist: unknown option %s (usage: scripts/dist.sh [OUT_DIR])\n' "$1" >&2; exit 2 ;;
esac
# paths given are the caller's, read before moving to the checkout
CALLER_DIR=$PWD
OUT_DIR=$(realpath -m -- "${1:-$(dirname "$0")/../dist}")
BINARY_DIR=${LAUNCHGAP_DIST_BINARIES:+$(realpath -m -- "$LAUNCHGAP_DIST_BINARIES")}
cd "$(dirname "$0")/.."

PYTHON=.venv/bin/python
BINARIES=(launchgap-record launchgap-monitor)

log() { printf '\033[1mdist:\033[0m %s\n' "$*" >&2; }
die() { printf 'dist: %s\n' "$*" >&2; exit 1; }

[ -x "$PYTHON" ] || die "$PYTHON is missing: run \`make setup\` first"
"$PYTHON" -c 'import auditwheel, elftools, wheel' 2>/dev/null \
  || die "auditwheel, pyelftools or wheel is missing from .venv: run \`make setup\` (they are in the dev extras)"

if [ -z "$BINARY_DIR" ]; then
  command -v cargo >/dev/null 2>&1 || PATH="$HOME/.cargo/bin:$PATH"  # rustup's, as setup.sh finds it
  command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (rustup) and run \`make setup\`"
  (cd recorder && cargo build --release --locked --quiet)
  BINARY_DIR=recorder/target/release
fi
for binary in "${BINARIES[@]}"; do
  [ -f "$BINARY_DIR/$binary" ] || die "$BINARY_DIR/$binary is missing"
done

# What each binary needs, read from its dynamic section: glibc's libraries and
# libgcc_s (the unwinder Rust's standard library links; every glibc system has
# it, glibc's own pthread_cancel loads it). auditwheel alone would not do: its
# manylinux policies also allow libz.so.1 and a few other system libraries.
"$PYTHON" - "$BINARY_DIR" "${BINARIES[@]}" <<'CHECK' || exit 1
import sys
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

GLIBC = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2",
         "libgcc_s.so.1"}
directory, names = Path(sys.argv[1]), sys.argv[2:]
outside = set()
for name in names:
    try:
        with open(directory / name, "rb") as binary:
            dynamic = ELFFile(binary).get_section_by_name(".dynamic")
            needed = {tag.needed for tag in dynamic.iter_tags("DT_NEEDED")} if dynamic else set()
    except (OSError, ELFError) as error:
        sys.exit(f"dist: {directory / name} is not a readable ELF binary: {error}")
    outside |= needed - GLIBC
if outside:
    sys.exit("dist: the binaries need libraries outside glibc: " + ", ".join(sorted(outside)))
CHECK

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

tar --exclude=__pycache__ --exclude='*.egg-info' -cf - pyproject.toml README.md python | tar -C "$stage" -xf -
mkdir "$stage/python/launchgap/bin"
for binary in "${BINARIES[@]}"; do
  install -m 0755 "$BINARY_DIR/$binary" "$stage/python/launchgap/bin/$binary"
done
# a platform wheel, not py3-none-any: the tag auditwheel checks names the platform
printf '[bdist_wheel]\nplat_name = linux_%s\n' "$(uname -m)" >"$stage/setup.cfg"

log "building the wheel"
"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$stage/wheel" "$stage"
built=("$stage"/wheel/launchgap-*.whl)
[ ${#built[@]} -eq 1 ] && [ -f "${built[0]}" ] || die "pip built no single launchgap wheel in $stage/wheel"

# the manylinux tag the binaries meet, and anything they would need outside glibc
# (its INFO lines only when it fails)
shown=$("$PYTHON" -m auditwheel show --json "${built[0]}" 2>"$stage/auditwheel.log") \
  || die "auditwheel could not read ${built[0]}: $(tail -n 1 "$stage/auditwheel.log")"
tag=$(printf '%s' "$shown" | "$PYTHON" -c '
import json, sys
shown = json.load(sys.stdin)
outside = sorted(shown.get("external_libs") or {})
if outside:
    sys.exit("dist: the binaries need libraries outside glibc: " + ", ".join(outside))
tag = shown.get("overall_tag") or ""
if not tag.startswith("manylinux_"):
    sys.exit(f"dist: auditwheel found no manylinux tag for the wheel (it says {tag or shown!r})")
print(tag)
')

"$PYTHON" -m wheel tags --remove --platform-tag "$tag" "${built[0]}" >/dev/null
mkdir -p "$OUT_DIR"
rm -f "$OUT_DIR"/launchgap-*.whl  # one wheel, so `pip install dist/*.whl` installs one
mv "$stage"/wheel/launchgap-*.whl "$OUT_DIR"/
log "$(realpath --relative-base="$CALLER_DIR" -- "$OUT_DIR"/launchgap-*.whl)"
