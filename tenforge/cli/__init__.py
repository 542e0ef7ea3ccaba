"""`tenforge ...`: the things people do by hand (run a flow, import/export data, query, list).

Imports are lazy: TVM, torch and Prefect take seconds to import, and `--help` or a bad
argument should answer at once. Errors the user can fix print one line and exit with 2.

Modules: `parser` (every command and option), `run_commands` (the flows), `data_commands`
(listing, querying, reporting, import/export), `service_commands` (service, dashboard).
"""

from __future__ import annotations

import os
import signal
import sys
import warnings
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]

ENV_DEFAULTS = {
    # Prefect: no telemetry, and a patient ephemeral API start on a busy 2-core machine (FACTS.md).
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "60",
    # Prefect's task-run recorder writes each task-run event as it arrives (batch size 1); its
    # write then waited out SQLite's 60 s busy timeout ("database is locked") once in each of
    # three `tenforge pipeline` runs here (4.4-4.6 min), stalling the flow's next API call.
    # Batched, it writes every 5 s (flush_interval): no stall in two runs (3.2 min).
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "100",
    # OpenMP threads that spin while waiting starve each other when the cores are busy (a
    # collect running beside training): XGBoost's 60-round fit took 8.0 s instead of 1.1 s.
    # Must be set before libgomp loads, hence here.
    "OMP_WAIT_POLICY": "passive",
}


def bootstrap() -> None:
    """Put the project root on sys.path and set environment defaults (idempotent)."""
    if not (PROJECT_ROOT / "flows").is_dir():
        raise SystemExit(f"tenforge: error: project folders not found next to {PROJECT_ROOT}; "
                         "install tenforge with `pip install -e .` from its checkout")
    if str(PROJECT_ROOT) not in sys.path:
        sys.path.insert(0, str(PROJECT_ROOT))
    for key, value in ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    # torch.export's pytree and TVM's frontends warn loudly about their own internals.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)


def exit_cleanly_on_sigterm() -> None:
    """Make SIGTERM end this process through Python's exit path, as Ctrl-C does.

    Why: with Python's default action a SIGTERM ends the process on the spot, so nothing
    registered with `atexit` runs. Prefect registers there the stop of its ephemeral API server
    (a uvicorn child); a `tenforge collect` stopped by `timeout` or `kill` left that server running
    at ~8% of a vCPU, re-parented to PID 1, for as long as nobody killed it. Prefect's flow
    engine turns a SIGTERM into a crash of the flow run, then restores the handler it found and
    sends the signal again: that second delivery lands here. Only the main thread may set a
    handler; elsewhere (tenforge called from a thread) nothing changes."""
    def handler(signum: int, frame: object) -> None:
        print("tenforge: terminated (SIGTERM); re-run the same command to resume", file=sys.stderr)
        raise SystemExit(128 + signum)

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:
        pass


def main(argv: list[str] | None = None) -> int:
    bootstrap()  # before any project import: it puts the project root on sys.path
    exit_cleanly_on_sigterm()
    from core.errors import TenforgeError
    from tenforge.cli.parser import build_parser

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TenforgeError as exc:
        print(f"tenforge: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tenforge: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130
