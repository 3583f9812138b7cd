"""One experiment with every lever at once, for the tests that end it every way (test_lever_runs.py):
SCHED_FIFO 10, the workload's CPU isolated (cgroup v1 here), IRQs and unbound workqueues steered off it,
timer migration off, and the preemption model switched on a stand-in debugfs file (lever_hosts.py).

    python -m tests.experiments.lever_driver OUTDIR FAKE_PREEMPT CPU -- COMMAND...

Exit status: 0 complete, 1 failed (the error on stderr), 130 interrupted (SIGINT), 143 terminated (SIGTERM,
after the same clean-up).
"""

from __future__ import annotations

import sys
from pathlib import Path

from launchgap.experiments.mitigations import Mitigations
from launchgap.experiments.plan import ExperimentError, ExperimentPlan, Metric
from launchgap.experiments.runner import preflight, run_experiment
from launchgap.experiments.scenarios import Scenario
from tests.experiments.lever_hosts import FakeDebugfsHost

EVERY_LEVER = dict(
    policy="fifo:10", isolate="isolated", irq_away=True, workqueue_away=True, timer_migration=0, preempt="voluntary"
)


def main(argv: list[str]) -> None:
    outdir, fake, cpu = Path(argv[0]), Path(argv[1]), int(argv[2])
    command = argv[4:] if argv[3] == "--" else argv[3:]
    host = FakeDebugfsHost(fake)
    scenario = Scenario("levers", mitigations=Mitigations(cpus=[cpu], **EVERY_LEVER))
    plan = ExperimentPlan(scenarios=[scenario], command=command, repeat=2, metric=Metric(None), outdir=outdir, seed=1)
    try:
        preflight(plan, host=host)
        run_experiment(plan, host=host)
    except KeyboardInterrupt:
        sys.exit(130)
    except ExperimentError as err:
        print(f"launchgap: {err}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
