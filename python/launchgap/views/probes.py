"""`launchgap probes`: the recorder's probe listing (`launchgap-record
--list-probes`, a JSON object) as terminal tables, one per library."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

COST_STYLE = {"emulated": "green", "single-stepped": "yellow", "never-fires": "red"}


def render_probes(listing: dict, console: Console) -> None:
    console.print(f"kernel {listing.get('kernel_release')} ({listing.get('machine')}): "
                  f"{len(listing['libraries'])} CUDA librar{'y' if len(listing['libraries']) == 1 else 'ies'} found")
    for library in listing["libraries"]:
        path = library["path"]
        # a line of its own, not the table's title, which would wrap to the table's width
        console.print(f"{library['kind']}: {path} (found via {library['found_via']})", markup=False, highlight=False,
                      soft_wrap=True)
        table = Table()
        for column in ("function", "when", "placed at", "instruction", "cost", "moved over"):
            # names and instructions whole; what was moved over may wrap
            table.add_column(column, justify="right" if column == "placed at" else "left",
                             no_wrap=column in ("function", "cost"))
        for probe in (p for p in listing["probes"] if p["file"] == path):
            cost = probe["probe_cost"]
            table.add_row(probe["function"], probe["when"], f"+{probe['placed_offset']}", probe["probed_instruction"],
                          f"[{COST_STYLE.get(cost, 'default')}]{cost}[/]", 
                          # mnemonics only: the operands are in --json
                          ", ".join(i.split()[0] for i in probe["moved_over"]) or "-")
        console.print(table)
    for missing in listing["missing"]:
        console.print(f"not defined in {missing['file']}: {missing['function']}", markup=False, highlight=False)
    for warning in listing["warnings"]:
        console.print(f"warning: {warning}", style="yellow", markup=False, highlight=False)
