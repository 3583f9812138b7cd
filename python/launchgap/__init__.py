"""launchgap: how the Linux scheduler and interrupts steal time from a workload."""

import os

# numpy's OpenBLAS starts a thread per CPU at import, and they spin (~70 ms of CPU on this 2-CPU machine)
# though launchgap does no linear algebra: one is enough, and the CPUs go to polars. Only a default: a
# value the user set stands, and it has no effect once numpy was imported before launchgap.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
