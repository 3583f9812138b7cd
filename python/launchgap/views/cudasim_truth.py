"""`launchgap cudasim-truth`: what cudasim's stand-in driver logged of a run (workloads/cudasim_truth.py):
its configuration, totals, calls by API and each launching thread."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from launchgap.console import literal
from launchgap.workloads.cudasim_truth import GroundTruth


def render_truth(truth: GroundTruth, console: Console) -> None:
    raw = truth.raw
    cfg = raw["config"]
    console.print(
        "[bold]cudasim ground truth[/bold]: "
        + literal(
            f"{cfg['binary']} decode, api={cfg['api']}, launch={cfg['launch']}, sync={cfg['sync']}, "
            f"{cfg['procs']} process(es) x {cfg['threads']} thread(s), seed {cfg['seed']}"
        )
    )
    console.print(
        f"{raw['tokens']} tokens in {raw['wall_s']:.3f} s = {raw['tokens_per_s']:.1f} tok/s; "
        f"{raw['totals']['launches']} launches ({raw['totals']['kernels']} kernels), "
        f"{raw['totals']['syncs']} syncs blocking {raw['totals']['sync_wait_ns'] / 1e6:.1f} ms"
    )
    table = Table(title="calls by API, as the stand-in driver logged them")
    for column in ("driver API", "runtime API", "calls"):
        table.add_column(column, justify="right" if column == "calls" else "left")
    for frame in (truth.launches, truth.syncs):
        counts = frame.group_by(["api", "runtime_api"]).len().sort("len", descending=True)
        for api, runtime_api, n in counts.iter_rows():
            table.add_row(literal(api), literal(runtime_api or "-"), str(n))
    console.print(table)
    threads = Table(title="per launching thread")
    for column in ("pid", "tid", "tokens", "launches", "syncs"):
        threads.add_column(column, justify="right")
    for row in truth.threads.iter_rows():
        threads.add_row(*(literal(v) for v in row))
    console.print(threads)
