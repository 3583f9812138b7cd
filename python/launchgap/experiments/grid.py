"""The kernel-tuning study's grid (shared/seeds/kernel-tuning-hpc.md, section 6.2): each workload class
under each scheduler policy, plus any other lever as a variant of SCHED_OTHER, every cell a scenario of
an ordinary experiment (interleaved, recorded, restored on every path). Each class is compared with its
own SCHED_OTHER cell.

    class:   compute | memory | io | mixed (workloads/levers' lever-workload), or "workload" (-- COMMAND)
    variant: a policy (other, batch, idle, fifo:P, rr:P), or a lever on SCHED_OTHER (isolate,
             isolate=root, irq-away, workqueue-away, timer-migration=0|1, preempt=MODEL), or several
             joined with "+" (isolate+irq-away+workqueue-away; rr:10+isolate for another policy)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from launchgap.experiments.levers import MitigationError, Policy
from launchgap.experiments.mitigations import Mitigations
from launchgap.experiments.results import GridInfo
from launchgap.experiments.scenarios import Scenario

REPO = Path(__file__).resolve().parents[3]
LEVER_WORKLOAD = REPO / "workloads" / "levers" / "build" / "lever-workload"
CLASSES = ("compute", "memory", "io", "mixed")
WRITING_CLASSES = ("io", "mixed")
CUSTOM_CLASS = "workload"
BASELINE = "other"
# the built-in workload's own measure: the work's elapsed time (set-up excluded), lower is better
ELAPSED_METRIC = r"elapsed_s=([0-9.]+)"
WORKER_THREADS = "lg-work-"
DEFAULT_POLICIES = "other,fifo:10,rr:10"
# --size bounds, as lever_workload.c checks them (MAX_ROWS, MAX_BYTES): checked here before any run
ROW_CLASSES = ("compute", "mixed")
MAX_ROWS = 1_000_000
MAX_BYTES = 64 << 30
SIZE_SUFFIXES = {"": 0, "k": 10, "m": 20, "g": 30}
LEVER_NAMES = (
    "isolate",
    "isolate=root",
    "irq-away",
    "workqueue-away",
    "timer-migration=0",
    "timer-migration=1",
    "preempt=none",
    "preempt=voluntary",
    "preempt=full",
    "preempt=lazy",
)


@dataclass(frozen=True)
class Cell:
    cls: str
    variant: str

    @property
    def name(self) -> str:
        return f"{self.cls}/{self.variant}"


def lever_options(variant: str) -> dict:
    """Mitigations keyword arguments for a lever variant ("isolate+irq-away")."""
    options: dict = {"policy": BASELINE}
    for part in variant.split("+"):
        name, _, value = part.strip().partition("=")
        if name in ("other", "batch", "idle", "fifo", "rr") and "=" not in part:
            options["policy"] = str(Policy.parse(part))
        elif name == "isolate":
            options["isolate"] = value or "isolated"
        elif name == "irq-away" and not value:
            options["irq_away"] = True
        elif name == "workqueue-away" and not value:
            options["workqueue_away"] = True
        elif name == "timer-migration" and value in ("0", "1"):
            options["timer_migration"] = int(value)
        elif name == "preempt" and value:
            options["preempt"] = value
        else:
            raise MitigationError(f"lever {part!r}: not one of {', '.join(LEVER_NAMES)} (join several with +)")
    return options


def check_size(cls: str, text: str) -> str:
    """The built-in workload's --size for CLASS as lever-workload takes it (N, with K, M or G for bytes),
    refused in one line (MitigationError) where lever-workload would refuse it after the warm-up."""
    match = re.fullmatch(r"([0-9]+)([kKmMgG]?)", text.strip())
    if not match:
        raise MitigationError(f"--size {cls}={text}: not a number (N, or N with K, M or G)")
    value = int(match.group(1)) << SIZE_SUFFIXES[match.group(2).lower()]
    if value < 1:
        raise MitigationError(f"--size {cls}={text}: must be at least 1")
    if cls in ROW_CLASSES and value > MAX_ROWS:
        raise MitigationError(f"--size {cls}={text}: at most {MAX_ROWS} rows for {cls} (the loop is N x N)")
    if cls not in ROW_CLASSES and value > MAX_BYTES:
        raise MitigationError(f"--size {cls}={text}: at most 64G bytes for {cls}")
    return match.group(0)


def parse_policies(text: str) -> list[str]:
    """Policies in the order given, SCHED_OTHER first (the baseline), each checked."""
    policies = [str(Policy.parse(p)) for p in text.split(",") if p.strip()]
    if not policies:
        raise MitigationError("--policies names no policy")
    if len(set(policies)) != len(policies):
        raise MitigationError(f"--policies names a policy twice ({text})")
    return [BASELINE] + [p for p in policies if p != BASELINE]


def parse_classes(text: str) -> list[str]:
    classes = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in classes if c not in CLASSES]
    if unknown or not classes:
        raise MitigationError(f"--classes: {', '.join(unknown) or 'none given'}: the classes are {', '.join(CLASSES)}")
    return list(dict.fromkeys(classes))


def builtin_command(
    cls: str, threads: int, cpus: list[int] | None, disturb: str | None, io_dir: Path, size: str | None
) -> list[str]:
    command = [str(LEVER_WORKLOAD), cls, "--threads", str(threads)]
    if cpus:
        command += ["--cpus", ",".join(map(str, cpus))]
    if disturb:
        command += ["--disturb", disturb]
    if cls in WRITING_CLASSES:
        command += ["--dir", str(io_dir)]
    if size:
        command += ["--size", size]
    return command


@dataclass(frozen=True, kw_only=True)
class LeverGrid:
    """The grid `experiment levers` asks for, each part checked there (commands.py): the classes of the
    built-in workload, or the user's own workload in every cell; the policies and lever variants; and how the
    built-in workload runs."""

    classes: list[str]
    policies: list[str]  # SCHED_OTHER first (parse_policies)
    lever_variants: list[str]
    threads: int
    cpus: list[int] | None
    disturb: str | None  # SPIN:PERIOD
    io_dir: Path
    sizes: dict[str, str]  # --size by class
    workload: list[str]  # -- WORKLOAD, run in every cell instead of the built-in workload; empty: none

    def scenarios(self) -> list[Scenario]:
        """Every cell as a scenario, the first class's SCHED_OTHER first (the warm-up runs it). Raises
        MitigationError where a variant is named twice."""
        variants = [(p, {"policy": p}) for p in self.policies] + [(v, lever_options(v)) for v in self.lever_variants]
        names = [v for v, _ in variants]
        if len(set(names)) != len(names):
            raise MitigationError(f"a variant is named twice: {', '.join(names)}")
        scenarios = []
        for cls in [CUSTOM_CLASS] if self.workload else self.classes:
            command = (
                None
                if self.workload
                else builtin_command(cls, self.threads, self.cpus, self.disturb, self.io_dir, self.sizes.get(cls))
            )
            for variant, options in variants:
                cell = Cell(cls, variant)
                mitigations = Mitigations(cpus=list(self.cpus) if self.cpus else None, **options)
                scenarios.append(
                    Scenario(
                        cell.name,
                        mitigations=mitigations,
                        command=command,
                        labels={"class": cls, "variant": variant, "baseline": f"{cls}/{BASELINE}"},
                    )
                )
        return scenarios

    def layout(self) -> GridInfo:
        """The grid's layout, as the results keep it."""
        return GridInfo(
            classes=[CUSTOM_CLASS] if self.workload else self.classes,
            variants=self.policies + self.lever_variants,
            baseline_variant=BASELINE,
            threads=self.threads,
            cpus=self.cpus,
            disturb=self.disturb,
            workload="custom" if self.workload else "lever-workload",
        )

    @property
    def focus_threads(self) -> str | None:
        """Whose time taken counts where no thread launches: the built-in workload's workers."""
        return None if self.workload else WORKER_THREADS
