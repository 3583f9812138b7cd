"""Finding the standalone binaries that `launchgap record` and `launchgap
monitor` run: the recorder and the monitor, built side by side."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

BINARY = "launchgap-record"
ENV_OVERRIDE = "LAUNCHGAP_RECORDER"
MONITOR_BINARY = "launchgap-monitor"
MONITOR_ENV_OVERRIDE = "LAUNCHGAP_MONITOR"
_BUILD_DIR = Path(__file__).resolve().parents[2] / "recorder" / "target" / "release"


def _find(binary: str, env_override: str) -> Path | None:
    """$ENV_OVERRIDE, then this checkout's build, then PATH."""
    override = os.environ.get(env_override)
    if override:
        return Path(override)
    built = _BUILD_DIR / binary
    if built.exists():
        return built
    found = shutil.which(binary)
    return Path(found) if found else None


def find_recorder() -> Path | None:
    """$LAUNCHGAP_RECORDER, then this checkout's build, then PATH."""
    return _find(BINARY, ENV_OVERRIDE)


def find_monitor() -> Path | None:
    """$LAUNCHGAP_MONITOR, then this checkout's build, then PATH."""
    return _find(MONITOR_BINARY, MONITOR_ENV_OVERRIDE)
