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
           "warnings": {"a": dict(a.warnings), "b": dict(b.warnings)},
           "gpu_time": diff_gpu_time(a, b)}
    if culprits_by == "cgroup":
        out["culprits_by_cgroup"] = culprits_by_cgroup(a, b)
    return out


# --- GPU time (docs/gpu-time.md): both sides' numbers and their difference -------------------------

INTERFERENCE_CAUSES = ("preempted", "runqueue", "irq")


def _gpu_side(report: Report) -> dict:
    """One trace's GPU time, as the diff gives it: shares of the GPU's span, idle by interference (each
    cause where exact, the total as bounds otherwise) and by the app's own host work."""
    g = report.gpu_time
    exact = g.mode == "exact"
    by_cause = {c.cause: c.ns for c in g.causes}
    share = (lambda ns: 100.0 * ns / g.active_ns if g.active_ns else None)  # noqa: E731
    return {
        "mode": g.mode, "why": g.why, "active_ns": g.active_ns, "span_ns": g.span_ns,
        "busy_percent": g.busy_percent,
        "idle_percent": None if g.busy_percent is None else 100.0 - g.busy_percent,
        "interference_exact": exact,
        "interference_low_ns": g.interference_low_ns, "interference_high_ns": g.interference_high_ns,
        "interference_low_percent": share(g.interference_low_ns),
        "interference_high_percent": share(g.interference_high_ns),
        "interference_by_cause_ns": {c: int(by_cause.get(c, 0)) for c in INTERFERENCE_CAUSES} if exact else None,
        "own_ns": g.own_ns,
    }


def _change(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _gpu_culprits(a: Report, b: Report) -> list[dict]:
    """The culprit tables of both sides in GPU time, matched by cause and name (process ids differ from run
    to run), largest first by B, then A. A side whose culprits (the report's top ten) do not name one has
    null there, counted as 0 in the change."""
    rows: dict[tuple, dict] = {}
    for side, report in (("a", a), ("b", b)):
        for c in report.gpu_time.culprits:
            row = rows.setdefault((c.cause, c.comm), {"cause": c.cause, "culprit": c.comm,
                                                      "a_low_ns": None, "a_high_ns": None, "b_low_ns": None,
                                                      "b_high_ns": None,
                                                      "a_pids": [], "b_pids": []})
            row[f"{side}_low_ns"] = (row[f"{side}_low_ns"] or 0) + c.low_ns
            row[f"{side}_high_ns"] = (row[f"{side}_high_ns"] or 0) + c.high_ns
            if c.pid is not None and c.cause != "irq":
                row[f"{side}_pids"].append(c.pid)
    out = sorted(rows.values(), key=lambda r: (-(r["b_high_ns"] or 0), -(r["a_high_ns"] or 0), r["cause"],
                                               r["culprit"] or ""))
    for row in out:
        row["change_low_ns"] = (row["b_low_ns"] or 0) - (row["a_high_ns"] or 0)
        row["change_high_ns"] = (row["b_high_ns"] or 0) - (row["a_low_ns"] or 0)
    return out


def diff_gpu_time(a: Report, b: Report) -> dict:
    """`gpu_time` of the diff's JSON (docs/report-schema.md): each side's GPU time, the changes (B - A, in
    percentage points for shares and nanoseconds for times; a range where either side is bounds), and the
    culprits of both in GPU time."""
    sa, sb = _gpu_side(a), _gpu_side(b)
    changes = {
        "busy_points": _change(sa["busy_percent"], sb["busy_percent"]),
        "idle_points": _change(sa["idle_percent"], sb["idle_percent"]),
        # the smallest and largest change the bounds allow (equal when both sides are exact)
        "interference_low_ns": sb["interference_low_ns"] - sa["interference_high_ns"],
        "interference_high_ns": sb["interference_high_ns"] - sa["interference_low_ns"],
        "interference_by_cause_ns": (
            {c: sb["interference_by_cause_ns"][c] - sa["interference_by_cause_ns"][c] for c in INTERFERENCE_CAUSES}
            if sa["interference_by_cause_ns"] is not None and sb["interference_by_cause_ns"] is not None else None),
        "own_ns": None if sa["own_ns"] is None or sb["own_ns"] is None else sb["own_ns"] - sa["own_ns"],
    }
    return {"a": sa, "b": sb, "change": changes, "culprits": _gpu_culprits(a, b)}


def _percent_change(x: float | None, y: float | None) -> float | None:
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
                    "cause": row.cause, "a_ns": x, "b_ns": y, "change_percent": _percent_change(x, y)})
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
