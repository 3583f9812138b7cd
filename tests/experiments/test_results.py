"""results.json read through its one reader (experiments/results.py): the records keep nanoseconds, the
file keeps its milliseconds, and the two agree exactly; what is not the layout is refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from launchgap.experiments.results import (
    RESULTS_SCHEMA,
    ExperimentResults,
    GpuTimeOfRun,
    ResultsError,
    Run,
    RunOutcome,
    ScenarioInfo,
    TraceMeasures,
    Verified,
    read_results,
    results_from_json,
)


def written_run(**measures) -> dict:
    """A run as runner.py writes it, in results.json's order."""
    return {
        "exit_code": 0,
        "metric": 227.59,
        "wall_s": 1.2666379570000572,
        "verified": {"host": [], "enter": None, "threads_sampled": {}},
        "launches": 480,
        "sched_per_1k": 6.25,
        "softirq_per_1k": 0.0,
        "hardirq_per_1k": 2.08,
        "preempted_ms": 76.954321,
        "runqueue_ms": 77.238105,
        "irq_ms": 1.093657,
        "top_culprit": "opt cgu.09",
        "lost_events": 0,
        "gpu_time": {
            "mode": "exact",
            "why": None,
            "idle_caused_low_ns": 113040000,
            "idle_caused_high_ns": 113040000,
            "active_ns": 1200000000,
            "load_pids": [],
            "predicted_gain_low_percent": None,
            "predicted_gain_high_percent": None,
        },
        "index": 1,
        "round": 1,
        "scenario": "baseline",
        "warmup": False,
        "trace": "traces/001-baseline-r1.lg",
        **measures,
    }


def written(runs: list[dict], **more) -> dict:
    return {
        "schema": RESULTS_SCHEMA,
        "status": "complete",
        "command": ["w"],
        "repeat": 2,
        "seed": 7,
        "metric": "tok/s: ([0-9.]+)",
        "metric_name": "tok/s",
        "higher_is_better": True,
        "gpu_activity": True,
        "scenarios": [{"name": "baseline", "description": "no load; mitigations: none"}],
        "environment": {
            "hostname": "vm",
            "boot_id": "b",
            "kernel": "6.18",
            "machine": "x86_64",
            "cpu_model": None,
            "cpus": [0, 1],
            "governor": None,
            "isolated_cpus": "",
            "nohz_full": None,
            "cmdline": "ro",
            "preemption": None,
            "versions": {"launchgap": "0.1.0"},
        },
        "owner": {"pid": 1, "start_ticks": 2, "boot_id": "b"},
        "runs": runs,
        "doctor": {"checks": []},
        **more,
    }


def test_the_records_keep_nanoseconds_and_the_file_its_milliseconds():
    raw = written([written_run()], failed_runs=0)
    results = results_from_json(raw)
    measures = results.runs[0].measures
    assert (measures.preempted_ns, measures.runqueue_ns, measures.irq_ns) == (76954321, 77238105, 1093657)
    assert measures.gpu_time.idle_caused_low_ns == 113040000
    # written back, byte for byte the file it was read from (key order included)
    assert json.dumps(results.to_json(), indent=2) == json.dumps(raw, indent=2)


def test_a_time_survives_the_milliseconds_exactly():
    for ns in (0, 1, 999_999, 123_456_789, 86_400 * 10**9 + 7):
        run = Run.placed(RunOutcome(measures=TraceMeasures(preempted_ns=ns)), scenario="s", warmup=False)
        again = Run.from_json(json.loads(json.dumps(run.to_json())), "run")
        assert again.measures.preempted_ns == ns


def test_what_the_runner_builds_is_what_the_reader_reads():
    outcome = RunOutcome(
        exit_code=1,
        metric=None,
        wall_s=0.5,
        error="the command exited with status 1",
        verified=Verified(host=["cpuset lg: CPUs 1"]),
    )
    results = ExperimentResults(
        status="failed",
        metric="wall time (s)",
        higher_is_better=False,
        scenarios=[ScenarioInfo(name="compute/other", klass="compute", variant="other", baseline="compute/other")],
        runs=[Run.placed(outcome, index=0, round=0, scenario="compute/other", warmup=True)],
    )
    out = results.to_json()
    assert out["schema"] == RESULTS_SCHEMA and out["scenarios"][0]["class"] == "compute"
    assert "stderr" not in out["runs"][0] and "preempted_ms" not in out["runs"][0]  # no trace: no measures
    assert "grid" not in out and "host_not_restored" not in out
    assert results_from_json(json.loads(json.dumps(out))) == results


def test_results_from_before_a_measure_was_recorded_still_read():
    """Hand-written and older results: no gpu_time, no launches, no environment; only the ms times."""
    old = {
        "schema": RESULTS_SCHEMA,
        "status": "complete",
        "metric": "tok/s: ([0-9.]+)",
        "higher_is_better": True,
        "scenarios": [{"name": "baseline"}],
        "runs": [{"scenario": "baseline", "metric": 10.0, "warmup": False, "preempted_ms": 1.5}],
    }
    results = results_from_json(old)
    assert results.runs[0].measures == TraceMeasures(preempted_ns=1_500_000)
    assert results.metric_label == "tok/s" and results.environment is None and not results.is_grid
    assert results.measured("baseline") == results.runs


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda r: r["runs"][0].pop("warmup"), "runs[0].warmup: missing"),
        (lambda r: r["runs"][0].update(metric="fast"), "runs[0].metric: a number expected, found a string"),
        (lambda r: r["runs"][0].update(warmup="no"), "runs[0].warmup: true or false expected, found a string"),
        (lambda r: r["runs"][0].update(preempted_ms=float("inf")), "runs[0].preempted_ms: a finite number expected"),
        (
            lambda r: r["runs"][0]["gpu_time"].update(idle_caused_low_ns=None),
            "runs[0].gpu_time: mode exact without idle_caused_low_ns and idle_caused_high_ns",
        ),
        (lambda r: r["runs"].append(7), "runs[1]: an object expected, found a whole number"),
        (lambda r: r["scenarios"][0].pop("name"), "scenarios[0].name: missing"),
        (lambda r: r.update(higher_is_better=1), "higher_is_better: true or false expected, found a whole number"),
        (
            lambda r: r.update(environment={"versions": {"fio": 3}}),
            "environment.versions.fio: a string expected, found a whole number",
        ),
    ],
)
def test_damage_anywhere_is_said_where(change, problem):
    raw = written([written_run()])
    change(raw)
    with pytest.raises(ResultsError) as caught:
        results_from_json(raw)
    assert str(caught.value) == f"damaged experiment results ({problem})"


def test_the_reader_names_the_file(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"schema": "launchgap-experiment/0"}))
    with pytest.raises(ResultsError) as caught:
        read_results(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path / 'results.json'}: not an experiment's results (no schema {RESULTS_SCHEMA})"
    )


def test_experiment_show_refuses_damage_deep_in_a_run_in_one_line(tmp_path):
    raw = written([written_run(), written_run(scenario=["baseline"])])
    (tmp_path / "results.json").write_text(json.dumps(raw))
    proc = subprocess.run(
        [sys.executable, "-m", "launchgap.cli", "experiment", "show", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"launchgap: {tmp_path / 'results.json'}: damaged experiment results (runs[1].scenario: "
        f"a string expected, found a list)\n"
    )


def test_gpu_time_says_whether_it_was_estimated():
    assert GpuTimeOfRun(mode="bounds", idle_caused_low_ns=1, idle_caused_high_ns=2).estimated
    assert not GpuTimeOfRun(mode="none").estimated
