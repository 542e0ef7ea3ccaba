"""Hold Ctrl-C and SIGTERM while a short write finishes, then act on them.

A collection stopped at its deadline (`timeout -s INT`) once lost the batch it had just
measured: the signal landed while DuckDB inserted it, DuckDB aborted the query ("Query
interrupted"), the transaction rolled back, and 16 measured candidates were gone (session 36,
the lent machine's host CPU). Writes take well under a second; holding the signal for that
long costs nothing and keeps every measurement the run paid for.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_held(signals: tuple[signal.Signals, ...] = HELD) -> Iterator[None]:
    """Inside: SIGINT/SIGTERM are noted, not acted on. On leaving, the handlers from before
    are back and each noted signal is raised again, so they act as if it arrived just after
    (Ctrl-C's KeyboardInterrupt, a tuning run's graceful stop, SIGTERM's exit). Nests. Only
    the main thread takes signals: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []

    def note(signum: int, _frame: object) -> None:
        noted.append(signum)

    # a handler installed from C (getsignal is None) cannot be put back: leave that one be
    previous = {sig: signal.getsignal(sig) for sig in signals}
    previous = {sig: old for sig, old in previous.items() if old is not None}
    for sig in previous:
        signal.signal(sig, note)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        for sig in dict.fromkeys(noted):
            signal.raise_signal(sig)
