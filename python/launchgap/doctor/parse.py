"""Parsers for the kernel's own text formats, each as the kernel writes it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from launchgap.inputs import excerpt


class ParseError(ValueError):
    pass


class UnparsableFile(ParseError):
    """A host file whose value is not in the kernel's format (a damaged copy, a hand-edited snapshot, another
    kernel's format): the checks resting on it say `unknown`, naming the file and a short excerpt of it."""

    def __init__(self, path: str, value: object, why: str = "") -> None:
        self.path, self.value, self.why = path, value, why
        self.shown = excerpt(value)
        super().__init__(f"cannot parse {path}: {self.shown}" + (f" ({why})" if why else ""))


# the highest CPU number a list or mask may name: Linux's NR_CPUS is at most 8192 (arch/x86/Kconfig's
# MAXSMP), and a list naming more would otherwise be expanded into memory CPU by CPU
MAX_CPUS = 8192
MAX_CPU = MAX_CPUS - 1
# a hex mask of MAX_CPUS bits, with the kernel's comma every 32 bits
MAX_MASK_DIGITS = MAX_CPUS // 4


def is_number(text: str) -> bool:
    """Plain decimal digits only: str.isdigit() also takes superscripts ("²") that int() refuses."""
    return text.isascii() and text.isdigit()


def parse_cpulist(text: str | None, last_cpu: int | None = None) -> frozenset[int]:
    """The kernel's cpu-list syntax (bitmap_parselist): "0-3,8", "all", "N" for
    the last CPU, and "0-15:2/4" (the first 2 of every 4). "(null)" is what
    older kernels print for an unset mask."""
    if text is None:
        return frozenset()
    text = text.strip()
    if text in ("", "(null)"):
        return frozenset()
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if part == "all":
            if last_cpu is None:
                raise ParseError("'all' needs the number of CPUs")
            cpus.update(range(last_cpu + 1))
            continue
        group = None
        if ":" in part:
            part, _, spec = part.partition(":")
            used, _, size = spec.partition("/")
            if not (is_number(used) and is_number(size)) or int(size) == 0 or int(size) > MAX_CPUS:
                raise ParseError(f"bad CPU group '{excerpt(spec, 20)}'")
            group = (int(used), int(size))
        lo, sep, hi = part.partition("-")
        first = _cpu_number(lo, last_cpu)
        last = _cpu_number(hi, last_cpu) if sep else first
        if last < first:
            raise ParseError(f"bad CPU range '{excerpt(part, 20)}'")
        for cpu in range(first, last + 1):
            if group is None or (cpu - first) % group[1] < group[0]:
                cpus.add(cpu)
    return frozenset(cpus)


def _cpu_number(text: str, last_cpu: int | None) -> int:
    text = text.strip()
    if text == "N":
        if last_cpu is None:
            raise ParseError("'N' needs the number of CPUs")
        return last_cpu
    if not is_number(text):
        raise ParseError(f"bad CPU number '{excerpt(text, 20)}'")
    if len(text) > len(str(MAX_CPU)) or int(text) > MAX_CPU:
        raise ParseError(
            f"CPU {text[:20]}{'...' if len(text) > 20 else ''} is beyond the highest CPU Linux supports ({MAX_CPU})"
        )
    return int(text)


def parse_cpumask(text: str | None) -> frozenset[int]:
    """A hex mask as the kernel prints one: 32-bit groups, comma separated,
    most significant first ("ff,ffffffff")."""
    if text is None:
        return frozenset()
    digits = text.strip().replace(",", "")
    if not digits:
        return frozenset()
    if len(digits.lstrip("0")) > MAX_MASK_DIGITS:
        raise ParseError(f"CPU mask of {len(digits)} hex digits: more CPUs than Linux supports ({MAX_CPUS})")
    try:
        value = int(digits, 16)
    except ValueError as err:
        raise ParseError(f"bad CPU mask '{excerpt(text.strip(), 20)}'") from err
    return frozenset(i for i in range(value.bit_length()) if value >> i & 1)


def format_cpus(cpus) -> str:
    """{0,1,2,5} -> "0-2,5"; the empty set -> "none"."""
    ordered = sorted(cpus)
    if not ordered:
        return "none"
    parts = []
    start = prev = ordered[0]
    for cpu in ordered[1:] + [None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(parts)


def kernel_params(cmdline: str) -> dict[str, str | None]:
    """The kernel's own parameters from /proc/cmdline: words up to a bare "--"
    (what follows goes to init), double quotes kept together as the kernel's
    next_arg does; a later repeat wins. A bare word maps to None."""
    params: dict[str, str | None] = {}
    for word in re.findall(r'(?:[^\s"]+|"[^"]*")+', cmdline):
        if word == "--":
            break
        word = word.replace('"', "")
        name, sep, value = word.partition("=")
        params[name] = value if sep else None
    return params


ISOLCPUS_FLAGS = ("nohz", "domain", "managed_irq")


@dataclass(frozen=True)
class Isolcpus:
    flags: frozenset[str]
    cpus: frozenset[int]
    unknown_flags: tuple[str, ...] = ()


def parse_isolcpus(value: str, last_cpu: int | None) -> Isolcpus:
    """isolcpus=[flag,...,]cpu-list; no flag means "domain" (the kernel's
    housekeeping_isolcpus_setup)."""
    flags: set[str] = set()
    unknown: list[str] = []
    rest = value
    while rest and rest[0].isalpha() and not rest.startswith(("all", "N")):
        word, sep, tail = rest.partition(",")
        if word in ISOLCPUS_FLAGS:
            flags.add(word)
        else:
            unknown.append(word)
        rest = tail if sep else ""
    return Isolcpus(frozenset(flags or {"domain"}), parse_cpulist(rest, last_cpu), tuple(unknown))


@dataclass
class InterruptRow:
    """One line of /proc/interrupts."""

    label: str  # "38" or "LOC"
    counts: dict[int, int]  # CPU -> count
    chip: str = ""  # "PCI-MSIX-0000:00:03.0", "IO-APIC", "IR-PCI-MSI"
    hwirq: str = ""  # "1-edge"
    actions: tuple[str, ...] = ()
    description: str = ""  # for system vectors: "Local timer interrupts"

    @property
    def number(self) -> int | None:
        return int(self.label) if is_number(self.label) else None

    @property
    def name(self) -> str:
        return ", ".join(self.actions) if self.actions else self.description or self.label

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class Interrupts:
    cpus: list[int]
    rows: list[InterruptRow] = field(default_factory=list)

    def by_number(self) -> dict[int, InterruptRow]:
        return {r.number: r for r in self.rows if r.number is not None}


HWIRQ_TRIGGER = re.compile(r"(?:\d+|0x[0-9a-f]+)[- ]\w+|[\w-]*(?:edge|level|fasteoi)", re.IGNORECASE)


def parse_interrupts(text: str) -> Interrupts:
    """/proc/interrupts: a header of CPU columns (online CPUs only), then per
    line "label:", one count per column, and for device lines the chip, the
    hwirq-trigger and the handlers' names (after two spaces, ", "-joined).
    System vectors (LOC, RES, ...) end with their description instead."""
    lines = text.splitlines()
    if not lines or "CPU" not in lines[0]:
        raise ParseError("no CPU header")
    cpus = [int(c[3:]) for c in lines[0].split() if c.startswith("CPU") and is_number(c[3:])]
    out = Interrupts(cpus)
    for line in lines[1:]:
        label, sep, tail = line.partition(":")
        if not sep:
            continue
        label = label.strip()
        counts = []
        while len(counts) < len(cpus):
            m = re.match(r"\s*(\d+)(?=\s|$)", tail)
            if not m:
                break
            counts.append(int(m.group(1)))
            tail = tail[m.end() :]
        row = InterruptRow(label, dict(zip(cpus, counts)))
        out.rows.append(row)
        if len(counts) < len(cpus):  # ERR:, MIS: carry one total
            continue
        fields = [f for f in re.split(r"\s{2,}", tail.strip()) if f]
        if row.number is None:
            row.description = " ".join(fields)
            continue
        if not fields:
            continue
        chip_words = fields[0].split()
        row.chip = chip_words[0]
        hwirq = chip_words[1:]
        rest = fields[1:]
        if rest and HWIRQ_TRIGGER.fullmatch(rest[0]):
            hwirq.append(rest.pop(0))
        row.hwirq = " ".join(hwirq)
        if rest:
            row.actions = tuple(a.strip() for a in "  ".join(rest).split(", ") if a.strip())
    return out


def parse_kernel_config(text: str) -> dict[str, str]:
    """CONFIG_X=y lines -> {"CONFIG_X": "y"}; "# CONFIG_X is not set" -> "n"."""
    options: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("CONFIG_") and "=" in line:
            key, _, value = line.partition("=")
            options[key] = value.strip('"')
        else:
            m = re.match(r"# (CONFIG_\w+) is not set", line)
            if m:
                options[m.group(1)] = "n"
    return options


def parse_bracketed_choice(text: str) -> tuple[str | None, list[str]]:
    """ "always [madvise] never" -> ("madvise", [...]); "none voluntary (full)"
    -> ("full", [...]): the kernel marks the active choice with [] or ()."""
    choices = text.split()
    active = None
    for word in choices:
        if word[:1] in "[(" and word[-1:] in "])":
            active = word[1:-1]
    return active, [w.strip("[]()") for w in choices]


def parse_status_field(text: str, name: str) -> str | None:
    """A "Name:\tvalue" line of /proc/PID/status."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key == name:
            return value.strip()
    return None


def cpuinfo_flags(text: str) -> set[str] | None:
    """The first "flags" line of /proc/cpuinfo (x86), or None where there is none."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return set(value.split())
    return None


def environ_entries(text: str) -> dict[str, str]:
    """/proc/PID/environ: NUL-separated NAME=value."""
    out = {}
    for entry in text.split("\0"):
        name, sep, value = entry.partition("=")
        if sep:
            out[name] = value
    return out


def shell_assignments(text: str) -> dict[str, str]:
    """NAME=value lines of an environment file such as /etc/default/irqbalance."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_]\w*", name.strip()):
            out[name.strip()] = value.strip().strip('"').strip("'")
    return out
