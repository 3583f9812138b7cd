"""What taking a culprit away would give back (docs/gpu-time.md, "What a fix would buy"): the launching
thread's share of the freed CPU time, against the tasks waiting for that CPU, by their weights, worked
out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from launchgap.analysis.gpu_time import NICE_WEIGHTS, Competition, with_share

ME, CULPRIT = 10, 20


def waits(*rows: tuple[int, int, int, int, int]) -> pl.DataFrame:
    """(cpu, tid, start, end, prio) -> the competition's waits, each at its prio's weight."""
    weight = {prio: NICE_WEIGHTS[prio - 100] for *_, prio in rows}
    return pl.DataFrame([(cpu, tid, start, end, weight[prio]) for cpu, tid, start, end, prio in rows],
                        schema={"cpu": pl.UInt32, "tid": pl.UInt32, "r_start": pl.Int64, "r_end": pl.Int64,
                                "weight": pl.Int64}, orient="row")


def piece(start: int, end: int, cpu: int = 1) -> pl.DataFrame:
    return pl.DataFrame({"cpu": [cpu], "tid": [ME], "culprit_tid": [CULPRIT], "p_start": [start], "p_end": [end]},
                        schema={"cpu": pl.UInt32, "tid": pl.UInt32, "culprit_tid": pl.UInt32, "p_start": pl.Int64,
                                "p_end": pl.Int64})


def share(pieces: pl.DataFrame, competition_waits: pl.DataFrame, my_prio: int = 120) -> float:
    weights = pl.DataFrame({"tid": [ME], "weight": [NICE_WEIGHTS[my_prio - 100]]},
                           schema={"tid": pl.UInt32, "weight": pl.Int64})
    return with_share(pieces, Competition(competition_waits, weights))["share"].item()


def test_alone_the_thread_gets_all_of_it():
    # its own wait and the culprit's are not competition; a task waiting on another CPU is not either
    assert share(piece(0, 1000), waits((1, ME, 0, 1000, 120), (1, CULPRIT, 1000, 2000, 120),
                                       (0, 40, 0, 1000, 120))) == 1.0


def test_overlapping_waits_all_count_by_their_weights():
    # on the piece's CPU: a nice-0 task all along; a nice-10 task half of it; two nice-0 tasks whose waits
    # overlap each other (both count while both wait)
    competition = waits((1, 30, 0, 1000, 120), (1, 31, 500, 1000, 130), (1, 32, 200, 400, 120),
                        (1, 33, 300, 600, 120), (1, ME, 0, 1000, 120))
    others = (1024 * 1000 + 110 * 500 + 1024 * 200 + 1024 * 300) / 1000 / 1024
    assert share(piece(0, 1000), competition) == pytest.approx(1 / (1 + others))


def test_a_heavier_thread_takes_more_of_it():
    # the launching thread at nice -10 (9548) against one nice-0 task (1024) all along
    assert share(piece(0, 1000), waits((1, 30, 0, 1000, 120)), my_prio=110) == pytest.approx(
        9548 / (9548 + 1024))
