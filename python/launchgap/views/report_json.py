"""The report and the diff as JSON (docs/report-schema.md): the records' numbers, and every fact in them (the
verdict's grounds, the caveats, the warnings) in the words the terminal says them in (verdict_words.say)."""

from __future__ import annotations

from launchgap.analysis.records import Record
from launchgap.analysis.report import build_report
from launchgap.trace import Trace
from launchgap.views.verdict_words import say


def document(record: Record) -> dict:
    """A report, or a diff of two (`report --json`, `diff --json`), as JSON."""
    return record.to_json(say)


def report_json(trace: Trace) -> dict:
    """The report of TRACE as JSON."""
    return document(build_report(trace))
