"""Processes by pid: is one still there (for stale-trial and service state checks)."""

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
