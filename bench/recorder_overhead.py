"""bench/recorder_overhead: what launchgap's recorder costs a launch-bound workload,
on both shapes of driver entry point, each against the cheapest bare uprobe.

Two stand-in drivers, the same code behind different entry points:
  frame-pointer: cudasim's build/lib, entry points begin `push %rbp` (emulated);
  thunk: build/lib-thunk, NVIDIA's dispatch-thunk shape (`cmpl $imm,disp(%rip)`,
    single-stepped, then `je`, emulated).
For each, cudasim decode runs, interleaved round by round, in four ways:
  untraced;
  floor: a bpftrace one-liner counting cuLaunchKernel at the cheapest spot of the
    function (the first instruction the kernel emulates, found here from objdump,
    independently of the recorder): one uprobe hit per launch and nothing else;
  floor+args: the same, also reading the launch's three stack arguments (one
    24-byte user read), which any recorder of launch arguments must make;
  launchgap: `launchgap-record` with scheduling and IRQ tracing on;
  and, where the spot is not the entry, floor@entry: the counting one-liner on the
    function's entry, what a probe there would cost (the recorder before issue #10).
The cost per launch is the median launch-to-launch interval inside a token's
burst (cudasim's own log) minus the untraced one, on the same driver shape. Prints
each shape's ratio of launchgap's added cost to the floor's (goal: <= 1.3x on
both). Needs root.

bpftrace 0.17 (Debian bookworm) cannot probe at func+OFFSET, so each driver is
copied with one extra local symbol, `launchgap_floor_spot`, at the spot, and
every mode of that shape runs on the copy.

    .venv/bin/python bench/recorder_overhead.py [--rounds 5] [--tokens 300]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CUDASIM = REPO / "workloads" / "cudasim" / "build" / "bin" / "cudasim"
SHAPES = {
    "frame-pointer": REPO / "workloads" / "cudasim" / "build" / "lib" / "libcuda.so.1",
    "thunk": REPO / "workloads" / "cudasim" / "build" / "lib-thunk" / "libcuda.so.1",
}
RECORDER = REPO / "recorder" / "target" / "release" / "launchgap-record"
LAUNCHES_PER_TOKEN = 2 + 28 * 17
MODES = ["untraced", "floor", "floor+args", "launchgap"]
ENTRY_MODE = "floor@entry"
GOAL = 1.3
FUNCTION = "cuLaunchKernel"
SPOT = "launchgap_floor_spot"

# Zero-length kernels: the virtual GPU never hides CPU time, so every microsecond a
# probe adds to a launch shows in tokens/s (a launch-bound decode, like small models).
LAUNCH_BOUND = ["--kernel-us", "0:0", "--host-us", "100"]
STACK_ARGS = "struct stack_args { unsigned long block_z; unsigned long shared_mem; unsigned long stream; } "

# What the kernel emulates (arch/x86/kernel/uprobes.c): pushes, direct branches and
# calls, nops; and what leaves registers, stack and memory alone on the way there.
EMULATED = re.compile(r"^(push|j[a-z]+|call|nop[wl]?)$")
MOVABLE = re.compile(r"^(cmp[bwlq]?|test[bwlq]?|endbr64)$")


def cheapest_spot(library: Path) -> tuple[int, str]:
    """(offset into FUNCTION, instruction) of the first instruction the kernel emulates."""
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", f"--disassemble={FUNCTION}", str(library)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    body = out.split(f"<{FUNCTION}>:", 1)[1]
    lines = [re.match(r"^\s+([0-9a-f]+):\t(\S+)\s*(.*)$", line) for line in body.splitlines()]
    lines = [m for m in lines if m]
    entry = int(lines[0].group(1), 16)
    for m in lines:
        mnemonic, operands = m.group(2), m.group(3)
        if EMULATED.match(mnemonic) and "*" not in operands:
            return int(m.group(1), 16) - entry, f"{mnemonic} {operands}".strip()
        if not MOVABLE.match(mnemonic):
            break
    raise SystemExit(f"recorder_overhead: no emulated instruction at the start of {FUNCTION} in {library}")


def mark_spot(library: Path, offset: int, out_dir: Path) -> Path:
    """A copy of the library with a local function symbol SPOT at FUNCTION+offset."""
    from elftools.elf.elffile import ELFFile

    out_dir.mkdir(parents=True)
    copy = out_dir / "libcuda.so.1"
    with library.open("rb") as f:
        elf = ELFFile(f)
        text = elf.get_section_by_name(".text")
        symbol = next(s for s in elf.get_section_by_name(".dynsym").iter_symbols() if s.name == FUNCTION)
        spot = symbol["st_value"] + offset - text["sh_addr"]
        size = symbol["st_size"] - offset
    subprocess.run(
        ["objcopy", "--add-symbol", f"{SPOT}=.text:{spot:#x},function,local", str(library), str(copy)], check=True
    )
    # objcopy cannot give a symbol a size, and bpftrace refuses one without
    with copy.open("r+b") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        index = next(i for i, s in enumerate(symtab.iter_symbols()) if s.name == SPOT)
        f.seek(symtab["sh_offset"] + index * symtab["sh_entsize"] + 16)  # Elf64_Sym.st_size
        f.write(struct.pack("<Q", size))
    return copy


def preemptions_by_recorder(trace_path: Path, tid: int) -> int:
    """Involuntary switches of the workload in favour of the recorder's own threads."""
    import polars as pl

    from launchgap.trace import Event, read_trace

    trace = read_trace(trace_path)
    ours = trace.of(Event.SWITCH).filter(pl.col("next_comm").is_in(["launchgap-recor", "trace-writer"]))
    return ours.filter((pl.col("tid") == tid) & ~pl.col("voluntary")).height


BURST_GAP_NS = 20_000  # launches of one token follow each other within microseconds; tokens are 100+ us apart


def median_launch_interval_ns(truth: dict) -> float:
    """The median time from one launch to the next inside a token's burst, from
    the stand-in driver's own log: a probe's cost is paid in every interval,
    while preemptions, steal and page faults touch only a few, so the median is
    a far steadier per-launch cost than tokens/s (which swings by 5-8% a run here)."""
    import numpy as np

    columns = truth["launch_columns"]
    seq, enter = columns.index("seq"), columns.index("t_enter_ns")
    times = np.array([row[enter] for row in sorted(truth["launches"], key=lambda r: r[seq])], dtype=np.int64)
    gaps = np.diff(times)
    return float(np.median(gaps[(gaps > 0) & (gaps < BURST_GAP_NS)]))


def placed_probe(trace_path: Path, library: Path) -> str:
    from launchgap.trace import read_trace

    for p in read_trace(trace_path).meta["probes"]:
        if p.get("function") == FUNCTION and Path(p["file"]) == library.resolve():
            return f"+{p['placed_offset']} {p['probed_instruction']} ({p['probe_cost']})"
    return "not probed"


def run_once(mode: str, library: Path, tokens: int, workdir: Path) -> dict:
    truth = workdir / f"truth-{mode}.json"
    workload = [str(CUDASIM), "decode", "--quiet", "--tokens", str(tokens), *LAUNCH_BOUND, "--truth", str(truth)]
    env = {**os.environ, "LD_LIBRARY_PATH": str(library.parent)}
    trace = workdir / "bench.lg"
    if mode == "untraced":
        command = workload
    elif mode == "floor":
        probe = f"uprobe:{library}:{SPOT} {{ @launches = count(); }}"
        command = ["bpftrace", "-q", "-e", probe, "-c", " ".join(workload)]
    elif mode == ENTRY_MODE:
        probe = f"uprobe:{library}:{FUNCTION} {{ @launches = count(); }}"
        command = ["bpftrace", "-q", "-e", probe, "-c", " ".join(workload)]
    elif mode == "floor+args":
        # the spot leaves the stack as at entry: the return address at sp, argument 7 after it
        probe = (
            STACK_ARGS + f"uprobe:{library}:{SPOT} {{ @launches = count(); "
            '$a = *(struct stack_args *)(reg("sp") + 8); if ($a.stream == 1) { @one = count(); } }'
        )
        command = ["bpftrace", "-q", "-e", probe, "-c", " ".join(workload)]
    else:
        command = [str(RECORDER), "-q", "-o", str(trace), "--", *workload]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if "tok/s:" not in proc.stdout:
        raise SystemExit(f"{mode} run failed: {proc.stderr.strip()}")
    data = json.loads(truth.read_text())
    thread = data["processes"][0]["threads"][0]
    return {
        "tokens_per_s": float(proc.stdout.split("tok/s:")[1].split()[0]),
        "interval_ns": median_launch_interval_ns(data),
        "involuntary": thread["kernel_switches"]["nonvoluntary"],
        "by_recorder": preemptions_by_recorder(trace, thread["tid"]) if mode == "launchgap" else 0,
        "placed": placed_probe(trace, library) if mode == "launchgap" else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=300)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("recorder_overhead: needs root (BPF)")
    if shutil.which("bpftrace") is None:
        raise SystemExit("recorder_overhead: needs bpftrace (apt install bpftrace)")
    with tempfile.TemporaryDirectory(prefix="launchgap-bench-") as tmp:
        work = Path(tmp)
        spots, libraries, modes = {}, {}, {}
        for shape, library in SHAPES.items():
            spots[shape] = cheapest_spot(library)
            libraries[shape] = mark_spot(library, spots[shape][0], work / shape)
            modes[shape] = MODES + ([ENTRY_MODE] if spots[shape][0] else [])
        runs = [(shape, mode) for shape in SHAPES for mode in modes[shape]]
        results: dict[tuple[str, str], list[dict]] = {run: [] for run in runs}
        run_once("untraced", libraries["frame-pointer"], args.tokens, work)  # warm-up: page cache, CPU frequency
        for r in range(args.rounds):
            for shape, mode in runs if r % 2 == 0 else list(reversed(runs)):
                results[(shape, mode)].append(run_once(mode, libraries[shape], args.tokens, work))
            print(
                f"round {r + 1}/{args.rounds}: "
                + "  ".join(f"{s}/{m} {results[(s, m)][-1]['interval_ns']:.0f} ns" for s, m in runs),
                file=sys.stderr,
            )

    print(
        f"cudasim decode, {args.tokens} tokens x {LAUNCHES_PER_TOKEN} launches, {args.rounds} interleaved rounds "
        f"(medians); cost per launch from the median launch interval inside bursts"
    )
    ratios = {}
    for shape in SHAPES:
        offset, instruction = spots[shape]
        placed = results[(shape, "launchgap")][-1]["placed"]
        print(f"\n{shape}: {FUNCTION} floor at +{offset} ({instruction}); launchgap's probe at {placed}")
        print(f"  {'mode':<11} {'tok/s':>8} {'launch interval':>16} {'added ns/launch':>16} {'invol. switches':>16}")
        interval = {m: statistics.median(x["interval_ns"] for x in results[(shape, m)]) for m in modes[shape]}
        for m in modes[shape]:
            tps = statistics.median(x["tokens_per_s"] for x in results[(shape, m)])
            invol = statistics.median(x["involuntary"] for x in results[(shape, m)])
            print(
                f"  {m:<11} {tps:>8.1f} {interval[m]:>13.0f} ns {interval[m] - interval['untraced']:>16.0f} "
                f"{invol:>16.1f}"
            )
        added = {m: interval[m] - interval["untraced"] for m in modes[shape]}
        if added["floor"] > 0 and added["floor+args"] > 0:
            ratios[shape] = added["launchgap"] / added["floor"]
            print(
                f"  launchgap / floor: {ratios[shape]:.2f}x (goal <= {GOAL}x); floor+args / floor: "
                f"{added['floor+args'] / added['floor']:.2f}x; launchgap / floor+args: "
                f"{added['launchgap'] / added['floor+args']:.2f}x"
            )
        else:
            print("  the floor added no measurable cost per launch; ratios undefined")
        if ENTRY_MODE in added and added["floor"] > 0:
            print(f"  a bare probe on the entry instead: {added[ENTRY_MODE] / added['floor']:.1f}x the floor")
        by_recorder = sum(x["by_recorder"] for x in results[(shape, "launchgap")])
        print(f"  times the recorder's own threads preempted the workload, all rounds: {by_recorder}")
    if len(ratios) == len(SHAPES):
        verdict = "met" if all(r <= GOAL for r in ratios.values()) else "NOT met"
        print(
            "\nlaunchgap / floor: "
            + ", ".join(f"{s} {r:.2f}x" for s, r in ratios.items())
            + f": goal <= {GOAL}x on both {verdict}"
        )


if __name__ == "__main__":
    main()
