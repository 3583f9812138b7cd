"""Hosts for lever tests: this machine, except for the preemption model's debugfs file.

This VM's debugfs is not mounted and its kernel is locked down, so the model cannot be switched here;
the tests play a PREEMPT_DYNAMIC kernel whose /sys/kernel/debug/sched/preempt is a plain file. The
kernel's own file (kernel/sched/debug.c: sched_dynamic_show / sched_dynamic_write) reads every model
with the active one in parentheses, "none voluntary (full) lazy", and takes one model's name on write;
a plain file keeps what was written, so reads are rendered the kernel's way from it."""

from __future__ import annotations

from pathlib import Path

from launchgap.doctor.facts import DEBUGFS, PREEMPT
from launchgap.doctor.host import DirectoryHost, Listing, Reading
from launchgap.experiments.levers import LeverHost

# a PREEMPT_DYNAMIC kernel with PREEMPT_LAZY (6.13+) shows these four
KERNEL_PREEMPT_TEXT = "none voluntary (full) lazy\n"


def render_preempt(text: str, models: tuple[str, ...]) -> str:
    """What the kernel, offering MODELS, would show after the file's content was written to it."""
    words = text.split()
    active = next((w.strip("()") for w in words if w.startswith("(")), None) or (words[0] if len(words) == 1 else None)
    if active not in models:
        return text
    return " ".join(f"({m})" if m == active else m for m in models) + "\n"


class DebugfsStandIn:
    """The live host's files, with PREEMPT read from FAKE the kernel's way."""

    def __init__(self, fake: Path, models: tuple[str, ...]) -> None:
        self.inner = DirectoryHost("/")
        self.fake = fake
        self.models = models
        self.description = self.inner.description

    def read(self, path: str) -> Reading:
        if path == PREEMPT:
            try:
                return Reading(path, render_preempt(self.fake.read_text(), self.models))
            except OSError as err:
                return Reading(path, None, err.errno)
        return self.inner.read(path)

    def listdir(self, path: str) -> Listing:
        if path == DEBUGFS:
            return Listing(path, ("sched",))
        return self.inner.listdir(path)


class FakeDebugfsHost(LeverHost):
    """This host, writing the preemption model to a stand-in file instead of debugfs."""

    def __init__(self, fake: Path) -> None:
        super().__init__("/")
        self.fake = fake
        # the models this kernel offers: those its file listed at the start
        self.models = tuple(w.strip("()") for w in fake.read_text().split())

    def view(self):
        return DebugfsStandIn(self.fake, self.models)

    def path(self, kernel_path: str) -> Path:
        return self.fake if kernel_path == PREEMPT else super().path(kernel_path)


def make_fake_preempt(directory: Path, text: str = KERNEL_PREEMPT_TEXT) -> Path:
    fake = directory / "sched-preempt"
    fake.write_text(text)
    return fake


class PrivateRunHost(LeverHost):
    """This host, with launchgap's own directory (/run/launchgap: the lever lock, the journals' registry) under
    RUN instead, so that a test's lock and journals are its own."""

    def __init__(self, run: Path) -> None:
        super().__init__("/")
        self.run = run

    def path(self, kernel_path: str) -> Path:
        from launchgap.experiments.run_dir import RUN_DIR

        if kernel_path == RUN_DIR or kernel_path.startswith(RUN_DIR + "/"):
            return self.run / kernel_path.lstrip("/")
        return super().path(kernel_path)


def refusal_once_settled(refusal, timeout_s: float = 60.0) -> str | None:
    """REFUSAL() (a lever's refusal on this host), asked again until it is None or TIMEOUT_S have passed. A
    refusal because a top-level v1 cpuset shares the CPU ("... and NAME does") is never a reason to skip: one
    another engineer's test holds goes when that test ends (seconds), so this waits for it to go; one still
    there is left behind, and a launchgap-* one is a leak of our own product: the caller's assert fails,
    naming it."""
    import time

    deadline = time.monotonic() + timeout_s
    problem = refusal()
    while problem is not None and "cpuset shares them" in problem and time.monotonic() < deadline:
        time.sleep(0.5)
        problem = refusal()
    return problem
