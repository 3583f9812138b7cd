"""launchgap: how the Linux scheduler and interrupts steal time from a workload."""

import os

# numpy's OpenBLAS starts a thread per CPU at import, and they spin (~70 ms of CPU on this 2-CPU machine)
# though launchgap does no linear algebra: one is enough, and the CPUs go to polars. OpenBLAS reads the
# variable once, as numpy loads it; it is taken out of the environment again at once, so that no
# command launchgap runs (a recorded workload, an experiment's runs) inherits a setting it did not ask for.
if "OPENBLAS_NUM_THREADS" not in os.environ:
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]

__version__ = "0.1.0"
