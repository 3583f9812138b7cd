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
    """One file as read: its text, or why it could not be read (an errno)."""

    path: str
    text: str | None
    error: int | None = None

    @property
    def ok(self) -> bool:
        return self.text is not None

    @property
    def value(self) -> str | None:
        return None if self.text is None else self.text.strip()

    @property
    def why(self) -> str:
        """The reason a read failed, as the errno's name (ENOENT, EACCES, ...)."""
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

    @property
    def ok(self) -> bool:
        return self.names is not None

    @property
    def why(self) -> str:
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


class DirectoryHost:
    """Files under ROOT ("/" for the live host). A path ending in .gz is
    decompressed (the kernel's /proc/config.gz)."""

    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)
        self.description = "this host" if str(root) == "/" else f"the files under {root}"

    def _real(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def read(self, path: str) -> Reading:
        try:
            # os.open with O_RDONLY alone: this view can never create or change a file
            fd = os.open(self._real(path), os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
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
            return Listing(path, tuple(sorted(os.listdir(self._real(path)))))
        except OSError as err:
            return Listing(path, None, err.errno)


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
