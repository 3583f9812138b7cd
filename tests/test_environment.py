"""What importing launchgap does to its own process and to the commands it runs."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = ("import os, launchgap; "
         "print(os.environ.get('OPENBLAS_NUM_THREADS'), len(os.listdir('/proc/self/task')))")


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
