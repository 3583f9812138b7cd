"""Called once by the `launchgap` command as it starts (cli.run): glibc's malloc then keeps the memory
it frees for the next allocation, instead of handing it back to the kernel.

By default glibc serves every allocation over 32 MiB (a numpy column of 4M timestamps) with its own
mmap and unmaps it when freed, so the next such column faults in and zeroes fresh pages again, and
every unmap of a mapping shared by threads interrupts polars' other threads to flush their TLBs. The
analysis makes dozens of such columns a trace. With mmap off and no trimming, a freed column's pages
are reused as they are. Measured on a 4.07M-event `--system` storm (2 CPUs, quiet): `launchgap report`
2.37 s of CPU without, 2.02 s with (docs/benchmarks.md). Limits: this is the main heap's setting; a
worker thread's own arena (analysis/side_by_side.py) still maps its largest blocks (over 64 MiB)
itself; and polars' own allocator (jemalloc) is not glibc's. A launchgap command is a batch process
whose peak is its footprint anyway; the long-lived processes (the monitor, the recorder) are Rust,
and tests that invoke the CLI in their own process (click's runner calls `main`) keep the defaults."""

from __future__ import annotations

import ctypes

# glibc's <malloc.h> parameter numbers
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX = -1, -2, -4
# freed memory at the top of the heap is kept up to this (a C int: the most it can say)
KEEP_FREED = 2**31 - 1
# the heap grows by at least this a time: fewer brk calls as the columns arrive
GROW_BY = 64 << 20


def hold_freed_memory() -> bool:
    """Tells glibc's malloc to serve large allocations from its heap and keep what is freed. False where
    there is no glibc mallopt (musl, another libc): nothing changes there."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # mallopt returns 1 on success
    return all(
        mallopt(param, value) == 1
        for param, value in ((M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, KEEP_FREED), (M_TOP_PAD, GROW_BY))
    )
