"""hold_freed_memory: after it, a large array freed and allocated again reuses the same pages (no new page
faults), where by default glibc maps fresh pages for it (the cost docs/benchmarks.md measured on the storm).
Run in child processes: the setting is process-wide."""

import subprocess
import sys

# a 64 MiB array (over glibc's largest mmap threshold, 32 MiB), written whole, freed, then made again:
# the page faults of the second
SECOND_ALLOCATION_FAULTS = """
import resource, sys
import numpy as np
from launchgap.held_memory import hold_freed_memory
held = hold_freed_memory() if sys.argv[1] == "hold" else None
a = np.ones(8 << 20); del a
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
a = np.ones(8 << 20); del a
print(held, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""

# 64 MiB in 2 MiB transparent huge pages (numpy asks for them where the kernel offers them): the fewest
# faults fresh pages can cost
FRESH_PAGES_AT_LEAST = (64 << 20) // (2 << 20)


def faults_of_second_allocation(mode: str) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", SECOND_ALLOCATION_FAULTS, mode], capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], int(out[1])


def test_freed_memory_is_reused_without_new_page_faults():
    held, faults = faults_of_second_allocation("hold")
    assert held == "True"  # glibc here: mallopt took every setting
    assert faults == 0, f"{faults} page faults: the freed array's pages were not reused"


def test_by_default_the_same_allocation_faults_in_fresh_pages():
    # the comparison that shows the test above can fail: without the setting the pages are new each time
    held, faults = faults_of_second_allocation("default")
    assert held == "None"
    assert faults >= FRESH_PAGES_AT_LEAST
