"""Issue 35, item 1: the analysis returns numbers and typed facts, never a sentence; every sentence is made once,
in views/verdict_words.py, and the terminal and the JSON say each fact in the same words. The trace is built by
hand: a task whose switch back to the workload was never traced (a caveat) in a recording whose recorder was
killed (a warning, and a verdict on part of a trace)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from launchgap.analysis.records import CpuTimeGrounds, IncompleteTrace, OnIncompleteTrace, SilentTaskCaveat
from launchgap.analysis.report import build_report
from launchgap.trace.checks import SilentTask
from launchgap.views.report_json import document
from launchgap.views.terminal import render
from launchgap.views.verdict_words import say, verdict_text
from tests.analysis.builder import IDLE, TraceBuilder

T = (100, 101, "gpu-launcher")
HOG = (200, 200, "hog")
AGENT = (74, 74, "agent")
ENDED_EARLY = "the recorder did not stop cleanly, so the trace ends early"


@pytest.fixture
def report(tmp_path):
    b = TraceBuilder()
    b.switch(2_000, 0, IDLE, T)
    b.launch(3_000, 0, T)
    b.switch(10_000, 0, T, AGENT)  # the agent runs; its switch back to T is never traced
    b.switch(40_000, 0, T, HOG)
    b.switch(50_000, 0, HOG, T)
    return build_report(b.write(tmp_path / "t.lg", clean_end=False))


def test_the_analysis_returns_facts(report):
    grounds = report.verdict.grounds
    assert isinstance(grounds, OnIncompleteTrace) and grounds.trace == IncompleteTrace(ended_early=True, damage=[])
    assert isinstance(grounds.grounds, CpuTimeGrounds) and grounds.grounds.level == report.verdict.level
    # the agent ran from 10 us to 40 us while T waited: 30 us of the 40 us taken (T preempted from 10 us to 50 us)
    assert report.trace.caveats == [
        SilentTaskCaveat(
            task=SilentTask(pid=74, tid=74, comm="agent", switch_ins=1),
            waited_ns=30_000,
            taken_ns=40_000,
            share_percent=75.0,
        )
    ]
    assert report.warnings == {"trace": IncompleteTrace(ended_early=True, damage=[])}
    with pytest.raises(TypeError, match="said in words"):
        report.to_json()  # a fact has no JSON but its words


def test_the_json_and_the_terminal_say_the_same_words(report):
    as_json = document(report)
    assert as_json["verdict"]["text"] == verdict_text(report.verdict)
    assert as_json["verdict"]["text"].startswith(f"This trace is incomplete ({ENDED_EARLY}): every count and time")
    assert as_json["trace"]["caveats"] == [say(c) for c in report.trace.caveats]
    assert as_json["trace"]["caveats"][0].startswith("agent (74/74) was switched in once but its switch-outs")
    assert as_json["warnings"] == {"trace": f"incomplete: {ENDED_EARLY}"}
    out = io.StringIO()
    render(report, Console(file=out, width=200), verbose=True)
    shown = " ".join(out.getvalue().split())
    assert " ".join(as_json["verdict"]["text"].split()) in shown
    assert f"caveat: {as_json['trace']['caveats'][0]}" in shown
    assert f"warning: trace: incomplete: {ENDED_EARLY}" in shown
