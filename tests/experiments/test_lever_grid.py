"""`launchgap experiment levers` (the study's grid) and `launchgap experiment compare`: the grid's statistics
against the same computed by hand from results.json, the policy checked in every run's trace, levers the
host cannot apply refused in one line before any run, and compare refusing to pool differing settings."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import special

from tests.conftest import REPO
from tests.doctor.trees import make_tree

ONLINE = set(os.sched_getaffinity(0))
CPU = max(ONLINE)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="experiments load BPF and change host settings: needs root")


def launchgap(*args: str, env: dict | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "launchgap.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "250", **(env or {})},
        timeout=600,
    )


def words(text: str) -> str:
    """Text with a table's rules and every run of whitespace made one space."""
    return " ".join(text.replace("│", " ").replace("┃", " ").split())


@pytest.fixture(scope="module")
def small_grid(tmp_path_factory) -> Path:
    """compute and memory x other and fifo:10, N=2, tiny sizes, one worker on one CPU."""
    if os.geteuid() != 0:
        pytest.skip("experiments load BPF and change host settings: needs root")
    out = tmp_path_factory.mktemp("grid") / "levers"
    proc = launchgap(
        "experiment",
        "levers",
        "--classes",
        "compute,memory",
        "--policies",
        "other,fifo:10",
        "--repeat",
        "2",
        "--threads",
        "1",
        "--cpus",
        str(CPU),
        "--size",
        "compute=2000",
        "--size",
        "memory=2M",
        "--seed",
        "4",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    (out / "stdout.txt").write_text(proc.stdout)
    return out


# ---- statistics by hand --------------------------------------------------------------------------


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def sd(xs: list[float]) -> float:
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def p95(xs: list[float]) -> float:
    """Linear interpolation between the order statistics at (n - 1) * 0.95."""
    ordered = sorted(xs)
    h = (len(ordered) - 1) * 0.95
    low = math.floor(h)
    return ordered[low] + (h - low) * (ordered[min(low + 1, len(ordered) - 1)] - ordered[low])


def t_quantile_1df(p: float) -> float:
    """Student's t with one degree of freedom is Cauchy: its quantile is tan(pi (p - 1/2))."""
    return math.tan(math.pi * (p - 0.5))


def welch(base: list[float], xs: list[float]) -> tuple[float, float, float]:
    """Welch's t of mean(base) - mean(xs), its degrees of freedom (Welch-Satterthwaite) and two-sided p
    (the t distribution's tail as a regularised incomplete beta function)."""
    vb, vx = sd(base) ** 2 / len(base), sd(xs) ** 2 / len(xs)
    t = (mean(base) - mean(xs)) / math.sqrt(vb + vx)
    df = (vb + vx) ** 2 / (vb**2 / (len(base) - 1) + vx**2 / (len(xs) - 1))
    p = float(special.betainc(df / 2, 0.5, df / (df + t * t)))
    return t, df, p


def test_the_grids_statistics_are_exactly_those_computed_by_hand(small_grid):
    results = json.loads((small_grid / "results.json").read_text())
    summary = json.loads((small_grid / "summary.json").read_text())
    assert results["status"] == "complete" and results["higher_is_better"] is False
    assert results["metric"] == r"elapsed_s=([0-9.]+)"
    cells = ["compute/other", "compute/fifo:10", "memory/other", "memory/fifo:10"]
    assert sorted(summary) == sorted(cells)
    # every run recorded, interleaved: a warm-up, then each round every cell once in a shuffled order
    assert [r["round"] for r in results["runs"]] == [0] + [1] * 4 + [2] * 4
    assert sorted(r["scenario"] for r in results["runs"] if r["round"] == 1) == sorted(cells)
    values = {c: [r["metric"] for r in results["runs"] if r["scenario"] == c and not r["warmup"]] for c in cells}
    for cell, xs in values.items():
        assert len(xs) == 2
        got = summary[cell]["metric"]
        half = t_quantile_1df(0.975) * sd(xs) / math.sqrt(2)
        assert got["mean"] == pytest.approx(mean(xs), rel=1e-12)
        assert got["sd"] == pytest.approx(sd(xs), rel=1e-12)
        assert got["p95"] == pytest.approx(p95(xs), rel=1e-12)
        assert (got["ci_low"], got["ci_high"]) == pytest.approx((mean(xs) - half, mean(xs) + half), rel=1e-9)
        runs = [r for r in results["runs"] if r["scenario"] == cell and not r["warmup"]]
        for key in ("preempted_ms", "runqueue_ms", "irq_ms"):
            assert summary[cell][key] == pytest.approx(mean([r[key] for r in runs]), rel=1e-12)  # median of 2
        cls, variant = cell.split("/")
        if variant == "other":
            assert "vs_baseline" not in summary[cell]
            continue
        base = values[f"{cls}/other"]
        vs = summary[cell]["vs_baseline"]
        t, df, p = welch(base, xs)
        assert vs["baseline"] == f"{cls}/other"
        # elapsed_s, lower is better: a longer time is a slowdown, and every signed number says so
        assert vs["mean_slowdown_percent"] == pytest.approx((mean(xs) - mean(base)) / mean(base) * 100, rel=1e-9)
        assert vs["welch_t"] == pytest.approx(-t, rel=1e-9)
        assert vs["welch_p"] == pytest.approx(p, rel=1e-6)
        half = float(special.stdtrit(df, 0.975)) * math.sqrt(sd(base) ** 2 / 2 + sd(xs) ** 2 / 2)
        low = (mean(xs) - mean(base) - half) / mean(base) * 100
        high = (mean(xs) - mean(base) + half) / mean(base) * 100
        assert (vs["slowdown_ci_low"], vs["slowdown_ci_high"]) == pytest.approx((low, high), rel=1e-6)


def test_every_run_shows_its_policy_in_the_trace_and_its_threads(small_grid):
    results = json.loads((small_grid / "results.json").read_text())
    for run in results["runs"]:
        assert "error" not in run, run.get("error")
        fifo = run["scenario"].endswith("fifo:10")
        trace, entered = run["verified"]["trace"], run["verified"]["enter"]
        assert (entered["policy"], entered["rt_priority"]) == (("fifo", 10) if fifo else ("other", 0))
        assert trace["verified"] is True and trace["expected_prio"] == (89 if fifo else 120)
        assert trace["prio"] == {str(trace["expected_prio"]): trace["switches"]} and trace["cpus"] == [CPU]
        # the lever workload's worker took the time the cause columns are about
        assert {t["comm"] for t in run["verified"]["threads_sampled"].values()} <= {"lever-workload", "lg-work-0"}
    summary = json.loads((small_grid / "summary.json").read_text())
    assert all(entry["verified"] == 2 for entry in summary.values())


def test_the_table_shows_every_cell_and_the_vm_caution(small_grid):
    shown = words((small_grid / "stdout.txt").read_text())
    summary = json.loads((small_grid / "summary.json").read_text())
    fifo = summary["compute/fifo:10"]
    assert f"compute fifo:10 2 0 2/2 {fifo['metric']['mean']:.4f}" in shown
    slowdown = fifo["vs_baseline"]["mean_slowdown_percent"]
    assert (
        f"{abs(slowdown):.1f}% {'slower' if slowdown > 0 else 'faster'}" if round(slowdown, 1) else "no change"
    ) in shown
    from tests.test_hostile_names import png_width

    assert png_width(small_grid / "levers.png") > 0  # a PNG that decodes
    shown = launchgap("experiment", "show", str(small_grid))
    assert shown.returncode == 0
    results = json.loads((small_grid / "results.json").read_text())
    hypervisor = next(c for c in results["doctor"]["checks"] if c["id"] == "cpu.hypervisor")
    if hypervisor["status"] == "warn":
        assert f"launchgap: caution: {hypervisor['summary']}" in words(shown.stderr)


def test_every_result_records_the_doctors_findings_at_its_start(small_grid):
    from launchgap.doctor.host import DirectoryHost
    from launchgap.doctor.model import Target
    from launchgap.doctor.run import run_doctor

    recorded = json.loads((small_grid / "results.json").read_text())["doctor"]
    now = run_doctor(DirectoryHost("/"), Target(frozenset({CPU}), "the workload's CPUs")).to_dict()
    assert [c["id"] for c in recorded["checks"]] == [c["id"] for c in now["checks"]]
    # in the report's order although the levers import the scheduler's checks first (docs/doctor.md)
    assert [c["id"] for c in recorded["checks"]][:5] == [
        "boot.isolation",
        "boot.rcu_nocbs",
        "boot.housekeeping",
        "boot.kernel_support",
        "irq.isolated",
    ]
    assert recorded["target"] == {"cpus": [CPU], "description": "the workload's CPUs"}
    stable = ("boot.isolation", "sched.rt_throttling", "sched.preemption", "cpu.smt", "cpu.hypervisor")
    assert [c for c in recorded["checks"] if c["id"] in stable] == [c for c in now["checks"] if c["id"] in stable]


# ---- refused before any run ----------------------------------------------------------------------


@needs_root
@pytest.mark.parametrize(
    "args, env, line",
    [
        (["--levers", "preempt=full"], {}, None),  # the doctor's reason on this host
        (
            ["--policies", "other,fifo:10"],
            "rt-off",
            "launchgap: scenario compute/fifo:10: SCHED_FIFO 10: RT throttling is "
            "off here (sched_rt_runtime_us = -1), so a spinning RT workload could hang its CPUs; turn it on (sysctl "
            "kernel.sched_rt_runtime_us=950000) or pass --allow-rt-unthrottled",
        ),
        (
            ["--levers", "isolate", "--cpus", ",".join(map(str, sorted(ONLINE)))],
            {},
            "launchgap: scenario compute/isolate: isolate needs at least one CPU left for housekeeping",
        ),
        (["--levers", "isolate"], {}, "launchgap: scenario compute/isolate: isolate needs the workload's cpus"),
        (
            ["--levers", "nohz_full"],
            {},
            "launchgap: lever 'nohz_full': not one of isolate, isolate=root, irq-away, "
            "workqueue-away, timer-migration=0, timer-migration=1, preempt=none, preempt=voluntary, preempt=full, "
            "preempt=lazy (join several with +)",
        ),
        (
            ["--policies", "other,fifo:99"],
            {},
            "launchgap: policy fifo:99: RT priority must be 1..49 (the kernel's own RT threads run at 50 and up)",
        ),
    ],
)
def test_a_lever_the_host_cannot_apply_is_refused_in_one_line_before_any_run(tmp_path, args, env, line):
    if env == "rt-off":
        env = {
            "LAUNCHGAP_LEVER_ROOT": str(
                make_tree(tmp_path, "vm-2cpu", {"/proc/sys/kernel/sched_rt_runtime_us": "-1\n"})
            )
        }
    out = tmp_path / "out"
    proc = launchgap("experiment", "levers", "--classes", "compute", "--repeat", "2", *args, "-o", str(out), env=env)
    if line is None:
        from launchgap.doctor.checks import scheduler
        from launchgap.experiments.levers import LeverHost

        summary = scheduler.preemption(LeverHost().facts(), None).summary
        line = (
            f"launchgap: scenario compute/preempt=full: preempt=full: the preemption model cannot be switched "
            f"here: {summary}"
        )
    assert proc.returncode == 2
    assert proc.stderr == line + "\n"
    assert not out.exists()  # nothing ran: no results, no trace


@needs_root
def test_a_workload_that_leaves_its_policy_is_caught_by_the_trace(tmp_path):
    out = tmp_path / "out"
    # the shell demotes itself to SCHED_OTHER, then runs a child: both at prio 120 in a fifo:10 cell
    proc = launchgap(
        "experiment",
        "levers",
        "--policies",
        "other,fifo:10",
        "--repeat",
        "2",
        "--cpus",
        str(CPU),
        "-o",
        str(out),
        "--",
        "sh",
        "-c",
        "chrt -o -p 0 $$ >/dev/null && sleep 0.05",
    )
    assert proc.returncode == 1
    results = json.loads((out / "results.json").read_text())
    assert results["grid"]["classes"] == ["workload"]
    for run in results["runs"]:
        if run["scenario"] == "workload/other":
            assert "error" not in run and run["verified"]["trace"]["verified"] is True
            continue
        trace = run["verified"]["trace"]
        # the shell started under the lever (SCHED_FIFO 10: prio 89) and put itself back to SCHED_OTHER, nice 0
        # (prio 120) before its sleep: its switches at those two prios and no other, some at 120
        assert trace["verified"] is False and set(trace["prio"]) <= {"89", "120"} and trace["prio"]["120"] >= 1
        assert run["error"].startswith("settings not in effect: ")
        assert (
            f"switches of the workload's threads were not at prio 89 ({trace['prio']['120']} at prio 120)"
            in run["error"]
        )
    assert "error: scenario workload/fifo:10: every run failed" in words(proc.stderr)


# ---- compare -------------------------------------------------------------------------------------


def copy_results(source: Path, dest: Path, edit=None) -> Path:
    dest.mkdir(parents=True)
    results = json.loads((source / "results.json").read_text())
    if edit:
        edit(results)
    (dest / "results.json").write_text(json.dumps(results))
    return dest


def set_check(results: dict, check_id: str, **data) -> None:
    for check in results["doctor"]["checks"]:
        if check["id"] == check_id:
            check["data"].update(data)


def another_boot(results: dict) -> None:
    """The same experiment run again after a reboot: another owner (a copy of the same results is refused)."""
    results["owner"] = {**results["owner"], "boot_id": "another-boot"}
    results["environment"]["boot_id"] = "another-boot"


def test_compare_puts_boots_side_by_side_and_pools_only_equal_settings(small_grid, tmp_path):
    a = copy_results(small_grid, tmp_path / "boot-a")
    b = copy_results(small_grid, tmp_path / "boot-b", another_boot)
    side = json.loads(launchgap("experiment", "compare", str(a), str(b), "--json").stdout)
    assert side["settings_differ"] == {} and [e["label"] for e in side["experiments"]] == ["boot-a", "boot-b"]
    row = next(r for r in side["scenarios"] if r["name"] == "compute/fifo:10")
    assert row["per_experiment"]["boot-b"]["vs_first"]["mean_slowdown_percent"] == pytest.approx(0.0, abs=1e-9)
    pooled = json.loads(launchgap("experiment", "compare", str(a), str(b), "--pool", "--json").stdout)
    results = json.loads((small_grid / "results.json").read_text())
    xs = [r["metric"] for r in results["runs"] if r["scenario"] == "memory/fifo:10" and not r["warmup"]] * 2
    row = next(r for r in pooled["scenarios"] if r["name"] == "memory/fifo:10")
    assert (row["runs"], row["from"]) == (4, 2)
    assert (row["metric"]["mean"], row["metric"]["sd"]) == pytest.approx((mean(xs), sd(xs)), rel=1e-12)


def test_compare_refuses_to_pool_runs_whose_settings_differ_and_says_which(small_grid, tmp_path):
    a = copy_results(small_grid, tmp_path / "plain")

    def tickless(results: dict) -> None:
        another_boot(results)
        set_check(results, "boot.isolation", asked={"nohz_full": "1", "rcu_nocbs": "1"})
        set_check(results, "sched.preemption", model="full")

    b = copy_results(small_grid, tmp_path / "nohz", tickless)
    refused = launchgap("experiment", "compare", str(a), str(b), "--pool")
    assert refused.returncode == 2
    asked_a = (
        json.dumps(
            next(
                c
                for c in json.loads((a / "results.json").read_text())["doctor"]["checks"]
                if c["id"] == "boot.isolation"
            )["data"]["asked"],
            sort_keys=True,
        )
        or "none"
    )
    asked_a = "none" if asked_a == "{}" else asked_a
    model_a = next(
        c for c in json.loads((a / "results.json").read_text())["doctor"]["checks"] if c["id"] == "sched.preemption"
    )["data"]
    model_a = model_a["model"] or f"booted as {model_a['booted_as']}"
    assert refused.stderr == (
        "launchgap: cannot pool: the host settings differ: boot isolation asked (nohz_full, isolcpus, rcu_nocbs, "
        f'irqaffinity) (plain: {asked_a}, nohz: {{"nohz_full": "1", "rcu_nocbs": "1"}}); preemption model '
        f"(plain: {model_a}, nohz: full)\n"
    )
    side = launchgap("experiment", "compare", str(a), str(b))
    assert side.returncode == 0
    shown = words(side.stdout)
    assert "host settings that differ:" in shown and f"preemption model: plain: {model_a}; nohz: full" in shown
    assert "compute/fifo:10" in shown


def test_compare_refuses_experiments_that_measure_different_things(small_grid, tmp_path):
    a = copy_results(small_grid, tmp_path / "a")

    def other_metric(results: dict) -> None:
        results["metric"], results["higher_is_better"] = "tok/s: ([0-9.]+)", True

    b = copy_results(small_grid, tmp_path / "b", other_metric)
    proc = launchgap("experiment", "compare", str(a), str(b))
    assert proc.returncode == 2
    assert proc.stderr == (
        "launchgap: the experiments measure different things (a: elapsed_s=([0-9.]+); b: tok/s: ([0-9.]+))\n"
    )
    older = copy_results(small_grid, tmp_path / "older", lambda r: (another_boot(r), r.pop("doctor")))
    proc = launchgap("experiment", "compare", str(a), str(older), "--pool")
    assert proc.stderr == (
        "launchgap: cannot pool: older recorded no host settings (results from before experiments "
        "ran the doctor), so whether they match is unknown\n"
    )
