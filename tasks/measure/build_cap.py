"""A tuning run's cap on builds that take far longer than the run's others.

A search measures in rounds: it waits for a whole batch to build before it runs any of it, so
one candidate whose compile takes 40 s holds the round (and the search) for 40 s while the
other build workers idle. It happens: on the 480 MiB Xeon a learned mobilenet_v2 search
(session 106, seed 4) waited 37 s on one batch of a depthwise convolution because one
candidate (`meta_schedule.unroll_explicit` 512 over its whole inner nest) took 39.7 s in
`tvm.compile` where the other twelve took 0.1-1.1 s; that candidate then ran 2.6x slower than
the batch's best. In sessions 105-106 on that chip, batches held 8 s or more cost the
mobilenet_v2 cells 0-110 s each (XGB and learned alike) and resnet18's XGB cells up to 133 s,
in searches that reach XGB's final estimate in 50-800 s.

The measurement settings' build timeout (60 s) is the protocol of the data: a collect keeps
it, so the seed says what every sampled candidate does. A search only needs the fast ones, so
a tuning run cuts a build at max(FLOOR_S, FACTOR x the median of its own finished builds)
once WARMUP builds finished (before that, and never above it, the settings' timeout holds).
What the store says about the candidates such a cut loses (`bench/build_cap.py --db STORE`,
every valid measurement with a build time: 216,734 on eleven profiles, session 104's store):
at max(10 s, 20x the profile's median build) 212 builds (0.1%) are cut, among them 3 of
12,766 (task, profile) bests, each 11-13% ahead of its task's next best (bert_tiny's layer
norms fully unrolled, 12 s builds), while the cut builds' seconds past the cap were 0.5-5.2%
of a profile's build time.
A cut build is recorded as `build_cut` (not `build_timeout`: the settings would have let it
finish), with the cap in its message.
"""

from __future__ import annotations

import statistics
import threading
from collections import deque

FLOOR_S = 10.0  # never cut a build sooner: 99% of every CPU profile's builds finish in 8.4 s
FACTOR = 20.0  # ... nor before it took this many times the run's median build
WARMUP = 8  # finished builds before the cap applies (the median of fewer says little)
WINDOW = 256  # the median is over this many latest builds: a run's tasks change as it goes


class BuildCap:
    """The build timeout a tuning run gives its next build: shared by the build worker
    threads (thread-safe), fed every finished build's seconds."""

    def __init__(self, floor_s: float = FLOOR_S, factor: float = FACTOR, warmup: int = WARMUP,
                 window: int = WINDOW) -> None:
        if floor_s <= 0 or factor <= 0 or warmup < 1 or window < warmup:
            raise ValueError(f"build cap: floor_s {floor_s} and factor {factor} must be > 0, "
                             f"warmup {warmup} >= 1 and window {window} >= warmup")
        self.floor_s, self.factor, self.warmup = floor_s, factor, warmup
        self._recent: deque[float] = deque(maxlen=window)
        self._lock = threading.Lock()
        self.cut = 0  # builds cut so far

    def finished(self, build_s: float | None) -> None:
        """A build finished (valid or not, it compiled) in `build_s` seconds."""
        if build_s is not None and build_s >= 0:
            with self._lock:
                self._recent.append(float(build_s))

    def timeout(self, limit_s: float) -> float:
        """Seconds the next build may take: `limit_s` (the settings') until WARMUP builds
        finished, then the cap, never more than `limit_s`."""
        with self._lock:
            if len(self._recent) < self.warmup:
                return limit_s
            median = statistics.median(self._recent)
        return min(limit_s, max(self.floor_s, self.factor * median))

    def note_cut(self, cap_s: float) -> str:
        """Count a build cut at `cap_s`; the message its measurement keeps."""
        with self._lock:
            self.cut += 1
            median = statistics.median(self._recent) if self._recent else 0.0
        return (f"build cut at {cap_s:.1f} s: the tuning run's cap, max({self.floor_s:g} s, "
                f"{self.factor:g}x its median build {median:.2f} s)")
