"""The doctor's terminal view, over the result dict (the JSON form). Text objects (never markup); what the
checks read from the host or a trace is shown through shown(): control characters visible."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from launchgap.console import shown
from launchgap.doctor.parse import format_cpus

STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "unknown": "magenta"}
STATUS_WIDTH = 10


def _cpus(cpus: list[int]) -> str:
    return format_cpus(cpus)


def _line(status: str | None, text: str, style: str = "") -> Text:
    head = (
        Text(shown(f"  {status:<{STATUS_WIDTH - 2}}"), style=STYLE.get(status, ""))
        if status
        else Text(" " * STATUS_WIDTH)
    )
    return head + Text(shown(text), style=style)


def render_doctor(result: dict, console: Console, evidence: bool = True) -> None:
    target = result["target"]
    head = f"launchgap doctor: {result['host']} (kernel {result['kernel'] or '?'}, CPUs {result['online_cpus'] or '?'})"
    if target:
        head += f"; target: {target['description']} ({_cpus(target['cpus'])})"
    console.print(Text(shown(head), style="bold"))
    area = None
    for check in result["checks"]:
        if check["area"] != area:
            area = check["area"]
            console.print(Text(shown(area), style="bold underline"))
        console.print(_line(check["status"], f"{check['title']}: ", "bold") + Text(shown(check["summary"])))
        if evidence:
            for item in check["evidence"]:
                console.print(_line(None, f"{item['path']}: {item['value']}", "dim"))
        if check["fix"] and check["status"] != "ok":
            console.print(_line(None, f"fix: {check['fix']}", "cyan"))
    counts = result["counts"]
    console.print(Text(", ".join(f"{counts[s]} {s}" for s in ("ok", "warn", "fail", "unknown")), style="bold"))


def render_host_checks(section: dict, console: Console) -> None:
    """The report's part: the doctor's verdicts that bear on the run."""
    target = section["target"]
    console.print(
        Text(
            shown(f"Host settings at record time (doctor; {target['description']}: {_cpus(target['cpus'])})"),
            style="bold",
        )
    )
    for check in section["checks"]:
        console.print(_line(check["status"], f"{check['title']}: ", "bold") + Text(shown(check["summary"])))
        if check["fix"] and check["status"] in ("warn", "fail"):
            console.print(_line(None, f"fix: {check['fix']}", "cyan"))
    counts = section["counts"]
    console.print(
        Text(
            "  all checks: "
            + ", ".join(f"{counts[s]} {s}" for s in ("ok", "warn", "fail", "unknown"))
            + " (launchgap doctor on the host for the rest)",
            style="dim",
        )
    )
