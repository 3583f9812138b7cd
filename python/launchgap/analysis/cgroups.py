"""Which cgroup each task ran in, from the trace's task_cgroup and cgroup rows (docs/trace-format.md),
so that culprit time can be told by container or pod as well as by task.

A task's cgroup, as launchgap names it (and as the monitor labels it wherever a container runtime made
the cgroup): its cgroup v2 path when that is not the root, else its path in the cgroup v1 hierarchy of
the cpu controller (hosts that keep the controllers on cgroup v1), else its v2 path ("/"). The container
id and the pod come with the path, read from it by the recorder with the monitor's own code
(recorder/src/cgroups.rs): the trace's cgroup rows carry them."""

from __future__ import annotations

import polars as pl

from launchgap.trace import Event, Trace

# run_cgroup codes that are not a row of the cgroup table: the CPU's idle task, and a task the trace
# has no task_cgroup row for (a row lost, or a task that took part in no recorded switch)
IDLE, UNKNOWN = -2, -1
ROOT = "/"

TABLE_SCHEMA = {"code": pl.Int32, "cgroup": pl.String, "container_id": pl.String, "pod": pl.String}


def recorded(trace: Trace) -> bool:
    """Whether the trace says which cgroup its tasks were in (recorded by a recorder that records them)."""
    return bool(trace.count(Event.TASK_CGROUP))


def memberships(trace: Trace) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(each task's cgroup over time: tid, since_ns, code; the table of cgroups: code, cgroup, container_id, pod).

    One membership row per task_cgroup row: the task is in cgroup CODE from since_ns until its next row
    (before its first row: since the trace began). CODE is a row of the table, or UNKNOWN where the
    cgroup rows do not name the task's cgroups."""
    names = (
        trace.of(Event.CGROUP, "ts_ns", "hierarchy", "cgroup_id", "cgroup_path", "container_id", "pod")
        # a cgroup walked at the start and made again (its id reused: never, but said once) keeps its last name
        .sort("ts_ns")
        .unique(["hierarchy", "cgroup_id"], keep="last", maintain_order=True)
    )
    tasks = trace.of(Event.TASK_CGROUP, "ts_ns", "tid", "cgroup_id", "v1_cpu_cgroup_id")

    def named(hierarchy: str, id_column: str, prefix: str) -> pl.DataFrame:
        return names.filter(pl.col("hierarchy") == hierarchy).select(
            pl.col("cgroup_id").alias(id_column),
            pl.col("cgroup_path").alias(f"{prefix}_path"),
            pl.col("container_id").alias(f"{prefix}_container"),
            pl.col("pod").alias(f"{prefix}_pod"),
        )

    both = tasks.join(named("v2", "cgroup_id", "v2"), on="cgroup_id", how="left").join(
        named("v1_cpu", "v1_cpu_cgroup_id", "v1"), on="v1_cpu_cgroup_id", how="left"
    )
    v2_named = pl.col("v2_path").is_not_null() & (pl.col("v2_path") != ROOT)
    v1_named = pl.col("v1_path").is_not_null()

    def pick(what: str) -> pl.Expr:
        return (
            pl.when(v2_named)
            .then(pl.col(f"v2_{what}"))
            .when(v1_named)
            .then(pl.col(f"v1_{what}"))
            .otherwise(pl.col(f"v2_{what}"))
            .alias(what)
        )

    chosen = both.select(
        pl.col("tid"), pl.col("ts_ns").cast(pl.Int64).alias("since_ns"), pick("path"), pick("container"), pick("pod")
    )
    table = (
        chosen.filter(pl.col("path").is_not_null())
        .select(pl.col("path").alias("cgroup"), pl.col("container").alias("container_id"), "pod")
        .unique(maintain_order=True)
        .sort("cgroup", "container_id", "pod", nulls_last=True)
        .with_row_index("code")
        .with_columns(pl.col("code").cast(pl.Int32))
    )
    coded = chosen.join(
        table,
        left_on=["path", "container", "pod"],
        right_on=["cgroup", "container_id", "pod"],
        how="left",
        nulls_equal=True,
    ).select("tid", "since_ns", pl.col("code").fill_null(UNKNOWN))
    return coded.sort("tid", "since_ns"), table.select(list(TABLE_SCHEMA)).cast(TABLE_SCHEMA)


def with_run_cgroup(runs: pl.DataFrame, members: pl.DataFrame) -> pl.DataFrame:
    """RUNS (cpu_runs: cpu, run_start, run_end, run_pid, run_tid, run_comm) with run_cgroup: the code of the
    cgroup its task was in when the slice began (IDLE for the idle task, UNKNOWN where not recorded), in
    RUNS' order."""
    if runs.is_empty():
        return runs.with_columns(pl.lit(None, pl.Int32).alias("run_cgroup"))
    indexed = runs.select(
        pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"), pl.col("run_tid").alias("tid"), pl.col("run_start")
    ).sort("run_start")
    members = members.sort("since_ns")

    def in_effect(strategy: str) -> pl.Series:
        return indexed.join_asof(
            members, left_on="run_start", right_on="since_ns", by="tid", strategy=strategy, check_sortedness=False
        )["code"]

    # the row in effect when the slice began, else (the task's first row came later) its first
    code = in_effect("backward").fill_null(in_effect("forward")).fill_null(UNKNOWN)
    code = pl.DataFrame({"row": indexed["row"], "code": code}).sort("row")["code"]
    return runs.with_columns(
        pl.when(pl.col("run_pid") == 0).then(pl.lit(IDLE, pl.Int32)).otherwise(code.cast(pl.Int32)).alias("run_cgroup")
    )


def display_name(cgroup: str | None, container_id: str | None, pod: str | None) -> str:
    """What a reader calls a cgroup: its pod and container where its path names them, else its path."""
    if pod and container_id:
        return f"pod {pod}, container {container_id[:12]}"
    if pod:
        return f"pod {pod}"
    if container_id:
        return f"container {container_id[:12]}"
    return cgroup or "-"


IDLE_GROUP = "CPU idle"
NOT_RECORDED = "cgroup not recorded"
# waiting time no recorded task ran in (the GPU time's estimate has such pieces)
NOBODY = "no task known"


def by_cgroup(
    frame: pl.DataFrame, table: pl.DataFrame, code: str, pid: str, sums: list[str], irq_name: str | None = None
) -> list[dict]:
    """FRAME's SUMS summed by (cause, cgroup CODE), largest first (by the first of SUMS), each with its
    cgroup's path, container and pod, a display name, its number of processes and whether it is the idle
    task. With IRQ_NAME, rows of cause irq (an interrupt is in no cgroup) are summed by that name instead."""
    irq = (pl.col("cause") == "irq") if irq_name else pl.lit(False)
    keyed = frame.with_columns(
        pl.when(irq).then(pl.lit(None, pl.Int32)).otherwise(pl.col(code).cast(pl.Int32)).alias("code"),
        (
            pl.when(irq).then(pl.col(irq_name)).otherwise(pl.lit(None, pl.String))
            if irq_name
            else pl.lit(None, pl.String)
        ).alias("irq"),
    )
    grouped = (
        keyed.group_by("cause", "code", "irq")
        .agg(*[pl.col(c).sum() for c in sums], pl.col(pid).filter(~irq).drop_nulls().n_unique().alias("processes"))
        .join(table, on="code", how="left")
    )
    rows = []
    for row in grouped.iter_rows(named=True):
        is_idle = row["code"] == IDLE
        if row["irq"] is not None or (irq_name and row["cause"] == "irq"):
            name = row["irq"] or "interrupts"
        elif is_idle:
            name = IDLE_GROUP
        elif row["code"] is None:
            name = NOBODY
        elif row["cgroup"] is None:
            name = NOT_RECORDED
        else:
            name = display_name(row["cgroup"], row["container_id"], row["pod"])
        rows.append(
            {
                "cause": row["cause"],
                "cgroup": row["cgroup"],
                "container_id": row["container_id"],
                "pod": row["pod"],
                "name": name,
                **{c: int(row[c]) for c in sums},
                "processes": int(row["processes"]),
                "is_idle": is_idle,
            }
        )
    # equal times in a fixed order, whatever order the groups came in
    return sorted(rows, key=lambda r: (-r[sums[0]], r["cause"], r["name"], r["cgroup"] or ""))
