"""Finding the standalone recorder binary that `launchgap record` runs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

BINARY = "launchgap-record"
ENV_OVERRIDE = "LAUNCHGAP_RECORDER"
_BUILD_OUTPUT = Path(__file__).resolve().parents[2] / "recorder" / "target" / "release" / BINARY


def find_recorder() -> Path | None:
    """$LAUNCHGAP_RECORDER, then this checkout's build, then PATH."""
    override = os.environ.get(ENV_OVERRIDE)
    if override:
        return Path(override)
    if _BUILD_OUTPUT.exists():
        return _BUILD_OUTPUT
    found = shutil.which(BINARY)
    return Path(found) if found else None
