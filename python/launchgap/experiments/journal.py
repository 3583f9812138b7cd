"""The journals of experiments' host changes, registered where only root can write.

Each experiment registers one journal when it starts: a file (0600) in
/run/launchgap/journals (0700, run_dir.py; under LAUNCHGAP_LEVER_ROOT in
tests) naming its owner (pid, start time, boot), its custodian and its
results directory, with every host change listed before it is made
(mitigations.HostChanges). It removes the file when it ends having put
everything back. A file left there belongs to an experiment that died where
no handler runs (SIGKILL): its custodian undoes the changes and marks it
"killed"; the next experiment reports it once (and undoes them itself if the
custodian died too) and removes it.

Recovery reads these files alone, never a journal found in a results
directory, which any user may have written; and even from them undoes only
what a lever may change (levers.LeverFiles): anything else listed is refused
and reported, never acted on.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from launchgap import procfs
from launchgap.experiments.levers import LeverHost
from launchgap.experiments.run_dir import (
    RUN_DIR,
    RunDirDenied,
    RunDirError,
    open_private_file,
    private_directory,
    run_dir,
)

REGISTRY = f"{RUN_DIR}/journals"
SCHEMA = "launchgap-journal/1"
# thousands of IRQs at ~90 bytes an entry fit many times over
MAX_JOURNAL_BYTES = 16 << 20


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "?"


def start_ticks(pid: int) -> int | None:
    """A process's start time (clock ticks after boot): tells it from a later one reusing its pid."""
    try:
        return int(procfs.read_stat(f"/proc/{pid}/stat")[1][19])
    except (OSError, IndexError, ValueError):
        return None


def owner(pid: int | None = None) -> dict:
    """Who a process is (this one by default), so that a later one can tell whether it still runs."""
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "start_ticks": start_ticks(pid), "boot_id": _boot_id()}


def owner_alive(record: object) -> bool:
    if not isinstance(record, dict) or record.get("boot_id") != _boot_id():
        return False
    pid = record.get("pid")
    return isinstance(pid, int) and start_ticks(pid) is not None and start_ticks(pid) == record.get("start_ticks")


def parse_json(text: str | bytes) -> object:
    """JSON, or ValueError: also for one nested too deep for the parser (a RecursionError otherwise)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


@dataclass
class Journal:
    """One registered journal: its file, and what it holds."""

    path: Path
    record: dict

    @property
    def results(self) -> Path | None:
        results = self.record.get("results")
        return Path(results) if isinstance(results, str) and results and "\0" not in results else None

    @property
    def changes(self) -> object:
        return self.record.get("changes", [])

    def save_changes(self, entries: list[dict]) -> None:
        self.record["changes"] = entries
        self.save()

    def save(self) -> None:
        """Rewritten whole, renamed into place: a journal is never half-written."""
        partial = self.path.with_name(f".{self.path.name}.partial")
        partial.unlink(missing_ok=True)
        with os.fdopen(open_private_file(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "w") as out:
            out.write(json.dumps(self.record, indent=1))
        os.replace(partial, self.path)

    def unregister(self) -> None:
        self.path.unlink(missing_ok=True)


def registry(host: LeverHost, create: bool = True) -> Path | None:
    """HOST's registry of journals, made or checked (RunDirError); None if it is not there (and CREATE is
    False)."""
    parent = run_dir(host, create)
    if parent is None:
        return None
    path = host.path(REGISTRY)
    return path if private_directory(path, create) else None


def register(host: LeverHost, results: Path, who: dict) -> Journal:
    """A new journal for the experiment WHO (owner()) writing its results in RESULTS. Raises RunDirError
    when the registry cannot be made or must not be used."""
    directory = registry(host)
    path = directory / f"{who.get('pid')}-{uuid.uuid4().hex[:12]}.json"
    journal = Journal(
        path, {"schema": SCHEMA, "status": "running", "owner": who, "results": os.path.abspath(results), "changes": []}
    )
    try:
        fd = open_private_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except OSError as err:
        raise RunDirError(f"{path}: cannot make it ({err.strerror or err})") from None
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps(journal.record, indent=1))
    return journal


def read(path: Path) -> Journal:
    """The registered journal at PATH. Raises FileNotFoundError when it is gone, RunDirError when it is not
    one launchgap wrote (not a regular file of root's, too big, not a journal)."""
    with os.fdopen(open_private_file(path, os.O_RDONLY, tighten=False), "rb") as source:
        data = source.read(MAX_JOURNAL_BYTES + 1)
    if len(data) > MAX_JOURNAL_BYTES:
        raise RunDirError(f"{path}: over {MAX_JOURNAL_BYTES >> 20} MiB; not a journal launchgap wrote")
    try:
        record = parse_json(data)
    except ValueError as err:
        raise RunDirError(f"{path}: not a journal launchgap wrote ({str(err)[:80]})") from None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise RunDirError(f"{path}: not a journal launchgap wrote (no {SCHEMA} record)")
    return Journal(path, record)


def registered(host: LeverHost) -> tuple[list[Journal], list[str]]:
    """Every journal in HOST's registry, and one line for each file there that is not one (left alone).
    Nothing when the registry is not there or this user may not read it (not root: it could undo nothing)."""
    try:
        directory = registry(host, create=False)
        names = sorted(os.listdir(directory)) if directory is not None else []
    except (PermissionError, RunDirDenied):
        return [], []
    except (RunDirError, OSError) as err:
        return [], [f"journals of host changes not read: {err}"]
    journals, problems = [], []
    for name in names:
        if name.startswith("."):
            continue  # a journal being rewritten (or one whose rewrite was cut short)
        try:
            journals.append(read(directory / name))
        except FileNotFoundError:
            continue  # its experiment ended meanwhile
        except RunDirError as err:
            problems.append(f"{err}; left alone")
        except OSError as err:
            problems.append(f"{directory / name}: cannot read it ({err.strerror or err}); left alone")
    return journals, problems
