"""Overlaps between interval lists, without a quadratic join.

`runs` are disjoint per key (a CPU runs one task at a time; a thread is in
one state at a time) and sorted, so the runs overlapping a query interval
form one contiguous index range: two as-of joins find its ends, and only
the overlapping pairs are ever materialised. Cost: n log n plus the number
of overlaps.

Each side's bounds are named by the caller (an interval table's `bounds`,
analysis/interval_tables.py), so a frame goes in with its own columns.
"""

from __future__ import annotations

import polars as pl


def overlaps(
    queries: pl.DataFrame, runs: pl.DataFrame, key: str, query: tuple[str, str], run: tuple[str, str]
) -> pl.DataFrame:
    """Pairs (query row, run row) that overlap, with `overlap_ns`.

    queries: key, QUERY's start and end columns, any other columns (kept).
    runs:    key, RUN's start and end columns, any other columns (kept); disjoint per key.
    The two sides' columns other than KEY are to be apart (the bounds above all: both are kept).
    """
    q_start, q_end = query
    r_start, r_end = run
    if len({q_start, q_end, r_start, r_end}) < 4:
        raise ValueError(f"overlaps: the queries' bounds {query} and the runs' {run} share a name")
    if queries.is_empty() or runs.is_empty():
        return queries.head(0).join(runs.head(0), on=key).with_columns(pl.lit(0, pl.Int64).alias("overlap_ns"))
    runs = runs.sort(key, r_start).with_row_index("run_index")
    # as-of joins want the `on` column sorted as a whole; `by` does the grouping
    firsts = runs.select(key, r_start, "run_index").sort(r_start)
    queries = queries.with_row_index("query_index").sort(q_start)
    # first run that could overlap: the last one starting at or before the query's start,
    # or failing that the first one starting after it
    lo = queries.join_asof(
        firsts.rename({"run_index": "lo"}),
        left_on=q_start,
        right_on=r_start,
        by=key,
        strategy="backward",
        check_sortedness=False,
    ).drop(r_start)
    lo_fwd = queries.join_asof(
        firsts.rename({"run_index": "lo_fwd"}),
        left_on=q_start,
        right_on=r_start,
        by=key,
        strategy="forward",
        check_sortedness=False,
    ).select("query_index", "lo_fwd")
    # last run that could overlap: the last one starting before the query's end
    hi = (
        queries.sort(q_end)
        .join_asof(
            firsts.rename({"run_index": "hi"}).with_columns(pl.col(r_start) + 1),
            left_on=q_end,
            right_on=r_start,
            by=key,
            strategy="backward",
            check_sortedness=False,
        )
        .select("query_index", "hi")
    )
    ranged = (
        lo.join(lo_fwd, on="query_index")
        .join(hi, on="query_index")
        .with_columns(pl.coalesce("lo", "lo_fwd").alias("lo"))
        .drop("lo_fwd")
        .filter(pl.col("lo").is_not_null() & pl.col("hi").is_not_null() & (pl.col("hi") >= pl.col("lo")))
    )
    pairs = (
        ranged.with_columns(pl.int_ranges("lo", pl.col("hi") + 1).alias("run_index"))
        .explode("run_index")
        .drop("lo", "hi")
        .join(runs.drop(key), on="run_index")
    )
    return (
        pairs.with_columns((pl.min_horizontal(q_end, r_end) - pl.max_horizontal(q_start, r_start)).alias("overlap_ns"))
        .filter(pl.col("overlap_ns") > 0)
        .drop("run_index")
    )
