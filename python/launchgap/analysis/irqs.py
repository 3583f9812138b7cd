"""Interrupt intervals, each counted once: an interrupt nested inside a
softirq on the same CPU (a hard IRQ or a system vector arriving while the
softirq ran) is subtracted from the softirq's own time."""

from __future__ import annotations

import polars as pl

from launchgap.trace import Event, Trace

IRQ_EVENTS = (Event.HARDIRQ, Event.SOFTIRQ, Event.IRQ_VECTOR)


def irq_intervals(trace: Trace) -> pl.DataFrame:
    """cpu, pid, tid (interrupted), kind, name, irq_start, irq_end, duration_ns, exclusive_ns."""
    irqs = (
        pl.concat(
            [
                trace.scan(kind).select(
                    "cpu",
                    "pid",
                    "tid",
                    pl.lit(kind.value).alias("kind"),
                    pl.col("irq_name").alias("name"),
                    pl.col("ts_ns").cast(pl.Int64).alias("irq_start"),
                    (pl.col("ts_ns") + pl.col("duration_ns")).cast(pl.Int64).alias("irq_end"),
                    pl.col("duration_ns").cast(pl.Int64),
                )
                for kind in IRQ_EVENTS
            ]
        )
        .collect()
        .with_row_index("irq_id")
    )
    soft = (
        irqs.filter(pl.col("kind") == Event.SOFTIRQ).select("irq_id", "cpu", "irq_start", "irq_end").sort("irq_start")
    )
    inner = irqs.filter(pl.col("kind") != Event.SOFTIRQ).sort("irq_start")
    if soft.is_empty() or inner.is_empty():
        return irqs.with_columns(pl.col("duration_ns").alias("exclusive_ns")).drop("irq_id")
    # the softirq (if any) that started last before each hard IRQ on its CPU, and whether it encloses it
    enclosing = inner.join_asof(
        soft.rename({"irq_id": "soft_id", "irq_start": "softirq_start", "irq_end": "softirq_end"}),
        left_on="irq_start",
        right_on="softirq_start",
        by="cpu",
        strategy="backward",
        check_sortedness=False,
    )
    nested = (
        enclosing.filter(pl.col("soft_id").is_not_null() & (pl.col("irq_end") <= pl.col("softirq_end")))
        .group_by("soft_id")
        .agg(pl.col("duration_ns").sum().alias("nested_ns"))
    )
    return (
        irqs.join(nested, left_on="irq_id", right_on="soft_id", how="left")
        .with_columns((pl.col("duration_ns") - pl.col("nested_ns").fill_null(0)).alias("exclusive_ns"))
        .drop("irq_id", "nested_ns")
    )
