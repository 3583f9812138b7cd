"""What importing launchgap does to its own process and to the commands it runs."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = (
    "import os, launchgap.quiet_blas; print(os.environ.get('OPENBLAS_NUM_THREADS'), len(os.listdir('/proc/self/task')))"
)
# the order modules begin to import in, as a finder first asked for each sees it
ORDER = (
    "import sys\n"
    "seen = []\n"
    "class Log:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        seen.append(name)\n"
    "sys.meta_path.insert(0, Log())\n"
    "import launchgap.cli\n"
    "print(seen.index('launchgap.quiet_blas') < seen.index('numpy'))"
)


def test_the_cli_quiets_openblas_before_anything_imports_numpy():
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", ORDER], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == "True"


def test_openblas_is_kept_to_one_thread_without_leaking_the_setting_to_children():
    """numpy's OpenBLAS would start a spinning thread per CPU; launchgap keeps it to the main thread, and
    takes the variable out again so that a recorded workload or an experiment's runs do not inherit it."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["None", "1"]


def test_a_users_openblas_setting_stands():
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True).stdout
    # the user's value stays in the environment for the commands launchgap runs
    assert out.split()[0] == "2"


def test_the_shim_that_execs_a_workload_imports_no_numpy():
    """experiments/enter.py runs before every experiment's workload: it stays light (no numpy, polars or
    pyarrow to load) so that the workload starts as soon as its settings are in effect."""
    probe = "import sys, launchgap.experiments.enter; print(sorted({'numpy', 'polars', 'pyarrow'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
