"""How busy the CPUs this process may not use were, over a window of a benchmark.

A bench pinned to one vCPU of a 2-vCPU machine is still slowed by work on the other one (on
this machine kind a seed collection beside the tuning matrix moved PyTorch eager's resnet18
from 67 to 99 ms). Timings taken while the rest of the machine was busy are flagged with this
share, so a reader (and the report) can tell a slow network from a busy neighbour.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC_STAT = Path("/proc/stat")
IDLE_FIELDS = (3, 4)  # idle and iowait in a /proc/stat cpuN line's counters


def other_cpu_ticks(stat: str | None = None, mine: set[int] | None = None
                    ) -> tuple[int, int] | None:
    """(busy, total) clock ticks so far, summed over the CPUs outside this process's affinity
    (or outside `mine`); None where every CPU is ours, or /proc/stat is missing."""
    if stat is None:
        if not PROC_STAT.exists():
            return None
        stat = PROC_STAT.read_text()
    mine = os.sched_getaffinity(0) if mine is None else mine
    busy = total = 0
    others = 0
    for line in stat.splitlines():
        name, *counters = line.split()
        if not name.startswith("cpu") or name == "cpu" or int(name[3:]) in mine:
            continue
        ticks = [int(c) for c in counters[:8]]  # guest time is already inside user time
        idle = sum(ticks[i] for i in IDLE_FIELDS)
        busy += sum(ticks) - idle
        total += sum(ticks)
        others += 1
    return (busy, total) if others else None


def busy_share(start: tuple[int, int] | None, end: tuple[int, int] | None) -> float | None:
    """The other CPUs' busy share between two `other_cpu_ticks` readings (0-1), or None."""
    if start is None or end is None or end[1] <= start[1]:
        return None
    return round((end[0] - start[0]) / (end[1] - start[1]), 3)


def wait_for_quiet(max_busy: float = 0.1, window_s: float = 5.0, timeout_s: float = 900.0,
                   sleep=None, ticks=other_cpu_ticks) -> float:
    """Block until the other CPUs were at most `max_busy` busy over a `window_s` window, or
    `timeout_s` passed; returns the seconds waited. A bench calls it right before a timing it
    compares across runs, so work elsewhere on the machine delays that timing instead of
    skewing it."""
    import time

    sleep = sleep or time.sleep
    waited = 0.0
    while True:
        start = ticks()
        sleep(window_s)
        waited += window_s
        share = busy_share(start, ticks())
        if share is None or share <= max_busy or waited >= timeout_s:
            return waited - window_s  # the last window was the measurement itself
