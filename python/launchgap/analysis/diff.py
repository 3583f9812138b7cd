"""Two reports side by side: every headline metric, and the change."""

from __future__ import annotations

from launchgap.analysis.records import Report


def _metrics(report: Report) -> dict[str, float | None]:
    o, m, t = report.overview, report.study_metrics, report.taken.total
    wall_s = o.wall_ns / 1e9
    return {
        "wall time (s)": wall_s,
        "launches": o.launches,
        "launch rate (/s)": o.launch_rate_hz,
        "Sched/1K": m.sched_per_1k_launches,
        "SoftIRQ/1K": m.softirq_per_1k_launches,
        "HardIRQ/1K": m.hardirq_per_1k_launches,
        "IRQ time (ms)": m.irq_ns / 1e6,
        "off-CPU (%)": m.off_cpu_percent,
        "switch rate (Hz)": m.switch_rate_hz,
        "preempted switches": o.preempted_switches,
        "blocked switches": o.blocked_switches,
        "preempted (ms)": t.preempted_ns / 1e6,
        "run-queue wait (ms)": t.runqueue_ns / 1e6,
        "IRQ on workload (ms)": t.irq_ns / 1e6,
        "migrations": t.migrations,
        "taken (%)": report.verdict.taken_percent,
        "Sched/1K (study's count)": m.sched_rows_per_1k_launches_study,
    }


def _trace_state(report: Report) -> dict:
    """Whether the numbers of one side rest on a whole trace."""
    t = report.trace
    return {"path": t.path, "truncated": t.truncated, "clean_end": t.clean_end, "damage": list(t.damage)}


def diff_reports(a: Report, b: Report, culprits_by: str | None = None) -> dict:
    """The comparison as JSON (docs/report-schema.md, `launchgap-diff/1`); with CULPRITS_BY "cgroup", the
    culprit time of each cgroup side by side too (`culprits_by_cgroup`)."""
    ma, mb = _metrics(a), _metrics(b)
    rows = []
    for name in ma:
        x, y = ma[name], mb[name]
        change = None if x in (None, 0) or y is None else 100.0 * (y - x) / x
        rows.append({"metric": name, "a": x, "b": y, "change_percent": change})
    rate_a, rate_b = a.overview.launch_rate_hz, b.overview.launch_rate_hz
    slowdown = 100.0 * (rate_a - rate_b) / rate_a if rate_a else None
    out = {"schema": "launchgap-diff/1", "a": a.trace.path, "b": b.trace.path,
           "launch_rate_slowdown_percent": slowdown, "metrics": rows,
           "verdicts": {"a": a.verdict.level, "b": b.verdict.level},
           "traces": {"a": _trace_state(a), "b": _trace_state(b)},
           "warnings": {"a": dict(a.warnings), "b": dict(b.warnings)}}
    if culprits_by == "cgroup":
        out["culprits_by_cgroup"] = culprits_by_cgroup(a, b)
    return out


def _change(x: float | None, y: float | None) -> float | None:
    return None if x in (None, 0) or y is None else 100.0 * (y - x) / x


def _by_group(rows_a: list, rows_b: list, value) -> list[dict]:
    """Rows of two reports' by-cgroup culprit lists matched by (cgroup, name, cause), each side's VALUE (0 where
    a side has no such row), the largest (either side) first."""
    key = lambda r: (r.cgroup or "", r.name, r.cause)  # noqa: E731
    a, b = {key(r): r for r in rows_a}, {key(r): r for r in rows_b}
    out = []
    for k in sorted(set(a) | set(b)):
        x = value(a[k]) if k in a else 0
        y = value(b[k]) if k in b else 0
        row = a.get(k) or b[k]
        out.append({"cgroup": row.cgroup, "name": row.name, "container_id": row.container_id, "pod": row.pod,
                    "cause": row.cause, "a_ns": x, "b_ns": y, "change_percent": _change(x, y)})
    return sorted(out, key=lambda r: (-max(r["a_ns"], r["b_ns"]), r["cause"], r["name"], r["cgroup"] or ""))


def culprits_by_cgroup(a: Report, b: Report) -> dict:
    """The culprit time of each cgroup in A and in B (docs/report-schema.md, `culprits_by_cgroup` of
    `launchgap-diff/1`): `cpu`, what the workload's threads lost to its tasks (taken.culprits_by_cgroup);
    `gpu`, the GPU idle they caused (gpu_time.culprits_by_cgroup, its upper bound: exact with GPU activity),
    where both reports have a GPU-time section. The caller checks both traces record cgroups."""
    out = {"cpu": _by_group(a.taken.culprits_by_cgroup or [], b.taken.culprits_by_cgroup or [], lambda r: r.ns),
           "gpu": None}
    if a.gpu_time.culprits_by_cgroup is not None and b.gpu_time.culprits_by_cgroup is not None \
            and "none" not in (a.gpu_time.mode, b.gpu_time.mode):
        out["gpu"] = _by_group(a.gpu_time.culprits_by_cgroup, b.gpu_time.culprits_by_cgroup, lambda r: r.high_ns)
    return out
