"""Finding the standalone binaries that `launchgap record` and `launchgap
monitor` run: the recorder and the monitor, built side by side."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from launchgap.trace.schema import RECORDER_BINARY, RECORDER_THREADS, TASK_COMM_LEN

BINARY = RECORDER_BINARY
# The recorder's threads as a trace names them (a task's name holds TASK_COMM_LEN - 1 bytes): its main
# thread, named after the binary, whose name its unnamed threads inherit, and each thread it names itself
# (schema/trace.toml's [recorder]). Never the workload, but they may be culprits.
RECORDER_COMMS = tuple(name[: TASK_COMM_LEN - 1] for name in (BINARY, *RECORDER_THREADS))
ENV_OVERRIDE = "LAUNCHGAP_RECORDER"
MONITOR_BINARY = "launchgap-monitor"
MONITOR_ENV_OVERRIDE = "LAUNCHGAP_MONITOR"
# where the wheel `make dist` builds carries both binaries (scripts/dist.sh);
# absent in a checkout, so a developer's edits run from _BUILD_DIR
_BUNDLED_DIR = Path(__file__).resolve().parent / "bin"
_BUILD_DIR = Path(__file__).resolve().parents[2] / "recorder" / "target" / "release"


def _find(binary: str, env_override: str) -> Path | None:
    """$ENV_OVERRIDE, then the installed wheel's own, then this checkout's build, then PATH."""
    override = os.environ.get(env_override)
    if override:
        return Path(override)
    for directory in (_BUNDLED_DIR, _BUILD_DIR):
        candidate = directory / binary
        if candidate.exists():
            return candidate
    found = shutil.which(binary)
    return Path(found) if found else None


def find_recorder() -> Path | None:
    """$LAUNCHGAP_RECORDER, then the installed wheel's, then this checkout's build, then PATH."""
    return _find(BINARY, ENV_OVERRIDE)


def find_monitor() -> Path | None:
    """$LAUNCHGAP_MONITOR, then the installed wheel's, then this checkout's build, then PATH."""
    return _find(MONITOR_BINARY, MONITOR_ENV_OVERRIDE)
