"""Imported before numpy (by the CLI and the analysis package): numpy's OpenBLAS starts a thread per CPU
at import and they spin (~70 ms of CPU on this 2-CPU machine), though launchgap does no linear algebra,
so one is enough and the CPUs go to polars. OpenBLAS reads OPENBLAS_NUM_THREADS once, as numpy loads
it; the variable is taken out of the environment again at once, so no command launchgap runs (a
recorded workload, an experiment's runs) inherits a setting it did not ask for. A value the user set
stands. Code that only execs a workload (experiments/enter.py) does not import this, nor numpy."""

import os

if "OPENBLAS_NUM_THREADS" not in os.environ:
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    except ImportError:  # a node with launchgap's bare contract only (launchgap/gpu_validation.py)
        pass
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]
