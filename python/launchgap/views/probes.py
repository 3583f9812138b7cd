"""`launchgap probes`: the recorder's probe listing (`launchgap-record
--list-probes`, a JSON object) as terminal tables, one per library. Names, paths and instructions come
from the libraries (an instruction's operands hold brackets: [rip+0x10]): each goes through literal()."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from launchgap.console import literal, shown

COST_STYLE = {"emulated": "green", "single-stepped": "yellow", "never-fires": "red"}


def render_probes(listing: dict, console: Console) -> None:
    console.print(
        f"kernel {literal(listing.get('kernel_release'))} ({literal(listing.get('machine'))}): "
        f"{len(listing['libraries'])} CUDA librar{'y' if len(listing['libraries']) == 1 else 'ies'} found"
    )
    for library in listing["libraries"]:
        path = library["path"]
        # a line of its own, not the table's title, which would wrap to the table's width
        console.print(
            shown(f"{library['kind']}: {path} (found via {library['found_via']})"),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        table = Table()
        for column in ("function", "when", "placed at", "instruction", "cost", "moved over"):
            # names and instructions whole; what was moved over may wrap
            table.add_column(
                column, justify="right" if column == "placed at" else "left", no_wrap=column in ("function", "cost")
            )
        for probe in (p for p in listing["probes"] if p["file"] == path):
            cost = probe["probe_cost"]
            style = COST_STYLE.get(cost, "default")
            table.add_row(
                literal(probe["function"]),
                literal(probe["when"]),
                f"+{literal(probe['placed_offset'])}",
                literal(probe["probed_instruction"]),
                f"[{style}]{literal(cost)}[/]",
                # mnemonics only: the operands are in --json
                literal(", ".join(i.split()[0] for i in probe["moved_over"] if i.split())) or "-",
            )
        console.print(table)
    for missing in listing["missing"]:
        console.print(shown(f"not defined in {missing['file']}: {missing['function']}"), markup=False, highlight=False)
    for warning in listing["warnings"]:
        console.print(shown(f"warning: {warning}"), style="yellow", markup=False, highlight=False)
