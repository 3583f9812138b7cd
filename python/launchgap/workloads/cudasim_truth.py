"""cudasim's ground truth (docs/cudasim.md) as data frames.

The recorder's tests compare traces against these frames, and the demo prints
their summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from launchgap.inputs import MAX_TEXT_INPUT_BYTES, InputError, JsonError, read_json

SCHEMA_ID = "cudasim-truth/1"


class TruthError(ValueError):
    """The file is not cudasim ground truth this version understands."""


@dataclass(frozen=True)
class GroundTruth:
    raw: dict
    launches: pl.DataFrame
    syncs: pl.DataFrame

    @property
    def threads(self) -> pl.DataFrame:
        return pl.DataFrame(
            [
                {
                    "pid": p["pid"],
                    "tid": t["tid"],
                    "tokens": t["tokens"],
                    "launches": t["launches"],
                    "syncs": t["syncs"],
                }
                for p in self.raw["processes"]
                for t in p["threads"]
            ]
        )


# what the summary and the tests read; a file without them is not usable truth
REQUIRED = {
    "config": ("binary", "api", "launch", "sync", "procs", "threads", "seed"),
    "totals": ("launches", "kernels", "syncs", "sync_wait_ns"),
}
REQUIRED_TOP = ("tokens", "wall_s", "tokens_per_s", "processes", "launches", "launch_columns", "syncs", "sync_columns")


def load_truth(path: str | Path) -> GroundTruth:
    if Path(path).is_dir():
        raise TruthError(f"{path}: not cudasim ground truth (a directory, not a JSON file: a trace?)")
    try:
        raw = read_json(path, MAX_TEXT_INPUT_BYTES)
    except JsonError as err:  # not UTF-8 text, or not JSON (a trace, say), or nested past any truth file
        raise TruthError(f"{path}: not cudasim ground truth (not a JSON file: {err.problem})") from None
    except InputError as err:
        raise TruthError(str(err)) from None
    except OSError as err:
        raise TruthError(f"{path}: cannot read ({err.strerror or err})") from None
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA_ID:
        raise TruthError(f"{path}: expected schema {SCHEMA_ID!r}")
    missing = [k for k in REQUIRED_TOP if k not in raw]
    missing += [
        f"{group}.{k}"
        for group, keys in REQUIRED.items()
        for k in keys
        if not isinstance(raw.get(group), dict) or k not in raw[group]
    ]
    if missing:
        raise TruthError(f"{path}: cudasim ground truth without {', '.join(missing[:5])}")
    try:
        launches = pl.DataFrame(raw["launches"], schema=raw["launch_columns"], orient="row")
        syncs = pl.DataFrame(raw["syncs"], schema=raw["sync_columns"], orient="row")
    except (TypeError, ValueError, pl.exceptions.PolarsError) as err:
        raise TruthError(f"{path}: damaged cudasim ground truth ({' '.join(str(err).split())[:200]})") from None
    return GroundTruth(raw, launches, syncs)
