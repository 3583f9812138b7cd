"""Launch-gap classes, and the rule that gives a gap its class: every gap
between consecutive launches of a thread is classified by what took the most
time inside it, using the thread's own states (so a sync is never mistaken
for preemption).

A thread cannot launch while it is off the CPU, so every off-CPU stretch,
interrupt and sync falls inside exactly one gap. gap_stream.py places each
into its gap (a binary search over the thread's launch times) and gives the
gaps that hold something their class here (`classify`); the rest are clean
by construction. The in-memory reference it is tested against
(tests/analysis/reference_gaps.py) uses the same rule.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from launchgap.trace.schema import GAP_CLASSES, GapClassName, ThreadState

# the classes (schema/trace.toml), each numbered by its position: clean, then the causes in the order that
# breaks ties (offcpu: left the CPU for a reason the data does not give, imported traces only)
CLASSES = GAP_CLASSES
CLEAN = CLASSES.index(GapClassName.CLEAN)
CAUSES = CLASSES[CLEAN + 1 :]
# the classes of a gap that ends a burst whatever its length
SYNC_OR_BLOCK = (CLASSES.index(GapClassName.SYNC), CLASSES.index(GapClassName.BLOCKED))
# the time each cause took inside a gap, classify's columns
CAUSE_NS = {
    GapClassName.PREEMPTED: "preempted_ns",
    GapClassName.RUNQUEUE: "runqueue_ns",
    GapClassName.IRQ: "irq_ns",
    GapClassName.SYNC: "sync_ns",
    GapClassName.BLOCKED: "blocked_ns",
    GapClassName.OFFCPU: "offcpu_ns",
}
# the label of an interrupt's time placed in a gap, beside the off-CPU segments' states
IRQ = GapClassName.IRQ
# the label of a sync made in a gap: it turns the gap's voluntary block into the sync's
SYNC_CALL = "sync_call"
# A gap this many times the median clean gap ends a burst even without a sync.
BURST_BREAK_FACTOR = 20
# the report's Bursts.break_rule
BREAK_RULE = f"a gap holding a sync or block, or longer than {BURST_BREAK_FACTOR}x the median clean gap"


def classify(placed: list[pl.DataFrame]) -> pl.DataFrame:
    """The gaps that hold something, each with its class: PLACED are frames of gap_id, state (an off-CPU
    segment's state, IRQ, or SYNC_CALL for a sync made in the gap) and ns. Returns gap_id, the time of
    each cause in it (preempted_ns, runqueue_ns, irq_ns, sync_ns, blocked_ns, offcpu_ns), syncs, and
    class_index (into CLASSES): the cause with the most time, clean when none took any."""
    if not placed:
        return pl.DataFrame(schema={"gap_id": pl.Int64, "class_index": pl.Int8})
    rows = pl.concat([p.with_columns(pl.col("gap_id").cast(pl.Int64), pl.col("ns").cast(pl.Int64)) for p in placed])

    def time_in(state: str) -> pl.Expr:
        return pl.col("ns").filter(pl.col("state") == state).sum()

    wide = rows.group_by("gap_id").agg(
        time_in(ThreadState.PREEMPTED).alias("preempted_ns"),
        time_in(ThreadState.RUNQUEUE).alias("runqueue_ns"),
        time_in(ThreadState.BLOCKED).alias("blocked_ns"),
        time_in(IRQ).alias("irq_ns"),
        time_in(ThreadState.OFFCPU).alias("offcpu_ns"),
        (pl.col("state") == SYNC_CALL).sum().alias("syncs"),
    )
    # the voluntary block of a gap that holds a sync is the sync's
    wide = wide.with_columns(
        pl.when(pl.col("syncs") > 0).then(pl.col("blocked_ns")).otherwise(0).alias("sync_ns"),
        pl.when(pl.col("syncs") > 0).then(0).otherwise(pl.col("blocked_ns")).alias("blocked_ns"),
    )
    # each cause's column, in CAUSES' order: the first of equal largest times wins
    cause_ns = [CAUSE_NS[cause] for cause in CAUSES]
    largest = pl.max_horizontal(*cause_ns)
    index = pl.when(largest <= 0).then(CLEAN)
    for cause, column in zip(CAUSES, cause_ns):
        index = index.when(pl.col(column) == largest).then(CLASSES.index(cause))
    return wide.with_columns(index.otherwise(CLEAN).cast(pl.Int8).alias("class_index"))


def interference_ns(classified: pl.DataFrame) -> int:
    """Preemption, run-queue and IRQ time inside the gaps CLASSIFIED (classify's): what delayed launches
    directly."""
    if classified.is_empty():
        return 0
    return int(classified.select(pl.sum_horizontal("preempted_ns", "runqueue_ns", "irq_ns").sum()).item())


def nearest_quantile(values: np.ndarray, q: float) -> float:
    """The "nearest" quantile (numpy's rule: rank q*(n-1), halves to even). By sorting: selection
    (np.partition) degrades badly on the heavily repeated values launch gaps have."""
    rank = int(np.around(q * (values.size - 1)))
    return float(np.sort(values)[rank])
