"""An experiment's results as typed records: what runner.py builds and writes to results.json after every
run, and what every reader (experiment show and compare, summary.py, a lever grid's table) reads back by
attribute, through one validating reader: `read_results` (a directory) or `results_from_json` (a value).

results.json is the edge. Its layout is schema launchgap-experiment/1, which users' files hold: the time
taken from the workload is written there in milliseconds (`preempted_ms`, `runqueue_ms`, `irq_ms`), while
the records keep nanoseconds as the report does; the conversion is made here, both ways, and a run's value
survives it exactly (ms = ns / 1e6, and round(ms * 1e6) = ns). Milliseconds are otherwise only shown.

A results.json is the user's file, and anyone may have written it: whatever is not the layout below is
refused by the reader in one line (ResultsError), never met later as a KeyError. Keys it does not know are
ignored, so that results with more in them (a later launchgap's) still read."""

from __future__ import annotations

import math
import types
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Union, get_args, get_origin, get_type_hints

from launchgap.analysis.records import Record, json_key
from launchgap.inputs import InputError, JsonError, read_json

RESULTS_SCHEMA = "launchgap-experiment/1"
RESULTS_FILE = "results.json"

# the measure when no pattern is given (runner.Metric)
WALL_METRIC = "wall time (s)"


# ---- the field metadata that shape results.json (ResultsRecord.to_json and from_json) ---------------------


def in_ms(key: str) -> dict:
    """A time the record keeps in ns and results.json in ms, under KEY."""
    return {"key": key, "ms": True}


# written only when not None (a run that failed has an "error", the others none)
OMITTED_WHEN_NONE = {"omit_none": True}
# a record whose keys stand in its parent's object, not in an object of their own (present when any is)
FLATTENED = {"flatten": True}


class ResultsError(ValueError):
    """Not an experiment's results, or damaged ones: the message says so, on one line, with the file."""


class ResultsRecord(Record):
    """A Record with results.json's layout: times in ms where the metadata says so, some keys written only
    when set, a record's keys flattened into its parent's; and the one reader of that layout."""

    def to_json(self) -> dict:
        out: dict = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("flatten"):
                out.update(value.to_json() if value is not None else {})
            elif value is None and f.metadata.get("omit_none"):
                continue
            elif f.metadata.get("ms"):
                out[json_key(f)] = None if value is None else value / 1e6
            else:
                out[json_key(f)] = _json(value)
        return out

    @classmethod
    def from_json(cls, value: object, where: str):
        if not isinstance(value, dict):
            raise ResultsError(f"{where}: {_expected(dict)} expected, found {_found(value)}")
        hints = get_type_hints(cls)
        kwargs = {}
        for f in fields(cls):
            kind, key = hints[f.name], json_key(f)
            if f.metadata.get("flatten"):
                inner = _record_of(kind)
                present = any(json_key(g) in value for g in fields(inner))
                kwargs[f.name] = inner.from_json(value, where) if present else None
                continue
            if key not in value:
                if f.default is MISSING and f.default_factory is MISSING:
                    raise ResultsError(f"{_at(where, key)}: missing")
                continue
            if f.metadata.get("ms"):
                kwargs[f.name] = _ns_of_ms(value[key], _at(where, key))
            else:
                kwargs[f.name] = _decode(value[key], kind, _at(where, key))
        record = cls(**kwargs)
        problem = record.problem()
        if problem:
            raise ResultsError(f"{where}: {problem}" if where else problem)
        return record

    def problem(self) -> str | None:
        """What makes the record inconsistent though each value has its type, or None."""
        return None


def _ns_of_ms(value: object, where: str) -> int | None:
    """A time results.json keeps in ms, in ns (exactly the ns it was written from)."""
    ms = _decode(value, float | None, where)
    if ms is None:
        return None
    if not math.isfinite(ms):
        raise ResultsError(f"{where}: a finite number expected")
    return round(ms * 1e6)


def _json(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _record_of(kind) -> type[ResultsRecord]:
    """The record type in X | None."""
    return next(a for a in get_args(kind) if a is not type(None))


def _expected(kind) -> str:
    names = {
        bool: "true or false",
        int: "a whole number",
        float: "a number",
        str: "a string",
        dict: "an object",
        list: "a list",
    }
    return names.get(get_origin(kind) or kind, "an object")


def _found(value: object) -> str:
    # the kind of value, never the value itself: it may be hostile text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    return {int: "a whole number", float: "a number", str: "a string", dict: "an object", list: "a list"}.get(
        type(value), type(value).__name__
    )


def _decode(value: object, kind, where: str):
    """VALUE checked to be KIND (a JSON value: None, bool, int, float, str, list[X], dict[str, X], dict (an
    object another module describes), a ResultsRecord, or X | None); ResultsError saying where, if not."""
    origin, args = get_origin(kind), get_args(kind)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        return _decode(value, next(a for a in args if a is not type(None)), where)
    if isinstance(kind, type) and issubclass(kind, ResultsRecord):
        return kind.from_json(value, where)
    ok = {
        bool: lambda v: isinstance(v, bool),
        int: lambda v: isinstance(v, int) and not isinstance(v, bool),
        float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        str: lambda v: isinstance(v, str),
        list: lambda v: isinstance(v, list),
        dict: lambda v: isinstance(v, dict),
    }[origin or kind]
    if not ok(value):
        raise ResultsError(f"{where}: {_expected(kind)} expected, found {_found(value)}")
    if origin is list:
        return [_decode(v, args[0], f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        return {k: _decode(v, args[1], _at(where, k)) for k, v in value.items()}
    return value


# ---- the records, in results.json's order -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ScenarioInfo(ResultsRecord):
    """A scenario as the results name and describe it; a lever grid's cell also says its class, its variant
    and the cell it is compared with (Scenario.labels)."""

    name: str
    description: str | None = None
    klass: str | None = field(default=None, metadata={"key": "class", **OMITTED_WHEN_NONE})
    variant: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    baseline: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    command: list[str] | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # its own workload (a grid's)

    @classmethod
    def of(cls, scenario) -> ScenarioInfo:
        labels = {("klass" if key == "class" else key): value for key, value in scenario.labels.items()}
        return cls(name=scenario.name, description=scenario.describe(), **labels, command=scenario.command or None)


@dataclass(frozen=True, kw_only=True)
class Environment(ResultsRecord):
    """The host as the experiment started (runner.environment): what a comparison across boots and hosts
    shows, and refuses to pool when it differs."""

    hostname: str | None = None
    boot_id: str | None = None
    kernel: str | None = None
    machine: str | None = None
    cpu_model: str | None = None
    cpus: list[int] | None = None
    governor: str | None = None
    isolated_cpus: str | None = None
    nohz_full: str | None = None
    cmdline: str | None = None
    preemption: str | None = None
    versions: dict[str, str] | None = None  # launchgap, python, stress-ng, iperf3, fio


@dataclass(frozen=True, kw_only=True)
class Owner(ResultsRecord):
    """The process that ran the experiment (journal.owner): whether it still runs, and which experiment a
    copy of its results is."""

    pid: int | None = None
    start_ticks: int | None = None
    boot_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Verified(ResultsRecord):
    """What a run's settings read back as: the host levers, the workload's own view (enter.py's report),
    its threads as sampled, and the trace's check (verify.trace_check); the last two in their producers'
    layout."""

    host: list[str] = field(default_factory=list)
    enter: dict | None = None
    threads_sampled: dict = field(default_factory=dict)
    trace: dict | None = field(default=None, metadata=OMITTED_WHEN_NONE)


@dataclass(frozen=True, kw_only=True)
class GpuTimeOfRun(ResultsRecord):
    """What the run's GPU lost to interference, from its report's gpu_time (docs/gpu-time.md): exact with
    GPU activity, bounds otherwise; and the throughput gain its trace predicts without the scenario's load."""

    mode: str  # "exact", "bounds" or "none"
    why: str | None = None
    idle_caused_low_ns: int | None = None
    idle_caused_high_ns: int | None = None
    active_ns: int | None = None
    load_pids: list[int] = field(default_factory=list)
    predicted_gain_low_percent: float | None = None
    predicted_gain_high_percent: float | None = None  # None: the GPU idle's upper bound covered the run

    @property
    def estimated(self) -> bool:
        return self.mode in ("exact", "bounds")

    def problem(self) -> str | None:
        if self.estimated and (self.idle_caused_low_ns is None or self.idle_caused_high_ns is None):
            return f"mode {self.mode} without idle_caused_low_ns and idle_caused_high_ns"
        return None


@dataclass(frozen=True, kw_only=True)
class TraceMeasures(ResultsRecord):
    """What a run's trace says was taken from the workload (runner._trace_measures): absent when the run
    left no trace. Results from before a measure was recorded lack it (None)."""

    launches: int | None = None
    sched_per_1k: float | None = None
    softirq_per_1k: float | None = None
    hardirq_per_1k: float | None = None
    preempted_ns: int | None = field(default=None, metadata=in_ms("preempted_ms"))
    runqueue_ns: int | None = field(default=None, metadata=in_ms("runqueue_ms"))
    irq_ns: int | None = field(default=None, metadata=in_ms("irq_ms"))
    top_culprit: str | None = None
    lost_events: int | None = None
    gpu_time: GpuTimeOfRun | None = None


@dataclass(frozen=True, kw_only=True)
class RunOutcome(ResultsRecord):
    """What one run gave (runner.run_once): its exit status and measure, why it failed, what was verified,
    and what its trace says."""

    exit_code: int | None = None
    metric: float | None = None  # None: the measure was not in the output
    wall_s: float | None = None
    stderr: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # a failed run's whole stderr, kept
    error: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    verified: Verified | None = None
    measures: TraceMeasures | None = field(default=None, metadata=FLATTENED)


@dataclass(frozen=True, kw_only=True)
class Run(RunOutcome):
    """A run in the experiment's order: which, of which scenario, in which round (0: the warm-up)."""

    index: int | None = None
    round: int | None = None
    scenario: str
    warmup: bool
    trace: str | None = None  # relative to the results directory

    @classmethod
    def placed(cls, outcome: RunOutcome, **where) -> Run:
        return cls(**{f.name: getattr(outcome, f.name) for f in fields(RunOutcome)}, **where)

    @property
    def gave_value(self) -> bool:
        """It ran to the end and its measure was read: it counts in the statistics (when not the warm-up)."""
        return self.metric is not None and not self.error

    @property
    def trace_verified(self) -> bool:
        """Its trace showed every setting in effect (verify.trace_check)."""
        return bool(((self.verified.trace if self.verified else None) or {}).get("verified"))


@dataclass(frozen=True, kw_only=True)
class GridInfo(ResultsRecord):
    """A lever grid's layout (`experiment levers`): its classes and variants, the variant every cell is
    compared with, and how the workload ran."""

    classes: list[str] | None = None
    variants: list[str] | None = None
    baseline_variant: str | None = None
    threads: int | None = None
    cpus: list[int] | None = None
    disturb: str | None = None
    workload: str | None = None  # "lever-workload" or "custom"


@dataclass(kw_only=True)
class ExperimentResults(ResultsRecord):
    """results.json. Not frozen: the runner fills it in as the runs finish, and writes it after each."""

    schema: ClassVar[str] = RESULTS_SCHEMA
    status: str  # running, complete, incomplete, failed, killed
    command: list[str] | None = None
    repeat: int | None = None
    seed: int | None = None
    metric: str  # the measure as given: a regex, or WALL_METRIC
    metric_name: str | None = None  # what it is called; results from before names were recorded lack it
    higher_is_better: bool
    gpu_activity: bool | None = None
    scenarios: list[ScenarioInfo]
    environment: Environment | None = None
    owner: Owner | None = None
    runs: list[Run]
    doctor: dict | None = None  # the doctor's checks as it started (doctor/model.py's to_dict)
    grid: GridInfo | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    failed_runs: int | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    error: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    host_not_restored: list[str] | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    killed: dict | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # custodian.py's account

    def to_json(self) -> dict:
        return {"schema": self.schema, **super().to_json()}

    @property
    def metric_label(self) -> str:
        """The name the metric is shown by: the one recorded (--metric-name, or derived from the pattern),
        else derived from the pattern (results from before names were recorded)."""
        if self.metric_name is not None and self.metric_name.strip():
            return self.metric_name
        return self.metric if self.metric == WALL_METRIC else metric_name(self.metric)

    @property
    def is_grid(self) -> bool:
        return self.grid is not None

    def measured(self, scenario: str) -> list[Run]:
        """SCENARIO's runs that count: not the warm-up, and each gave a value."""
        return [r for r in self.runs if r.scenario == scenario and not r.warmup and r.gave_value]

    def failed(self, scenario: str) -> list[Run]:
        """SCENARIO's measured (not warm-up) runs that gave no value: the command failed, or the metric was
        absent."""
        return [r for r in self.runs if r.scenario == scenario and not r.warmup and not r.gave_value]

    @property
    def ended_badly(self) -> bool:
        return self.status in ("failed", "killed")


# what an experiment's results cannot do without: the rest may be missing from older or hand-written ones
REQUIRED = ("status", "metric", "higher_is_better", "scenarios", "runs")


def results_from_json(value: object) -> ExperimentResults:
    """VALUE (results.json, parsed) as the record; ResultsError with the problem (its file not said) if it
    is not an experiment's results or is damaged."""
    if not isinstance(value, dict) or value.get("schema") != RESULTS_SCHEMA:
        raise ResultsError(f"not an experiment's results (no schema {RESULTS_SCHEMA})")
    missing = [k for k in REQUIRED if k not in value]
    if missing or not isinstance(value["runs"], list) or not isinstance(value["scenarios"], list):
        raise ResultsError(
            f"damaged experiment results (missing or malformed: {', '.join(missing) or 'runs/scenarios'})"
        )
    try:
        return ExperimentResults.from_json(value, "")
    except ResultsError as err:
        raise ResultsError(f"damaged experiment results ({err})") from None


def read_results(directory: Path) -> ExperimentResults:
    """DIRECTORY's results.json as the record, or ResultsError saying, on one line, why it cannot be read."""
    path = directory / RESULTS_FILE
    try:
        value = read_json(path)
    except OSError as err:
        raise ResultsError(f"{directory}: no readable {RESULTS_FILE} ({err.strerror or err})") from None
    except JsonError as err:
        raise ResultsError(f"{path}: not an experiment's results (not JSON: {err.problem})") from None
    except InputError as err:
        raise ResultsError(f"{path}: not an experiment's results ({err.problem})") from None
    try:
        return results_from_json(value)
    except ResultsError as err:
        raise ResultsError(f"{path}: {err}") from None


# ---- the metric's name ----------------------------------------------------------------------------------

try:
    from re import _parser as _regex_parser  # Python 3.11+: the re module's own parser
except ImportError:  # Python 3.10
    import sre_parse as _regex_parser  # type: ignore[no-redef]

# trimmed from the text around a metric's number to name it ("tok/s: " -> "tok/s")
NAME_TRIM = " \t:="


def _holds_group(item) -> bool:
    """Whether a parsed regex item is, or holds, a capturing group."""
    op, av = item
    if op is _regex_parser.SUBPATTERN and av[0] is not None:
        return True
    stack = [av]
    while stack:
        value = stack.pop()
        if isinstance(value, _regex_parser.SubPattern):
            if any(_holds_group(inner) for inner in value):
                return True
        elif isinstance(value, (tuple, list)):
            stack.extend(value)
    return False


def metric_name(pattern: str) -> str:
    """A metric's name from its regex: the literal text just before the group that captures the number
    (after it when none comes before), trimmed of spaces, ':' and '=': "tok/s: ([0-9.]+)" -> "tok/s",
    "elapsed_s=([0-9.]+)" -> "elapsed_s", "([0-9.]+) tok/s" -> "tok/s". The pattern itself when no literal
    text is next to the number (give --metric-name then)."""
    try:
        items = list(_regex_parser.parse(pattern))
    except Exception:  # noqa: BLE001 - not a regex the parser knows: the pattern is its own name
        return pattern
    runs: list[list[str]] = [[]]
    group = None
    for op, av in items:
        if op is _regex_parser.LITERAL:
            runs[-1].append(chr(av))
        elif group is None and _holds_group((op, av)):
            group = len(runs)
            runs.append([])
        else:
            runs.append([])
    names = ["".join(run).strip(NAME_TRIM) for run in runs]
    before = [n for n in names[:group] if n] if group is not None else []
    after = [n for n in names[group:] if n] if group is not None else [n for n in names if n]
    return before[-1] if before else after[0] if after else pattern
