"""`launchgap doctor`: a node's isolation, interrupt, scheduler and CPU
settings, checked one by one over a read-only view of its files."""

from launchgap.doctor.host import DirectoryHost, SnapshotHost
from launchgap.doctor.model import Check, DoctorResult, Evidence, Status, Target
from launchgap.doctor.run import TargetError, run_doctor, target_from_cpus, target_from_pid

__all__ = [
    "Check",
    "DirectoryHost",
    "DoctorResult",
    "Evidence",
    "SnapshotHost",
    "Status",
    "Target",
    "TargetError",
    "run_doctor",
    "target_from_cpus",
    "target_from_pid",
]
