"""The plan an experiment command makes of its options (plan.py): what the options alone get wrong is its
`problem`, one line, before the host is asked anything; a lever grid's cells and layout come from one
LeverGrid. No root, nothing run."""

from __future__ import annotations

from pathlib import Path

from launchgap.experiments.grid import BASELINE, CUSTOM_CLASS, WORKER_THREADS, LeverGrid
from launchgap.experiments.plan import MAX_REPEAT, ExperimentPlan, Metric, results_directory
from launchgap.experiments.scenarios import Scenario


def plan_of(tmp_path: Path, **options) -> ExperimentPlan:
    chosen = dict(
        scenarios=[Scenario("baseline")], command=["true"], repeat=2, metric=Metric(None), outdir=tmp_path / "out"
    )
    return ExperimentPlan(**(chosen | options), seed=1)


def test_a_plan_the_options_allow_has_no_problem(tmp_path):
    assert plan_of(tmp_path).problem() is None
    assert plan_of(tmp_path, repeat=MAX_REPEAT).problem() is None


def test_each_option_the_plan_refuses_is_said_in_one_line(tmp_path):
    assert plan_of(tmp_path, command=[]).problem() == "a command to run is required after --"
    assert plan_of(tmp_path, repeat=1).problem() == "--repeat must be at least 2 (statistics need a spread)"
    assert plan_of(tmp_path, repeat=MAX_REPEAT + 1).problem() == (
        f"--repeat {MAX_REPEAT + 1}: at most {MAX_REPEAT} runs per scenario"
    )
    assert plan_of(tmp_path, outdir=Path("/proc/out")).problem() == (
        "-o /proc/out: is in the kernel's proc file system, not a place for results"
    )


def test_a_command_is_needed_unless_every_scenario_runs_its_own(tmp_path):
    own = Scenario("compute/other", command=["lever-workload", "compute"])
    assert plan_of(tmp_path, command=[], scenarios=[own]).problem() is None
    assert plan_of(tmp_path, command=[], scenarios=[own, Scenario("baseline")]).problem() == (
        "a command to run is required after --"
    )
    # no scenario at all runs nothing of its own
    assert plan_of(tmp_path, command=[], scenarios=[]).problem() == "a command to run is required after --"


def test_the_metric_option_wall_is_wall_time():
    assert Metric.of_option("wall", None) == Metric(None)
    assert Metric.of_option(r"x=([0-9]+)", "x", higher=False) == Metric(r"x=([0-9]+)", higher=False, label="x")


def test_the_results_directory_is_the_option_else_named_after_the_command():
    assert results_directory("mine", "levers") == Path("mine")
    assert results_directory(None, "levers").name.startswith("levers-")
    assert results_directory(None, "levers").parent == Path("results")


def grid_of(workload: list[str]) -> LeverGrid:
    return LeverGrid(
        classes=["compute", "io"],
        policies=[BASELINE, "fifo:10"],
        lever_variants=["irq-away"],
        threads=2,
        cpus=[1],
        disturb=None,
        io_dir=Path("/var/tmp"),
        sizes={"io": "1M"},
        workload=workload,
    )


def test_a_grid_of_the_built_in_workload_runs_it_in_every_cell():
    grid = grid_of([])
    scenarios = grid.scenarios()
    assert [s.name for s in scenarios] == [
        "compute/other",
        "compute/fifo:10",
        "compute/irq-away",
        "io/other",
        "io/fifo:10",
        "io/irq-away",
    ]
    assert all(s.command and s.mitigations.cpus == [1] for s in scenarios)
    assert scenarios[3].command[-4:] == ["--dir", "/var/tmp", "--size", "1M"]
    assert grid.focus_threads == WORKER_THREADS
    layout = grid.layout()
    assert (layout.classes, layout.variants, layout.workload) == (
        ["compute", "io"],
        ["other", "fifo:10", "irq-away"],
        "lever-workload",
    )


def test_a_grid_of_the_users_workload_has_one_class_and_runs_the_plans_command():
    grid = grid_of(["my-job"])
    scenarios = grid.scenarios()
    assert [s.name for s in scenarios] == [
        f"{CUSTOM_CLASS}/other",
        f"{CUSTOM_CLASS}/fifo:10",
        f"{CUSTOM_CLASS}/irq-away",
    ]
    assert all(s.command is None for s in scenarios)
    assert grid.focus_threads is None
    assert (grid.layout().classes, grid.layout().workload) == ([CUSTOM_CLASS], "custom")
