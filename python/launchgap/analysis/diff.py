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


def diff_reports(a: Report, b: Report) -> dict:
    """The comparison as JSON (docs/report-schema.md, `launchgap-diff/1`)."""
    ma, mb = _metrics(a), _metrics(b)
    rows = []
    for name in ma:
        x, y = ma[name], mb[name]
        change = None if x in (None, 0) or y is None else 100.0 * (y - x) / x
        rows.append({"metric": name, "a": x, "b": y, "change_percent": change})
    rate_a, rate_b = a.overview.launch_rate_hz, b.overview.launch_rate_hz
    slowdown = 100.0 * (rate_a - rate_b) / rate_a if rate_a else None
    return {"schema": "launchgap-diff/1", "a": a.trace.path, "b": b.trace.path,
            "launch_rate_slowdown_percent": slowdown, "metrics": rows,
            "verdicts": {"a": a.verdict.level, "b": b.verdict.level},
            "traces": {"a": _trace_state(a), "b": _trace_state(b)},
            "warnings": {"a": dict(a.warnings), "b": dict(b.warnings)}}
