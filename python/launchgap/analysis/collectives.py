"""Collective kernels (NCCL's all-reduce, all-gather, send/recv, ...): which of a trace's GPU kernels are
collectives, and, across the ranks of one recording, how long each rank's collective kernel waited for
the last rank before it could transfer anything (docs/gpu-time.md, "Collectives").

A collective's kernel starts on each rank's GPU when that rank launched it and its stream was free, and
spins until every rank's kernel of the same collective has started: from its start to the last rank's
start it waits (busy, on the GPU), after that it transfers. The trace holds no communicator and no
sequence number of a collective yet (NCCL's own entry points are not probed), so a collective is matched
across ranks by its place in each rank's order: the k-th collective kernel of one rank with the k-th of
every other. That holds for a job with one communicator, or several whose collectives every rank issues
in the same order on one stream; it is refused (`not_matched`) where it cannot hold: a rank with
collectives on several streams (process groups of their own, whose kernels interleave differently on
each rank), or ranks whose counts or kernels differ.

Plain functions over polars frames, vectorised: a rank is one process's device (pid, device_id)."""

from __future__ import annotations

import polars as pl

from launchgap.trace import Event, Trace

# NCCL's kernels as its builds have named them, as CUPTI gives them (mangled: `_Z21ncclDevKernel_Generic24...`)
# and as Kineto and Nsight show them (demangled, `ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)`):
# `ncclDevKernel_*` since 2.19 (mostly `ncclDevKernel_Generic`, `_Generic_1`/`_2`/`_4`, which name no
# operation, and specialised ones such as `ncclDevKernel_AllReduce_Sum_bf16_RING_LL`), `ncclKernel_*` from 2.8
# (`ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t`, shared/real-traces/kineto/cuda_graphs.json.gz), and the
# operation first before that (`ncclAllReduceRingLLKernel_sum_f32`). trace/kineto.py counts a profiler file's
# NCCL kernels by the demangled forms alone (NCCL_KERNEL there), which are all a Kineto file holds.
NCCL_KERNEL = r"^(void )?(_Z\d+)?nccl\w*Kernel"

# what `not_matched` says: why the collectives were not matched across ranks
ONE_RANK = "one_rank"  # a single rank's kernels in the trace: nothing to match with
SEVERAL_STREAMS = "several_streams"  # a rank's collectives lie on more than one stream
COUNTS_DIFFER = "counts_differ"  # the ranks launched different numbers of collective kernels
KERNELS_DIFFER = "kernels_differ"  # the k-th kernels of two ranks are different kernels

# how they were matched where they were: each rank's k-th collective kernel with every other's
MATCHED_BY_ORDER = "order_on_stream"

RANK = ["pid", "device_id"]


def pattern_error(pattern: str) -> str | None:
    """Why PATTERN is not a regular expression the kernels' names can be matched with (the regex engine's
    own words: polars', the one the names are matched by), or None where it is one."""
    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
    except pl.exceptions.ComputeError as err:
        lines = [line.strip() for line in str(err).splitlines() if line.strip().startswith("error:")]
        return lines[-1].removeprefix("error:").strip() if lines else str(err).splitlines()[0]
    return None


def is_collective(name: pl.Expr, pattern: str | None = None) -> pl.Expr:
    """Whether the kernel named NAME is a collective: NCCL's, or one whose name PATTERN finds (a library
    other than NCCL; checked with pattern_error first)."""
    found = name.str.contains(NCCL_KERNEL)
    if pattern is not None:
        found = found | name.str.contains(pattern)
    return found.fill_null(False)


def function_name(name: pl.Expr) -> pl.Expr:
    """A kernel's function name, without its parameters: a mangled name's (`_Z<length><name>...`) the
    LENGTH characters after the length; a demangled one's identifier before its parameter list (NCCL's are
    plain identifiers). Any other name (a template's, a namespace's, whose parentheses a regular expression
    cannot pair) is kept whole, `void ` left out."""
    length = name.str.extract(r"^_Z(\d+)", 1).cast(pl.Int64)
    mangled = name.str.extract(r"^_Z\d+(.*)$", 1).str.slice(0, length)
    whole = name.str.replace(r"^void ", "")
    plain = whole.str.extract(r"^([A-Za-z_][A-Za-z0-9_]*)\(", 1)
    return pl.when(length.is_not_null()).then(mangled).otherwise(pl.coalesce(plain, whole))


def collective_kernels(trace: Trace, pids: set[int], pattern: str | None = None) -> pl.DataFrame:
    """Every collective kernel of PIDS' processes: pid, device_id, stream_id, kernel_name, name (its
    function's), start_ns, end_ns; each rank's in the order they started."""
    if not pids or not trace.count(Event.GPU_KERNEL):
        return pl.DataFrame(
            schema={
                "pid": pl.UInt32,
                "device_id": pl.UInt32,
                "stream_id": pl.UInt32,
                "kernel_name": pl.String,
                "name": pl.String,
                "start_ns": pl.Int64,
                "end_ns": pl.Int64,
            }
        )
    return (
        trace.scan(Event.GPU_KERNEL)
        .filter(pl.col("pid").is_in(list(pids)) & is_collective(pl.col("kernel_name"), pattern))
        .select(
            "pid",
            "device_id",
            "stream_id",
            "kernel_name",
            function_name(pl.col("kernel_name")).alias("name"),
            pl.col("ts_ns").cast(pl.Int64).alias("start_ns"),
            pl.col("end_ns").cast(pl.Int64).alias("end_ns"),
        )
        .sort([*RANK, "start_ns", "end_ns"])
        .collect()
    )


def unmatchable(kernels: pl.DataFrame) -> str | None:
    """Why KERNELS (collective_kernels) cannot be matched across ranks by their order (a reason above), or
    None where they can."""
    ranks = kernels.group_by(RANK).agg(pl.len().alias("kernels"), pl.col("stream_id").n_unique().alias("streams"))
    if ranks.height < 2:
        return ONE_RANK
    if ranks["streams"].max() > 1:
        return SEVERAL_STREAMS
    if ranks["kernels"].n_unique() > 1:
        return COUNTS_DIFFER
    names = numbered(kernels).group_by("k").agg(pl.col("kernel_name").n_unique().alias("names"))
    if names["names"].max() > 1:
        return KERNELS_DIFFER
    return None


def numbered(kernels: pl.DataFrame) -> pl.DataFrame:
    """KERNELS with `k`: each kernel's place among its rank's collective kernels, from 0, in start order."""
    return kernels.sort([*RANK, "start_ns", "end_ns"]).with_columns(pl.int_range(pl.len()).over(RANK).alias("k"))


def split_waits(kernels: pl.DataFrame) -> pl.DataFrame:
    """KERNELS (collective_kernels, matchable: unmatchable is None), numbered (`k`: the collective), each with
    `last_start_ns` (the last rank's start of that collective), `wait_ns` (its start to that: spinning for the
    last rank, at most the kernel's length), `transfer_ns` (the rest of the kernel) and `is_last` (it was the
    last rank to start; ranks starting at the same nanosecond are all last)."""
    duration = pl.col("end_ns") - pl.col("start_ns")
    return (
        numbered(kernels)
        .with_columns(pl.col("start_ns").max().over("k").alias("last_start_ns"))
        .with_columns(
            (pl.col("last_start_ns") - pl.col("start_ns")).clip(0, duration.clip(0)).alias("wait_ns"),
            (pl.col("start_ns") == pl.col("last_start_ns")).alias("is_last"),
        )
        .with_columns((duration.clip(0) - pl.col("wait_ns")).alias("transfer_ns"))
    )


def per_rank(kernels: pl.DataFrame, waits: pl.DataFrame | None) -> pl.DataFrame:
    """One row a rank: pid, device_id, kernels, gpu_ns (their time on the GPU), and where WAITS (split_waits)
    is given wait_ns, transfer_ns, last_arrivals (the collectives it was the last to start), longest_wait_ns;
    null where not. Ranks in (pid, device_id) order."""
    counted = kernels.group_by(RANK).agg(
        pl.len().alias("kernels"), (pl.col("end_ns") - pl.col("start_ns")).sum().alias("gpu_ns")
    )
    if waits is None:
        split = counted.select(
            *RANK,
            *[pl.lit(None, pl.Int64).alias(c) for c in ("wait_ns", "transfer_ns", "last_arrivals", "longest_wait_ns")],
        )
    else:
        split = waits.group_by(RANK).agg(
            pl.col("wait_ns").sum(),
            pl.col("transfer_ns").sum(),
            pl.col("is_last").sum().cast(pl.Int64).alias("last_arrivals"),
            pl.col("wait_ns").max().alias("longest_wait_ns"),
        )
    return counted.join(split, on=RANK, how="left").sort(RANK)


def names_per_rank(kernels: pl.DataFrame) -> pl.DataFrame:
    """pid, device_id, name, kernels, gpu_ns: each rank's collective kernels by function name, the most GPU
    time first (then by name)."""
    return (
        kernels.group_by(*RANK, "name")
        .agg(pl.len().alias("kernels"), (pl.col("end_ns") - pl.col("start_ns")).sum().alias("gpu_ns"))
        .sort([*RANK, "gpu_ns", "name"], descending=[False, False, True, False])
    )
