"""Processes and CPUs: is a pid still there (stale-trial and service state checks), and how many
cores may this process use."""

import os


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists (ours or someone else's)."""
    if pid <= 0:  # os.kill(0 or -1, ...) would address a whole group
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def usable_cores() -> int:
    """CPUs this process may run on (its affinity, e.g. a container's or taskset's share)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1
