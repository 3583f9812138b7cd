"""A read-only view of a host's /proc, /sys and /etc: the live host, a copy of
another node's files under a directory (`--root`), or the snapshot a recorder
stored in a trace. The checks see only this interface, so all three run the
same code. Nothing here opens a file for writing."""

from __future__ import annotations

import errno
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from launchgap.doctor.parse import UnparsableFile


@dataclass(frozen=True)
class Reading:
    """One file as read: its text, or why it could not be read (an errno, and REASON where the errno's name
    would not say it)."""

    path: str
    text: str | None
    error: int | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.text is not None

    @property
    def value(self) -> str | None:
        return None if self.text is None else self.text.strip()

    @property
    def why(self) -> str:
        """The reason a read failed, as the errno's name (ENOENT, EACCES, ...)."""
        if self.reason is not None:
            return self.reason
        if self.error is None:
            return ""
        return errno.errorcode.get(self.error, f"errno {self.error}")

    @property
    def missing(self) -> bool:
        return self.error == errno.ENOENT


@dataclass(frozen=True)
class Listing:
    path: str
    names: tuple[str, ...] | None
    error: int | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.names is not None

    @property
    def why(self) -> str:
        if self.reason is not None:
            return self.reason
        return "" if self.error is None else errno.errorcode.get(self.error, f"errno {self.error}")


class Host(Protocol):
    """What a check may ask of a host: read a file, list a directory."""

    description: str

    def read(self, path: str) -> Reading: ...

    def listdir(self, path: str) -> Listing: ...


# the largest host file the doctor reads: /proc/interrupts of a machine with thousands of CPUs and IRQs is a
# few MB; more is not a host file
MAX_HOST_FILE_BYTES = 64 << 20


# a read's size: /proc/sys handlers allocate a buffer of the size asked and refuse a large one (ENOMEM)
READ_CHUNK = 64 << 10


def _read_bounded(fd: int) -> bytes:
    """Up to MAX_HOST_FILE_BYTES + 1 bytes (one more says the file is too large), in chunks."""
    chunks, total = [], 0
    while total <= MAX_HOST_FILE_BYTES:
        chunk = os.read(fd, READ_CHUNK)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _bounded_gunzip(data: bytes) -> bytes:
    """A .gz decompressed up to MAX_HOST_FILE_BYTES (a small bomb would fill memory), else OSError."""
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out = decompressor.decompress(data, MAX_HOST_FILE_BYTES + 1)
    if len(out) > MAX_HOST_FILE_BYTES or decompressor.unconsumed_tail:
        raise OSError(errno.EFBIG, "decompresses to more than a host file holds")
    if not decompressor.eof:
        raise OSError(errno.EINVAL, "a truncated gzip stream")
    return out


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# why a path under --root is not read: a symbolic link on its way leads out of the root (a copy of another
# node's files may hold one to /etc/shadow; its text would be printed in a "cannot parse" message)
OUTSIDE_ROOT = "a symbolic link out of the root"


class OutsideRoot(OSError):
    def __init__(self) -> None:
        super().__init__(errno.EXDEV, OUTSIDE_ROOT)


class DirectoryHost:
    """Files under ROOT ("/" for the live host). A path ending in .gz is
    decompressed (the kernel's /proc/config.gz). Under any other root, every
    path is resolved (symbolic links followed) and refused unless it stays in
    the root, checked before it is opened and again on what was opened."""

    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)
        self.description = "this host" if str(root) == "/" else f"the files under {root}"
        self._real_root = os.path.realpath(root)
        self._confined = self._real_root != "/"

    def _inside(self, resolved: str) -> bool:
        return resolved == self._real_root or resolved.startswith(self._real_root.rstrip("/") + "/")

    def _real(self, path: str) -> str:
        """PATH's file under the root, its symbolic links resolved; OutsideRoot if they lead out of it."""
        joined = os.path.join(self._real_root, path.lstrip("/"))
        if not self._confined:
            return joined
        resolved = os.path.realpath(joined)
        if not self._inside(resolved):
            raise OutsideRoot()
        return resolved

    def _open(self, path: str, flags: int) -> int:
        """A descriptor of PATH under the root, opened read-only (this view can never create or change a file)
        and without blocking (a FIFO); what was opened checked to be in the root, so that a link swapped in
        after the check is not read."""
        fd = os.open(self._real(path), flags | os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        if self._confined:
            try:
                opened = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                opened = None  # no /proc: the check before the open stands alone
            if opened is not None and not self._inside(opened):
                os.close(fd)
                raise OutsideRoot()
        return fd

    def read(self, path: str) -> Reading:
        try:
            fd = self._open(path, 0)
        except OutsideRoot:
            return Reading(path, None, errno.EXDEV, OUTSIDE_ROOT)
        except OSError as err:
            return Reading(path, None, err.errno)
        try:
            with os.fdopen(fd, "rb") as handle:
                # a copy of another node's files may hold anything: a FIFO (which would block) or a
                # device such as /dev/zero (which would fill memory) is not a host file
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    return Reading(path, None, errno.EINVAL)
                os.set_blocking(handle.fileno(), True)
                data = _read_bounded(handle.fileno())
        except OSError as err:
            return Reading(path, None, err.errno)
        if len(data) > MAX_HOST_FILE_BYTES:
            return Reading(path, None, errno.EFBIG)
        if path.endswith(".gz"):
            try:
                data = _bounded_gunzip(data)
            except (OSError, zlib.error):
                return Reading(path, None, errno.EINVAL)
        return Reading(path, _decode(data))

    def listdir(self, path: str) -> Listing:
        try:
            fd = self._open(path, os.O_DIRECTORY)
        except OutsideRoot:
            return Listing(path, None, errno.EXDEV, OUTSIDE_ROOT)
        except OSError as err:
            return Listing(path, None, err.errno)
        try:
            return Listing(path, tuple(sorted(os.listdir(fd))))
        except OSError as err:
            return Listing(path, None, err.errno)
        finally:
            os.close(fd)


class SnapshotHost:
    """The host files a recorder captured into a trace's metadata
    (`host_files`: docs/trace-format.md): files by path, read errors as errno
    numbers, and listings of the directories the doctor walks."""

    def __init__(self, snapshot: dict, description: str = "the recorded host") -> None:
        # each part checked where it is used: one malformed entry makes only the checks resting on it unknown
        self.snapshot = snapshot
        self.description = description

    @property
    def files(self) -> dict:
        return _table(self.snapshot, "files")

    @property
    def errors(self) -> dict:
        return _table(self.snapshot, "errors")

    @property
    def dirs(self) -> dict:
        return _table(self.snapshot, "dirs")

    def _error(self, path: str) -> int:
        code = self.errors.get(path, errno.ENOENT)
        if isinstance(code, bool) or not isinstance(code, int):
            raise UnparsableFile(f"host_files.errors[{path}]", code, "an errno number")
        return code

    def read(self, path: str) -> Reading:
        if path in self.files:
            text = self.files[path]
            if not isinstance(text, str):
                raise UnparsableFile(path, text, "the trace's host_files hold no text for it")
            return Reading(path, text)
        return Reading(path, None, self._error(path))

    def listdir(self, path: str) -> Listing:
        if path in self.dirs:
            names = self.dirs[path]
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise UnparsableFile(path, names, "the trace's host_files hold no list of names for it")
            return Listing(path, tuple(sorted(names)))
        return Listing(path, None, self._error(path))


def _table(snapshot: dict, key: str) -> dict:
    table = snapshot.get(key, {}) if isinstance(snapshot, dict) else None
    if not isinstance(table, dict):
        raise UnparsableFile(f"host_files.{key}", table, "a table by path")
    return table


class RecordingHost:
    """Wraps a host and remembers every path asked for: the tests compare it
    with what the recorder's snapshot holds."""

    def __init__(self, inner: Host) -> None:
        self.inner = inner
        self.description = inner.description
        self.read_paths: list[str] = []
        self.listed_paths: list[str] = []

    def read(self, path: str) -> Reading:
        self.read_paths.append(path)
        return self.inner.read(path)

    def listdir(self, path: str) -> Listing:
        self.listed_paths.append(path)
        return self.inner.listdir(path)
