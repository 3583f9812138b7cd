#!/usr/bin/env bash
# Fetches the BTF of a real older kernel into .cache/kernel-btf/, for the tests
# that play, through LAUNCHGAP_VMLINUX_BTF, a kernel launchgap cannot run on:
#   debian-bullseye.btf   Debian 11's kernel (Linux 5.10, the current ABI of
#                         linux-image-amd64): its vmlinuz's .BTF section, raw
# The package is Debian's unsigned image (about 55 MB); only the BTF (about
# 4 MB) is kept. The host's apt configuration is left alone: a private sources
# list and private list/cache directories under .cache/kernel-btf/apt. Fast when
# the file is there. Exits 0 when the BTF is there, 2 when the mirror cannot be
# reached (the tests that need the BTF then skip, saying so), 1 on any other
# failure (they fail: a package that changed shape must be looked at).
set -uo pipefail
cd "$(dirname "$0")/.."

DEST=.cache/kernel-btf
NAME=debian-bullseye.btf
DEBIAN_MIRROR=${LAUNCHGAP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

log() { printf '\033[1msetup:\033[0m %s\n' "$*"; }
warn() { printf '\033[1msetup:\033[0m warning: %s\n' "$*" >&2; }

[ -e "$DEST/$NAME" ] && exit 0

APT_DIR="$PWD/$DEST/apt"
private_apt() {
  mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
  echo "deb [signed-by=$KEYRING] $DEBIAN_MIRROR bullseye main" > "$APT_DIR/sources.list"
  "$@" -o Dir::Etc::SourceList="$APT_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null \
       -o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache" \
       -o APT::Sandbox::User=root
}

# The payload of a bzImage: the vmlinux ELF, compressed after the setup code.
decompress_bzimage() {
  local image=$1 out=$2 offset
  offset=$(python3 -c 'import sys; print(open(sys.argv[1], "rb").read().find(b"\xfd7zXZ\x00"))' "$image")
  [ "$offset" -ge 0 ] || return 1
  # xz stops with an error at the bytes after the stream: what it wrote is the whole vmlinux
  tail -c +"$((offset + 1))" "$image" | xz -dc > "$out" 2>/dev/null
  [ -s "$out" ]
}

fetch() {
  mkdir -p "$DEST"
  # apt-get update exits 0 when it could fetch no index at all: no package list is what says so
  private_apt apt-get -qq update >/dev/null 2>&1
  if ! compgen -G "$APT_DIR/lists/*_Packages*" >/dev/null; then
    warn "cannot reach $DEBIAN_MIRROR (apt-get update of bullseye failed): the tests that play Linux 5.10 skip"
    return 2
  fi
  local image
  image=$(private_apt apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
  [ -n "$image" ] || { warn "no linux-image-amd64 in Debian bullseye"; return 1; }
  local work
  work=$(mktemp -d)
  if ! (cd "$work" && private_apt apt-get -qq download "$image-unsigned" >/dev/null 2>&1); then
    warn "could not download $image-unsigned from $DEBIAN_MIRROR: the tests that play Linux 5.10 skip"
    rm -rf "$work"
    return 2
  fi
  local release=${image#linux-image-}
  local status=0
  dpkg-deb --fsys-tarfile "$work"/*.deb | tar -x -C "$work" "./boot/vmlinuz-$release"
  if decompress_bzimage "$work/boot/vmlinuz-$release" "$work/vmlinux" \
     && objcopy -O binary --only-section=.BTF "$work/vmlinux" "$DEST/$release.btf" \
     && [ -s "$DEST/$release.btf" ]; then
    ln -sf "$release.btf" "$DEST/$NAME"
    log "fetched $image-unsigned's BTF: $DEST/$NAME ($release)"
  else
    rm -f "$DEST/$release.btf"
    warn "could not take the BTF out of $image-unsigned's vmlinuz"
    status=1
  fi
  rm -rf "$work"
  return $status
}

fetch
status=$?
rm -rf "$APT_DIR"  # the package lists are only needed while fetching
exit $status
