"""What an experiment is asked to do, made once from a command's options and checked there, as the
recorder's RecordConfig is made from its flags: an ExperimentPlan, with the Metric it measures. Past the
command (commands.py), nothing sees click's options: start.py and runner.py take the plan whole.

What the options alone can get wrong is the plan's `problem`; what the host allows (root, the recorder,
each scenario's levers and loads) is runner.preflight's, checked next, before the warm-up run."""

from __future__ import annotations

import os
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path

from launchgap.experiments.results import WALL_METRIC, GridInfo, metric_name
from launchgap.experiments.scenarios import Scenario


@dataclass(frozen=True)
class Metric:
    """The workload's own measure of speed: a regex over its output, or wall time."""

    pattern: str | None  # None: wall time
    higher: bool | None = None  # None: a pattern is a throughput (higher is better), wall time is not
    label: str | None = None  # what it is called (--metric-name); None: named after the pattern

    @classmethod
    def of_option(cls, text: str, label: str | None, higher: bool | None = None) -> Metric:
        """The measure --metric TEXT names ('wall', or a regex), called LABEL (--metric-name)."""
        return cls(None if text == "wall" else text, higher=higher, label=label)

    @property
    def name(self) -> str:
        """What identifies the measure (experiments are compared only when theirs are the same): the pattern."""
        return WALL_METRIC if self.pattern is None else self.pattern

    @property
    def shown_name(self) -> str:
        """What tables and plots call it: the label given, else the text beside the number in the pattern."""
        if self.label:
            return self.label
        return WALL_METRIC if self.pattern is None else metric_name(self.pattern)

    @property
    def higher_is_better(self) -> bool:
        return self.pattern is not None if self.higher is None else self.higher

    def check(self) -> None:
        """Raises ExperimentError if the pattern is not a regular expression with at most one group, or the
        label is not a short line of text."""
        if self.label is not None:
            problem = metric_label_problem(self.label)
            if problem:
                raise ExperimentError(f"--metric-name {self.label!r}: {problem}")
        if self.pattern is None:
            return
        try:
            compiled = re.compile(self.pattern)
        except re.error as err:
            raise ExperimentError(f"--metric {self.pattern!r}: not a regular expression ({err})") from None
        if compiled.groups > 1:
            raise ExperimentError(f"--metric {self.pattern!r}: {compiled.groups} groups; give one, around the number")

    def missing(self, output: str) -> str:
        """Why read() found no value in OUTPUT."""
        found = list(re.finditer(self.pattern or "", output))
        if found:
            last = found[-1]
            text = last.group(1) if last.re.groups else last.group(0)
            return f"the metric {self.name!r} matched {text!r}, which is not a number"
        tail = output.strip().splitlines()[-1][:120] if output.strip() else None
        return f"the metric {self.name!r} was not in the output" + (
            f" (its last line: {tail!r})" if tail else " (it printed nothing)"
        )

    def read(self, output: str, wall_s: float) -> float | None:
        """The last match's first group (or the whole match, without groups), as a number; None if absent."""
        if self.pattern is None:
            return wall_s
        found = list(re.finditer(self.pattern, output))
        if not found:
            return None
        last = found[-1]
        try:
            return float(last.group(1) if last.re.groups else last.group(0))
        except (TypeError, ValueError):
            return None


# a metric's name heads tables and plots: one short line
MAX_METRIC_LABEL = 60


def metric_label_problem(label: str) -> str | None:
    """Why LABEL cannot name a metric, or None."""
    if not label.strip():
        return "empty; give the measure's name (e.g. tok/s)"
    if not label.isprintable():
        return "holds a control character or a line break; give one line of text"
    if len(label) > MAX_METRIC_LABEL:
        return f"{len(label)} characters; at most {MAX_METRIC_LABEL}"
    return None


class ExperimentError(RuntimeError):
    """The experiment cannot start or go on (message says why, on one line)."""


# runs per scenario: far more than statistics need, and each run is a recorded trace on disk
MAX_REPEAT = 1000


@dataclass(frozen=True, kw_only=True)
class ExperimentPlan:
    """One experiment command's options, as what runs it needs them."""

    scenarios: list[Scenario]
    command: list[str]  # the workload, after --; empty where every scenario runs its own (a grid's built-in)
    repeat: int  # measured runs per scenario, after one warm-up
    metric: Metric
    outdir: Path  # the results directory
    seed: int  # the run order's
    disk_dir: Path | None = None  # where the disk load writes (--disk-dir; None: its default)
    allow_rt_unthrottled: bool = False
    gpu_activity: bool = False  # every run recorded with --gpu-activity
    grid: GridInfo | None = None  # a lever grid's layout, kept with the results
    # whose time taken counts where no thread launches: those named so (the lever workload's workers)
    focus_threads: str | None = None

    def problem(self) -> str | None:
        """What in the options makes the experiment impossible, in one line, or None: checked before anything
        runs, the host included."""
        if not self.command and not self._every_scenario_runs_its_own():
            return "a command to run is required after --"
        if self.repeat < 2:
            return "--repeat must be at least 2 (statistics need a spread)"
        if self.repeat > MAX_REPEAT:
            return f"--repeat {self.repeat}: at most {MAX_REPEAT} runs per scenario"
        problem = results_dir_problem(self.outdir)
        return f"-o {self.outdir}: {problem}" if problem else None

    def _every_scenario_runs_its_own(self) -> bool:
        return bool(self.scenarios) and all(s.command for s in self.scenarios)


def results_directory(output: str | None, kind: str) -> Path:
    """-o OUTPUT, or results/KIND-TIME."""
    return Path(output or f"results/{kind}-{time.strftime('%Y%m%d-%H%M%S')}")


def seed_or_random(seed: int | None) -> int:
    """--seed, or one chosen at random (the experiment prints it, so that its run order can be repeated)."""
    return seed if seed is not None else random.randrange(1 << 31)


def results_dir_problem(outdir: Path) -> str | None:
    """Why OUTDIR cannot hold an experiment's results (checked before anything runs), or None."""
    resolved = Path(os.path.realpath(outdir))
    for tree in ("proc", "sys", "dev"):
        if resolved == Path("/", tree) or Path("/", tree) in resolved.parents:
            if tree == "dev" and Path("/dev/shm") in [resolved, *resolved.parents]:
                break
            return f"is in the kernel's {tree} file system, not a place for results"
    existing = resolved
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None
