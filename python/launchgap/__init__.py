"""launchgap: how the Linux scheduler and interrupts steal time from a workload."""

__version__ = "0.1.0"
