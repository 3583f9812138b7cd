"""A read-only view of a host's /proc, /sys and /etc: the live host, a copy of
another node's files under a directory (`--root`), or the snapshot a recorder
stored in a trace. The checks see only this interface, so all three run the
same code. Nothing here opens a file for writing."""

from __future__ import annotations

import errno
import gzip
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


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
            fd = os.open(self._real(path), os.O_RDONLY | os.O_CLOEXEC)
        except OSError as err:
            return Reading(path, None, err.errno)
        try:
            with os.fdopen(fd, "rb") as handle:
                data = handle.read()
        except OSError as err:
            return Reading(path, None, err.errno)
        if path.endswith(".gz"):
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError):
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
        self.files: dict[str, str] = snapshot.get("files", {})
        self.errors: dict[str, int] = {k: int(v) for k, v in snapshot.get("errors", {}).items()}
        self.dirs: dict[str, list[str]] = snapshot.get("dirs", {})
        self.description = description

    def read(self, path: str) -> Reading:
        if path in self.files:
            return Reading(path, self.files[path])
        return Reading(path, None, self.errors.get(path, errno.ENOENT))

    def listdir(self, path: str) -> Listing:
        if path in self.dirs:
            return Listing(path, tuple(sorted(self.dirs[path])))
        return Listing(path, None, self.errors.get(path, errno.ENOENT))


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
