"""cudasim's ground truth (docs/cudasim.md) as data frames.

The recorder's tests compare traces against these frames, and the demo prints
their summary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

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
                {"pid": p["pid"], "tid": t["tid"], "tokens": t["tokens"],
                 "launches": t["launches"], "syncs": t["syncs"]}
                for p in self.raw["processes"]
                for t in p["threads"]
            ]
        )


def load_truth(path: str | Path) -> GroundTruth:
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise TruthError(f"{path}: not readable as cudasim ground truth ({err})") from err
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA_ID:
        raise TruthError(f"{path}: expected schema {SCHEMA_ID!r}")
    launches = pl.DataFrame(raw["launches"], schema=raw["launch_columns"], orient="row")
    syncs = pl.DataFrame(raw["syncs"], schema=raw["sync_columns"], orient="row")
    return GroundTruth(raw, launches, syncs)
