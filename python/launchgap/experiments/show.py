"""`experiment show`, also what every experiment ends with: its results read back (one line if they cannot
be), summary.json and the plots written beside them, the tables, and every problem said, with the exit
status that says the experiment did not measure what it should have."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from launchgap.cli_common import console, err_console, fail, note
from launchgap.console import literal, shown
from launchgap.experiments.results import RESULTS_FILE, ExperimentResults, ResultsError, read_results
from launchgap.experiments.summary import SummaryError, failures, plot, plot_grid, summarize_grid, summarize_results
from launchgap.output import OutputError, write_text
from launchgap.views.experiment import render_grid, render_scenarios

# exit status of an experiment that ran but did not measure what it should: failed runs, a host
# setting left changed
EXIT_EXPERIMENT_FAILED = 1

SUMMARY_FILE = "summary.json"


def results_or_fail(directory: Path) -> ExperimentResults:
    """DIRECTORY's results, or the one line that says why they cannot be read, and out."""
    try:
        return read_results(directory)
    except ResultsError as err:
        fail(str(err))


def host_not_restored(problems: list[str], outdir: Path) -> None:
    """The warning no one may miss: host settings left changed."""
    err_console.print(
        shown(
            "launchgap: WARNING: HOST SETTINGS LEFT CHANGED: could not put back "
            + "; ".join(map(str, problems))
            + f" (listed in {outdir / RESULTS_FILE}; restore "
            f"them by hand)"
        ),
        markup=False,
        highlight=False,
        style="bold red",
    )


def vm_caution(results: ExperimentResults) -> str | None:
    """The doctor's virtualisation verdict, when the experiment ran in a VM (the study's caution)."""
    for check in (results.doctor or {}).get("checks", []):
        if check.get("id") == "cpu.hypervisor" and check.get("status") == "warn":
            return f"caution: {check['summary']}"
    return None


def show(outdir: Path) -> None:
    """The experiment in OUTDIR: a lever grid's cells, or the scenarios against the baseline."""
    results = results_or_fail(outdir)
    grid = results.is_grid
    try:
        summary = summarize_grid(results) if grid else summarize_results(results)
    except SummaryError as err:
        fail(f"{outdir / RESULTS_FILE}: damaged experiment results ({err})")
    written = []
    plots = "the plot" if grid else "the plots"
    try:
        write_text(outdir / SUMMARY_FILE, json.dumps(summary, indent=2))
        written = [outdir / SUMMARY_FILE, *(plot_grid if grid else plot)(results, summary, outdir)]
    except (OSError, OutputError) as err:
        # a read-only place, say: the tables are still worth showing
        note(f"note: {outdir}: {SUMMARY_FILE} and {plots} were not written ({getattr(err, 'strerror', None) or err})")
    (render_grid if grid else render_scenarios)(results, summary, console)
    if written:
        console.print(
            literal(
                f"per-run data: {outdir / RESULTS_FILE}; statistics: {outdir / SUMMARY_FILE}; "
                f"{'plot' if grid else 'plots'}: " + ", ".join(str(p) for p in written[1:])
            )
        )
    caution = vm_caution(results) if grid else None
    if caution:
        note(caution)
    problems = failures(results, summary)
    for line in problems:
        note(line)
    if results.host_not_restored:
        host_not_restored(results.host_not_restored, outdir)
    if problems or results.host_not_restored or results.ended_badly:
        sys.exit(EXIT_EXPERIMENT_FAILED)
