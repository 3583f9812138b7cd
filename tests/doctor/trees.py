"""Fixture trees for the doctor's tests: a copy of a committed tree
(fixtures/make_fixtures.py says how each was made) with values edited."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from launchgap.doctor.host import DirectoryHost, Host, Listing, Reading

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def make_tree(tmp_path: Path, name: str, edits: dict[str, str | None] | None = None) -> Path:
    """Copy fixture NAME under TMP_PATH, recreate its empty directories, then
    apply EDITS: path -> new text, or None to delete the file or directory."""
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    for line in (root / "EMPTY_DIRS").read_text().split():
        (root / line).mkdir(parents=True, exist_ok=True)
    for path, text in (edits or {}).items():
        target = root / path.lstrip("/")
        if text is None:
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    return root


class RefusingHost:
    """A host whose given paths fail with an errno (EACCES, EPERM): what a
    locked-down kernel or an unprivileged user sees, which a directory of
    files cannot express."""

    def __init__(self, inner: Host, refused: dict[str, int]) -> None:
        self.inner = inner
        self.refused = refused
        self.description = inner.description

    def read(self, path: str) -> Reading:
        if path in self.refused:
            return Reading(path, None, self.refused[path])
        return self.inner.read(path)

    def listdir(self, path: str) -> Listing:
        if path in self.refused:
            return Listing(path, None, self.refused[path])
        return self.inner.listdir(path)


def snapshot_of(root: Path) -> dict:
    """A tree as the recorder's host_files would hold it: every file, every listing."""
    files, dirs = {}, {}
    for current, subdirs, names in os.walk(root):
        rel = "/" + str(Path(current).relative_to(root)).lstrip(".")
        rel = "/" if rel == "/" else rel.rstrip("/")
        if rel == "/":
            continue
        dirs[rel] = sorted(subdirs + names)
        for name in names:
            data = (Path(current) / name).read_bytes()
            if name.endswith(".gz"):
                import gzip

                data = gzip.decompress(data)
            files[f"{rel}/{name}"] = data.decode()
    return {"files": files, "errors": {}, "dirs": dirs}


EACCES, EPERM = errno.EACCES, errno.EPERM
__all__ = ["DirectoryHost", "EACCES", "EPERM", "FIXTURES", "RefusingHost", "make_tree", "snapshot_of"]
