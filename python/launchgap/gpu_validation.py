"""The checks behind scripts/gpu-validate.sh: counts against a trace, tokens/s
against tokens/s, a culprit against the process that was started to be one.

It runs on the GPU machine, whose Python has PyTorch, pyarrow, click and rich
but may lack polars (the device image does not ship it), so this module reads
traces with pyarrow alone and imports nothing from launchgap that needs
polars. Its verbs are run by the script:

    python3 -m launchgap.gpu_validation compare TRACE COUNTS [--api-names] [--json-out FILE]
    python3 -m launchgap.gpu_validation decode --untraced A.json... --traced B.json... --trace T.lg... [--report R.json...]
    python3 -m launchgap.gpu_validation culprit REPORT COUNTS --hog-pid PID --thread 0 [--baseline REPORT]
    python3 -m launchgap.gpu_validation gpu-activity TRACE [--counts COUNTS] [--json-out FILE]
    python3 -m launchgap.gpu_validation merge OUT KEY=FILE...
    python3 -m launchgap.gpu_validation environment --json-out FILE [--set KEY=VALUE...]
    python3 -m launchgap.gpu_validation set-part SUMMARY PART STATUS [--detail FILE] [--note TEXT]
    python3 -m launchgap.gpu_validation show SUMMARY
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

import click
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from launchgap.trace.schema import META_FILE, SEGMENT_SUFFIX, STREAM_VARIANT_SUFFIXES, Event, MetaKey

COUNTS_SCHEMA = "launchgap-gpu-launch-counts/1"
SUMMARY_SCHEMA = "launchgap-gpu-validation/1"
NO_RUNTIME_API = "(none)"  # a launch row whose runtime entry point was not named
# the per-thread-stream variants (schema/trace.toml) are the same API path, reached with a different default stream
STREAM_VARIANT_PATTERN = "(" + "|".join(STREAM_VARIANT_SUFFIXES) + ")$"
STATUSES = ("ok", "failed", "skipped", "running", "interrupted")


class ValidationError(Exception):
    """An input the checks cannot use (a missing file, the wrong schema)."""


# --- reading -----------------------------------------------------------------


def read_trace_table(path: str | Path) -> pa.Table:
    """Every complete batch of a format-1 trace; a stream cut short keeps what was written."""
    try:
        reader = pa.ipc.open_stream(str(path))
    except (OSError, pa.ArrowInvalid) as err:
        raise ValidationError(f"{path}: not a readable trace ({err})") from err
    batches = []
    try:
        for batch in reader:
            batches.append(batch)
    except (OSError, pa.ArrowInvalid):
        pass  # a recorder killed mid-batch: the earlier batches stand
    return pa.Table.from_batches(batches, schema=reader.schema)


def read_launches(path: str | Path) -> pa.Table:
    """The launch rows of a trace in either format: format 2's launch segments (a directory), or format 1's
    stream (its launch rows among the others)."""
    path = Path(path)
    if not path.is_dir():
        return read_trace_table(path)
    if not (path / META_FILE).is_file():
        raise ValidationError(f"{path}: not a readable trace (a directory without {META_FILE})")
    segments = sorted((path / Event.LAUNCH.value).glob(f"*{SEGMENT_SUFFIX}"))
    try:
        tables = [pq.read_table(segment) for segment in segments]
    except (OSError, pa.ArrowInvalid) as err:
        raise ValidationError(f"{path}: not a readable trace ({err})") from err
    if not tables:
        return pa.table(
            {
                "pid": pa.array([], pa.uint32()),
                "tid": pa.array([], pa.uint32()),
                "api": pa.array([], pa.string()),
                "runtime_api": pa.array([], pa.string()),
                "ts_ns": pa.array([], pa.uint64()),
            }
        )
    return pa.concat_tables(tables, promote_options="default")


def read_kind(path: str | Path, kind: Event) -> pa.Table | None:
    """One kind's rows of a format-2 trace (None where it has none)."""
    segments = sorted((Path(path) / kind.value).glob(f"*{SEGMENT_SUFFIX}"))
    try:
        tables = [pq.read_table(segment) for segment in segments]
    except (OSError, pa.ArrowInvalid) as err:
        raise ValidationError(f"{path}: not a readable trace ({err})") from err
    return pa.concat_tables(tables, promote_options="default") if tables else None


def gpu_activity_check(path: str | Path, counts: dict | None) -> dict:
    """What --gpu-activity recorded against what was launched: kernels and graphs (one each, a graph traced
    node by node counted once) per process against the launch rows (and the program's own count), every
    driver launch call CUPTI saw per thread against the launch rows of that thread, the clock alignment
    each collector stated, and the GPU work that never arrived (lost rows)."""
    if not Path(path).is_dir():
        raise ValidationError(f"{path}: GPU activity is written in format 2 only")
    launches = launch_rows(read_launches(path))
    kernels = read_kind(path, Event.GPU_KERNEL)
    graphs = read_kind(path, Event.GPU_GRAPH)
    api = read_kind(path, Event.GPU_API)
    states = read_kind(path, Event.GPU_COLLECTOR)
    lost = read_kind(path, Event.LOST)
    executions: dict[int, int] = {}
    if kernels is not None:
        alone = kernels.filter(pc.is_null(kernels["graph_id"]))
        for row in alone.group_by("pid").aggregate([("pid", "count")]).to_pylist():
            executions[row["pid"]] = executions.get(row["pid"], 0) + row["pid_count"]
        nodes = kernels.filter(pc.invert(pc.is_null(kernels["graph_id"])))
        for row in nodes.group_by(["pid", "correlation_id"]).aggregate([]).to_pylist():
            executions[row["pid"]] = executions.get(row["pid"], 0) + 1
    if graphs is not None:
        for row in graphs.group_by("pid").aggregate([("pid", "count")]).to_pylist():
            executions[row["pid"]] = executions.get(row["pid"], 0) + row["pid_count"]
    launched = {r["pid"]: r["pid_count"] for r in launches.group_by("pid").aggregate([("pid", "count")]).to_pylist()}
    per_process = [
        {"pid": pid, "launch_rows": n, "gpu_executions": executions.get(pid, 0), "exact": executions.get(pid, 0) == n}
        for pid, n in sorted(launched.items())
    ]
    calls = {}
    if api is not None:
        names = set(launches["api"].to_pylist())
        driver_calls = api.filter(pc.is_in(api["api"], value_set=pa.array(sorted(names), pa.string())))
        calls = {
            r["tid"]: r["tid_count"] for r in driver_calls.group_by("tid").aggregate([("tid", "count")]).to_pylist()
        }
    rows_by_tid = {r["tid"]: r["tid_count"] for r in launches.group_by("tid").aggregate([("tid", "count")]).to_pylist()}
    per_thread = [
        {"tid": tid, "launch_rows": n, "launch_calls_seen_by_cupti": calls.get(tid, 0), "exact": calls.get(tid, 0) == n}
        for tid, n in sorted(rows_by_tid.items())
    ]
    collectors = []
    for row in states.to_pylist() if states is not None else []:
        try:
            detail = json.loads(row["detail"])
        except (TypeError, ValueError):
            detail = {}
        collectors.append(
            {
                "pid": row["pid"],
                "state": row["state"],
                "clock": detail.get("clock"),
                "reason": detail.get("reason"),
                "cupti_version": detail.get("cupti_version"),
            }
        )
    gpu_lost = [] if lost is None else [r for r in lost.to_pylist() if str(r.get("lost_event", "")).startswith("gpu_")]
    result = {
        "processes": per_process,
        "threads": per_thread,
        "collectors": collectors,
        "lost": [
            {"lost_event": r["lost_event"], "lost_count": r["lost_count"], "detail": r.get("detail")} for r in gpu_lost
        ],
        "clock_error_ns": max((c["clock"] or {}).get("error_ns", 0) for c in collectors) if collectors else None,
    }
    if counts is not None:
        expected = sum(p["calls"] - p.get("failed", 0) for t in counts.get("threads", []) for p in t.get("paths", []))
        result["program_launches"] = expected
        result["program_exact"] = sum(executions.values()) == expected
    result["exact"] = (
        all(p["exact"] for p in per_process)
        and all(t["exact"] for t in per_thread)
        and result.get("program_exact", True)
        and bool(per_process)
    )
    return result


def trace_metadata(path: str | Path) -> dict:
    """The trace's metadata (docs/trace-format.md): format 2's meta.json, format 1's schema metadata."""
    if Path(path).is_dir():
        return json.loads((Path(path) / META_FILE).read_text())
    reader = pa.ipc.open_stream(str(path))
    raw = (reader.schema.metadata or {}).get(b"launchgap")
    return json.loads(raw) if raw else {}


def launch_rows(table: pa.Table) -> pa.Table:
    """Launch rows: pid, tid, api, runtime_api (null where not named), ts_ns; from format 1's wide table (its
    launch rows) or format 2's launch table."""
    launches = table.filter(pc.equal(table["event"], Event.LAUNCH.value)) if "event" in table.column_names else table
    runtime = (
        launches["runtime_api"] if "runtime_api" in launches.column_names else pa.nulls(len(launches), pa.string())
    )
    return pa.table(
        {
            "pid": launches["pid"].cast(pa.int64()),
            "tid": launches["tid"].cast(pa.int64()),
            "api": launches["api"].cast(pa.string()),
            "runtime_api": pc.fill_null(runtime.cast(pa.string()), NO_RUNTIME_API),
            "ts_ns": launches["ts_ns"].cast(pa.int64()),
        }
    )


def load_counts(path: str | Path) -> dict:
    try:
        counts = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValidationError(f"{path}: cannot read the program's counts ({err})") from err
    if counts.get("schema") != COUNTS_SCHEMA:
        raise ValidationError(f"{path}: not {COUNTS_SCHEMA} counts (schema {counts.get('schema')!r})")
    return counts


def api_family(api: str) -> str:
    """cuLaunchKernel_ptsz -> cuLaunchKernel: one API path, whichever default stream."""
    for suffix in STREAM_VARIANT_SUFFIXES:
        if api.endswith(suffix):
            return api[: -len(suffix)]
    return api


# --- launches: the program's own counts against the trace --------------------


def recorded_counts(launches: pa.Table, key: str) -> dict[tuple[int, str], int]:
    """(tid, key value) -> launches, key being `api` or `runtime_api`."""
    if len(launches) == 0:
        return {}
    grouped = launches.group_by(["tid", key]).aggregate([([], "count_all")])
    return {
        (tid, name): count
        for tid, name, count in zip(
            grouped["tid"].to_pylist(), grouped[key].to_pylist(), grouped["count_all"].to_pylist()
        )
    }


def _side_by_side(expected: dict[str, int], recorded: dict[str, int]) -> list[dict]:
    rows = []
    for name in sorted(set(expected) | set(recorded)):
        launched, seen = expected.get(name, 0), recorded.get(name, 0)
        rows.append({"api": name, "launched": launched, "recorded": seen, "exact": launched == seen})
    return rows


def compare_launch_counts(counts: dict, launches: pa.Table, *, api_names: bool) -> dict:
    """Per thread and API path, the launches the program made against those the trace holds.

    Exact means: for every launching thread, the recorded launches per driver
    entry point (its per-thread-stream variant folded in) equal the calls the
    program made through the paths that reach it; with --api-names, also per
    runtime entry point; and no other thread of the program's process
    recorded a launch."""
    pid = int(counts["pid"])
    family = pc.replace_substring_regex(launches["api"], pattern=STREAM_VARIANT_PATTERN, replacement="")
    by_driver_family = recorded_counts(launches.append_column("family", family), "family")
    by_runtime = recorded_counts(launches, "runtime_api") if api_names else {}
    pairs = recorded_counts(
        launches.append_column("pair", pc.binary_join_element_wise(launches["runtime_api"], launches["api"], " -> ")),
        "pair",
    )

    threads = []
    counted_tids = set()
    exact = True
    for thread in counts["threads"]:
        tid = int(thread["tid"])
        counted_tids.add(tid)
        expected_driver: dict[str, int] = {}
        expected_runtime: dict[str, int] = {}
        for path in thread["paths"]:
            expected_driver[path["driver_api"]] = expected_driver.get(path["driver_api"], 0) + int(path["calls"])
            expected_runtime[path["runtime_api"]] = expected_runtime.get(path["runtime_api"], 0) + int(path["calls"])
        driver_rows = _side_by_side(
            {k: v for k, v in expected_driver.items() if v},
            {a: n for (t, a), n in by_driver_family.items() if t == tid},
        )
        runtime_rows = (
            _side_by_side(
                {k: v for k, v in expected_runtime.items() if v}, {a: n for (t, a), n in by_runtime.items() if t == tid}
            )
            if api_names
            else []
        )
        launched = sum(expected_driver.values())
        recorded = sum(n for (t, _), n in by_driver_family.items() if t == tid)
        thread_exact = launched == recorded and all(r["exact"] for r in driver_rows + runtime_rows)
        exact = exact and thread_exact
        threads.append(
            {
                "index": thread["index"],
                "tid": tid,
                "launched": launched,
                "recorded": recorded,
                "exact": thread_exact,
                "failed_calls": sum(int(p.get("failed", 0)) for p in thread["paths"]),
                "launches_per_s": _launch_rate(thread),
                "by_driver_api": driver_rows,
                "by_runtime_api": runtime_rows,
                "paths": [{k: p[k] for k in ("path", "runtime_api", "driver_api", "calls")} for p in thread["paths"]],
                "recorded_runtime_to_driver": {pair: n for (t, pair), n in sorted(pairs.items()) if t == tid},
            }
        )
    own = launches.filter(pc.equal(launches["pid"], pid))
    others = recorded_counts(
        own.filter(pc.invert(pc.is_in(own["tid"], pa.array(sorted(counted_tids), pa.int64())))), "api"
    )
    other_threads: dict[int, int] = {}
    for (tid, _), n in others.items():
        other_threads[tid] = other_threads.get(tid, 0) + n
    exact = exact and not other_threads
    return {
        "exact": exact,
        # every launch seen on the right thread, whichever entry points it went through: when this holds
        # and `exact` does not, the runtime reached other driver entry points than the paths expected
        "totals_exact": all(t["launched"] == t["recorded"] for t in threads) and not other_threads,
        "api_names": api_names,
        "pid": pid,
        "launched": sum(t["launched"] for t in threads),
        "recorded": sum(t["recorded"] for t in threads) + sum(other_threads.values()),
        "recorded_other_processes": int(len(launches) - len(own)),
        "threads": threads,
        "other_threads": [{"tid": tid, "recorded": n} for tid, n in sorted(other_threads.items())],
    }


# --- part (a): tokens/s untraced and traced ----------------------------------


def launches_in_window(launches: pa.Table, pid: int, tid: int, start_ns: int, end_ns: int) -> int:
    """Launches the decoding thread made while the timed tokens ran."""
    mask = pc.and_(
        pc.and_(pc.equal(launches["pid"], pid), pc.equal(launches["tid"], tid)),
        pc.and_(pc.greater_equal(launches["ts_ns"], start_ns), pc.less(launches["ts_ns"], end_ns)),
    )
    return int(pc.sum(mask.cast(pa.int64())).as_py() or 0)


def decode_summary(untraced: list[dict], traced: list[dict], window_launches: list[int]) -> dict:
    """Medians of tokens/s, the slowdown under recording, and what it costs a launch.

    The cost per launch is the extra time per token over the launches a timed
    token made (counted in the traced runs' timing windows)."""
    if not untraced or not traced:
        raise ValidationError("need at least one untraced and one traced run")
    plain = [r["tokens_per_s"] for r in untraced]
    recorded = [r["tokens_per_s"] for r in traced]
    plain_median, recorded_median = statistics.median(plain), statistics.median(recorded)
    per_token = [n / r["tokens"] for n, r in zip(window_launches, traced) if r["tokens"]]
    launches_per_token = statistics.median(per_token) if per_token else None
    added_s_per_token = 1 / recorded_median - 1 / plain_median
    return {
        "untraced_tokens_per_s": plain,
        "traced_tokens_per_s": recorded,
        "untraced_median": plain_median,
        "traced_median": recorded_median,
        "slowdown_ratio": plain_median / recorded_median,
        "slowdown_percent": (1 - recorded_median / plain_median) * 100,
        "launches_per_token": launches_per_token,
        "added_us_per_launch": (added_s_per_token / launches_per_token * 1e6) if launches_per_token else None,
        "same_tokens": len({tuple(r["first_ids"]) for r in untraced + traced}) == 1,
    }


def report_digest(report: dict) -> dict:
    """What the validation keeps of `launchgap report --json`."""
    overview = report.get("overview", {})
    verdict = report.get("verdict", {})
    return {
        "verdict": verdict.get("level"),
        "verdict_text": verdict.get("text"),
        "taken_percent": verdict.get("taken_percent"),
        "main_cause": verdict.get("main_cause"),
        "launches": overview.get("launches"),
        "launches_by_api": overview.get("launches_by_api"),
        "launch_rate_hz": overview.get("launch_rate_hz"),
        "syncs_by_api": overview.get("syncs_by_api"),
        "top_culprits": [
            c for c in report.get("taken", {}).get("culprits", []) if not c.get("is_recorder") and not c.get("is_idle")
        ][:3],
        "warnings": report.get("warnings", {}),
    }


def probe_digest(metadata: dict) -> list[dict]:
    """Each CUDA probe's function, file, cost class and whether it attached, from a trace's metadata."""
    keep = (
        "function",
        "file",
        "layer",
        "offset",
        "placed_offset",
        "first_instruction",
        "moved_over",
        "probed_instruction",
        "probe_cost",
        "link",
        "return_probe",
        "attached",
        "error",
    )
    return [
        {k: p.get(k) for k in keep if k in p} for p in metadata.get(MetaKey.PROBES, []) if p.get("kind") == "uprobe"
    ]


def probe_line(probes: list[dict]) -> str:
    """How many probes attached, by the cost class of the instruction probed."""
    attached = [p for p in probes if p.get("attached")]
    classes: dict[str, int] = {}
    for probe in attached:
        classes[probe.get("probe_cost") or "unknown"] = classes.get(probe.get("probe_cost") or "unknown", 0) + 1
    text = ", ".join(f"{n} {cost}" for cost, n in sorted(classes.items()))
    return f"{len(attached)} of {len(probes)} attached ({text or 'none'})"


def listing_line(listing: dict) -> str:
    """`launchgap probes --json`: the libraries found and the probes' cost classes."""
    kinds = ", ".join(f"{lib.get('kind')} {Path(lib.get('path', '')).name}" for lib in listing.get("libraries", []))
    classes: dict[str, int] = {}
    for probe in listing.get("probes", []):
        classes[probe.get("probe_cost") or "unknown"] = classes.get(probe.get("probe_cost") or "unknown", 0) + 1
    costs = ", ".join(f"{n} {cost}" for cost, n in sorted(classes.items()))
    warnings = "; ".join(listing.get("warnings", []))
    return f"{kinds or 'no CUDA library found'}; {len(listing.get('probes', []))} probes ({costs or 'none'})" + (
        f"; {warnings}" if warnings else ""
    )


# --- part (c): the culprit -----------------------------------------------------


def thread_taken(report: dict, tid: int) -> dict | None:
    for thread in report.get("taken", {}).get("threads", []):
        if int(thread["tid"]) == tid:
            return thread
    return None


def culprits_by_process(thread: dict) -> list[dict]:
    """A thread's culprits summed over causes (preempted, run-queue wait), largest first."""
    totals: dict[int, dict] = {}
    for culprit in thread.get("culprits", []):
        entry = totals.setdefault(int(culprit["pid"]), {"pid": int(culprit["pid"]), "comm": culprit["comm"], "ns": 0})
        entry["ns"] += int(culprit["ns"])
    return sorted(totals.values(), key=lambda c: (-c["ns"], c["pid"]))


def culprit_check(
    report: dict,
    counts: dict,
    *,
    hog_pid: int,
    thread_index: int,
    baseline: dict | None = None,
    baseline_counts: dict | None = None,
) -> dict:
    """Whether the report names the hog as who took most from the thread it was pinned beside."""
    thread = next((t for t in counts["threads"] if t["index"] == thread_index), None)
    if thread is None:
        raise ValidationError(f"the counts have no thread {thread_index}")
    taken = thread_taken(report, int(thread["tid"]))
    culprits = culprits_by_process(taken) if taken else []
    top = culprits[0] if culprits else None
    hog = next((c for c in culprits if c["pid"] == hog_pid), None)
    result = {
        "hog_pid": hog_pid,
        "thread_index": thread_index,
        "tid": int(thread["tid"]),
        "cpu": thread.get("cpu"),
        "thread_in_report": taken is not None,
        "top_culprit": top,
        "culprits": culprits,
        "hog_ns": hog["ns"] if hog else 0,
        "hog_is_top_culprit": bool(top and top["pid"] == hog_pid),
        "preempted_ns": taken["preempted_ns"] if taken else None,
        "runqueue_ns": taken["runqueue_ns"] if taken else None,
        "launches_per_s": _launch_rate(thread),
        "verdict": report.get("verdict", {}).get("level"),
    }
    if baseline is not None and baseline_counts is not None:
        base_thread = next((t for t in baseline_counts["threads"] if t["index"] == thread_index), None)
        base_taken = thread_taken(baseline, int(base_thread["tid"])) if base_thread else None
        result["baseline"] = {
            "preempted_ns": base_taken["preempted_ns"] if base_taken else None,
            "runqueue_ns": base_taken["runqueue_ns"] if base_taken else None,
            "launches_per_s": _launch_rate(base_thread) if base_thread else None,
            "verdict": baseline.get("verdict", {}).get("level"),
        }
    return result


def _launch_rate(thread: dict) -> float | None:
    calls = sum(int(p["calls"]) for p in thread["paths"])
    return calls / (thread["elapsed_ns"] / 1e9) if thread.get("elapsed_ns") else None


# --- the machine -------------------------------------------------------------------


def _command_output(*command: str) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="backslashreplace", timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def machine_facts() -> dict:
    """What the validation ran on: GPU, driver, CUDA compiler, PyTorch, kernel."""
    gpu = _command_output(
        "nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap", "--format=csv,noheader"
    )
    first = [field.strip() for field in gpu.splitlines()[0].split(",")] if gpu else []
    nvcc = _command_output(os.environ.get("NVCC", "nvcc"), "--version")
    release = _os_release().get("PRETTY_NAME")
    facts = {
        "gpu": first[0] if first else None,
        "driver": first[1] if len(first) > 1 else None,
        "gpu_memory": first[2] if len(first) > 2 else None,
        "compute_capability": first[3] if len(first) > 3 else None,
        "gpus": gpu.splitlines() if gpu else [],
        "nvcc": nvcc.splitlines()[-1] if nvcc else None,
        "kernel": platform.release(),
        "os": release,
        "cpus": len(os.sched_getaffinity(0)),
        "btf": Path("/sys/kernel/btf/vmlinux").exists(),
        "root": os.geteuid() == 0,
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
    }
    facts.update(_torch_facts())
    return facts


def _torch_facts() -> dict:
    try:
        import torch  # noqa: PLC0415 - optional: only the GPU machine has it
    except ImportError as err:
        return {"torch": None, "torch_error": str(err)}
    facts = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "torch_sees_gpu": torch.cuda.is_available()}
    if facts["torch_sees_gpu"]:
        facts["torch_device"] = torch.cuda.get_device_name(0)
    return facts


def _os_release() -> dict:
    try:
        lines = Path("/etc/os-release").read_text().splitlines()
    except OSError:
        return {}
    return {k: v.strip('"') for k, _, v in (line.partition("=") for line in lines) if k}


# --- the summary file ----------------------------------------------------------


def set_part(
    summary_path: Path, part: str, status: str, *, detail: dict | None = None, note: str | None = None
) -> dict:
    """Records one part's status (and its numbers) in the summary, written whole each time."""
    if status not in STATUSES:
        raise ValidationError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {"schema": SUMMARY_SCHEMA, "parts": {}}
    entry = summary["parts"].get(part, {})
    entry["status"] = status
    if note is not None:
        entry.setdefault("notes", []).append(note)
    if detail is not None:
        entry["detail"] = detail
    summary["parts"][part] = entry
    tmp = summary_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    tmp.replace(summary_path)
    return summary


def summary_lines(summary: dict) -> list[str]:
    """The summary as short lines, one block per part."""
    lines = []
    for part, entry in summary["parts"].items():
        lines.append(f"[{entry['status']:>11}] {part}")
        for note in entry.get("notes", []):
            lines.append(f"              {note}")
        lines.extend(f"              {line}" for line in _detail_lines(part, entry.get("detail") or {}))
    return lines


def _detail_lines(part: str, detail: dict) -> list[str]:
    out = []
    if part == "a" and "untraced_median" in detail:
        out.append(
            f"tokens/s untraced {', '.join(f'{v:.1f}' for v in detail['untraced_tokens_per_s'])} "
            f"(median {detail['untraced_median']:.1f}); traced "
            f"{', '.join(f'{v:.1f}' for v in detail['traced_tokens_per_s'])} (median {detail['traced_median']:.1f})"
        )
        cost = detail.get("added_us_per_launch")
        out.append(
            f"slowdown {detail['slowdown_percent']:.1f}% (x{detail['slowdown_ratio']:.3f}); "
            f"{detail.get('launches_per_token') or 0:.0f} launches a token; "
            f"{'%.2f us' % cost if cost is not None else 'unknown'} added a launch"
        )
        if detail.get("report"):
            out.append(f"verdict: {detail['report'].get('verdict')} ({detail['report'].get('taken_percent')}% taken)")
    if isinstance(detail.get("probes"), list) and detail["probes"]:
        out.append(f"probes: {probe_line(detail['probes'])}")
    untraced = detail.get("untraced")
    if isinstance(untraced, dict) and untraced.get("schema") == COUNTS_SCHEMA:
        rates = "; ".join(f"thread {t['index']} {_launch_rate(t) or 0:,.0f}" for t in untraced["threads"])
        out.append(f"untraced launches/s: {rates}")
    for key in ("driver", "api_names", "pinned", "hog"):
        compare = detail.get(key) if isinstance(detail.get(key), dict) else None
        if compare and "threads" in compare:
            per_thread = "; ".join(
                f"thread {t['index']} {t['recorded']}/{t['launched']}, {t.get('launches_per_s') or 0:,.0f}/s"
                for t in compare["threads"]
            )
            verdict = (
                "exact"
                if compare["exact"]
                else (
                    "NOT exact: totals exact, entry points differ from the paths expected"
                    if compare.get("totals_exact")
                    else "NOT exact"
                )
            )
            out.append(f"{key}: {verdict} (recorded/launched: {per_thread})")
            if compare.get("probes"):
                out.append(f"{key} probes: {probe_line(compare['probes'])}")
    if part == "probes":
        for key, listing in detail.items():
            if isinstance(listing, dict) and "probes" in listing:
                out.append(f"{key}: {listing_line(listing)}")
    culprit = detail.get("culprit")
    if culprit:
        top = culprit.get("top_culprit") or {}
        out.append(
            f"top culprit of thread {culprit['thread_index']}: {top.get('comm')} (pid {top.get('pid')}, "
            f"{(top.get('ns') or 0) / 1e6:.1f} ms); the hog (pid {culprit['hog_pid']}, "
            f"{culprit['hog_ns'] / 1e6:.1f} ms): {'named' if culprit['hog_is_top_culprit'] else 'NOT named'}"
        )
    return out


# --- command line ------------------------------------------------------------------


def _fail(message: str) -> None:
    click.echo(f"gpu-validation: {message}", err=True)
    sys.exit(2)


def _write(path: str | None, data: dict) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=2) + "\n")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Checks for scripts/gpu-validate.sh (pyarrow only: runs where polars is missing)."""


@main.command()
@click.argument("trace", type=click.Path())
@click.argument("counts", type=click.Path(dir_okay=False))
@click.option("--api-names", is_flag=True, help="The trace was recorded with --api-names: compare runtime names too.")
@click.option("--json-out", type=click.Path(dir_okay=False), help="Write the comparison here.")
def compare(trace: str, counts: str, api_names: bool, json_out: str | None) -> None:
    """The program's own launch counts (COUNTS) against the launches in TRACE; exit 1 unless exact."""
    try:
        result = compare_launch_counts(load_counts(counts), launch_rows(read_launches(trace)), api_names=api_names)
        result["probes"] = probe_digest(trace_metadata(trace))
    except ValidationError as err:
        _fail(str(err))
    _write(json_out, result)
    for thread in result["threads"]:
        click.echo(
            f"thread {thread['index']} (tid {thread['tid']}): recorded {thread['recorded']} of "
            f"{thread['launched']} launches: {'exact' if thread['exact'] else 'NOT exact'}"
        )
        for row in thread["by_driver_api"] + thread["by_runtime_api"]:
            click.echo(
                f"  {row['api']:<32} launched {row['launched']:>8}  recorded {row['recorded']:>8}"
                f"{'' if row['exact'] else '  MISMATCH'}"
            )
    for other in result["other_threads"]:
        click.echo(f"thread tid {other['tid']} (not a launching thread): recorded {other['recorded']} launches")
    click.echo(f"launches: {'exact' if result['exact'] else 'NOT exact'}")
    sys.exit(0 if result["exact"] else 1)


@main.command("gpu-activity")
@click.argument("trace", type=click.Path())
@click.option("--counts", type=click.Path(dir_okay=False), help="The program's own launch counts, to compare too.")
@click.option("--json-out", type=click.Path(dir_okay=False), help="Write the check here.")
def gpu_activity_command(trace: str, counts: str | None, json_out: str | None) -> None:
    """Kernels recorded with --gpu-activity against the launches; exit 1 unless every launch has its GPU work."""
    try:
        result = gpu_activity_check(trace, load_counts(counts) if counts else None)
    except ValidationError as err:
        _fail(str(err))
    _write(json_out, result)
    for p in result["processes"]:
        click.echo(
            f"pid {p['pid']}: {p['gpu_executions']} kernels and graphs for {p['launch_rows']} launch rows: "
            f"{'exact' if p['exact'] else 'NOT exact'}"
        )
    for c in result["collectors"]:
        click.echo(
            f"collector pid {c['pid']}: {c['state']} (CUPTI {c['cupti_version']}, clock {c['clock']})"
            + (f": {c['reason']}" if c["reason"] else "")
        )
    for row in result["lost"]:
        click.echo(f"lost: {row['lost_count']} {row['lost_event']} ({row['detail']})")
    click.echo(f"GPU activity: {'exact' if result['exact'] else 'NOT exact'}")
    sys.exit(0 if result["exact"] else 1)


@main.command()
@click.option("--untraced", "untraced", multiple=True, required=True, type=click.Path(dir_okay=False))
@click.option("--traced", "traced", multiple=True, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--trace",
    "traces",
    multiple=True,
    required=True,
    type=click.Path(),
    help="The traced runs' traces, in the order of --traced.",
)
@click.option(
    "--report",
    "reports",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="`launchgap report --json` of the traces (the last one is summarised).",
)
@click.option("--json-out", type=click.Path(dir_okay=False))
def decode(untraced, traced, traces, reports, json_out) -> None:
    """Tokens/s untraced and traced (qwen3_decode.py --result files), the slowdown and the cost a launch."""
    if len(traces) != len(traced):
        _fail("give one --trace per --traced run")
    try:
        plain = [json.loads(Path(p).read_text()) for p in untraced]
        recorded = [json.loads(Path(p).read_text()) for p in traced]
        windows = []
        for run, trace in zip(recorded, traces):
            launches = launch_rows(read_launches(trace))
            windows.append(
                launches_in_window(launches, run["pid"], run["tid"], run["window_start_ns"], run["window_end_ns"])
            )
        result = decode_summary(plain, recorded, windows)
        result["window_launches"] = windows
        result["probes"] = probe_digest(trace_metadata(traces[-1]))
        if reports:
            result["report"] = report_digest(json.loads(Path(reports[-1]).read_text()))
    except (OSError, json.JSONDecodeError, KeyError, ValidationError) as err:
        _fail(f"cannot summarise the decode runs: {err}")
    _write(json_out, result)
    click.echo("\n".join(_detail_lines("a", result)))


@main.command()
@click.argument("report", type=click.Path(dir_okay=False))
@click.argument("counts", type=click.Path(dir_okay=False))
@click.option("--hog-pid", type=int, required=True)
@click.option(
    "--thread",
    "thread_index",
    type=int,
    default=0,
    show_default=True,
    help="The launching thread the hog was pinned beside.",
)
@click.option("--baseline", type=click.Path(dir_okay=False), help="The report of the same run without the hog.")
@click.option("--baseline-counts", type=click.Path(dir_okay=False))
@click.option("--json-out", type=click.Path(dir_okay=False))
def culprit(report, counts, hog_pid, thread_index, baseline, baseline_counts, json_out) -> None:
    """Whether REPORT names the hog as the top culprit of the thread it shared a CPU with; exit 1 if not."""
    try:
        result = culprit_check(
            json.loads(Path(report).read_text()),
            load_counts(counts),
            hog_pid=hog_pid,
            thread_index=thread_index,
            baseline=json.loads(Path(baseline).read_text()) if baseline else None,
            baseline_counts=load_counts(baseline_counts) if baseline_counts else None,
        )
    except (OSError, json.JSONDecodeError, ValidationError) as err:
        _fail(str(err))
    _write(json_out, result)
    click.echo("\n".join(_detail_lines("c", {"culprit": result})))
    sys.exit(0 if result["hog_is_top_culprit"] else 1)


@main.command("set-part")
@click.argument("summary", type=click.Path(dir_okay=False))
@click.argument("part")
@click.argument("status", type=click.Choice(STATUSES))
@click.option("--detail", type=click.Path(dir_okay=False), help="A JSON file of the part's numbers.")
@click.option("--note", help="One line on why, or what was skipped.")
def set_part_cmd(summary, part, status, detail, note) -> None:
    """Record one part's status in the summary file."""
    try:
        data = json.loads(Path(detail).read_text()) if detail else None
        set_part(Path(summary), part, status, detail=data, note=note)
    except (OSError, json.JSONDecodeError, ValidationError) as err:
        _fail(f"cannot update {summary}: {err}")


@main.command()
@click.argument("out", type=click.Path(dir_okay=False))
@click.argument("pairs", nargs=-1, required=True)
def merge(out, pairs) -> None:
    """Write {KEY: contents of FILE} for each KEY=FILE given (a part's numbers in one file)."""
    merged = {}
    for pair in pairs:
        key, sep, path = pair.partition("=")
        if not sep:
            _fail(f"'{pair}': give KEY=FILE")
        try:
            merged[key] = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as err:
            _fail(f"{path}: {err}")
    _write(out, merged)


@main.command()
@click.option("--json-out", type=click.Path(dir_okay=False), required=True)
@click.option("--set", "settings", multiple=True, help="KEY=VALUE to record as is (repeatable).")
def environment(json_out, settings) -> None:
    """The machine, driver, CUDA and PyTorch versions, as JSON."""
    info = machine_facts()
    for setting in settings:
        key, _, value = setting.partition("=")
        info[key] = value
    _write(json_out, info)
    for key in ("gpu", "driver", "nvcc", "torch", "torch_cuda", "kernel", "btf", "root"):
        click.echo(f"{key}: {info.get(key)}")


@main.command()
@click.argument("summary", type=click.Path(dir_okay=False, exists=True))
def show(summary) -> None:
    """Print the summary, one block per part."""
    click.echo("\n".join(summary_lines(json.loads(Path(summary).read_text()))))


if __name__ == "__main__":
    main()
