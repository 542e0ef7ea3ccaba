"""MetaSchedule's log files for one tuning run, set up without `logging.config.dictConfig`.

MetaSchedule's own `get_loggers_from_work_dir` calls `dictConfig`, which closes and flushes
*every* handler in the process while it holds the logging module's lock. Inside a Prefect flow
one of those is Prefect's API log handler: its flush waits for Prefect's event-loop thread,
which may itself be waiting for that same lock. The two then wait for each other forever (a
`tenforge pipeline` in CI hung there, in its second retune, until its 600 s limit). This module
gives each task the same file logger, and the scheduler the same console and file output,
touching no handler but its own.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

SCHEDULER_LOGGER = "tvm.s_tir.meta_schedule"  # MetaSchedule's global logger (the task table)
_FORMAT = logging.Formatter("%(asctime)s [%(levelname)s] %(message)s", "%Y-%m-%d %H:%M:%S")
_OURS = "_tenforge_task_log"  # marks the handlers this module added, so a next run replaces them


def task_loggers(work_dir: str | Path, task_names: list[str]) -> list[logging.Logger]:
    """One logger per task, each writing to `work_dir/logs/<logger name>.log`, named as
    MetaSchedule names them; MetaSchedule's scheduler logger writes its task table to stdout
    and to `logs/tvm.s_tir.meta_schedule.task_scheduler.log`. Handlers that this module added
    for an earlier run are closed and replaced; nobody else's are touched."""
    log_dir = Path(work_dir) / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    scheduler = logging.getLogger(SCHEDULER_LOGGER)
    if scheduler.level == logging.NOTSET:
        scheduler.setLevel(logging.DEBUG)
    _replace_handlers(scheduler, [
        _handler(logging.StreamHandler(sys.stdout), scheduler.level),
        _handler(logging.FileHandler(log_dir / f"{SCHEDULER_LOGGER}.task_scheduler.log"))])
    width = len(str(len(task_names) - 1))
    loggers = []
    for i, name in enumerate(task_names):  # (long names clipped as MetaSchedule clips them)
        logger = logging.getLogger(f"{SCHEDULER_LOGGER}.task_{i:0{width}d}_{name[:100]}")
        logger.setLevel(logging.DEBUG)
        _replace_handlers(logger, [_handler(logging.FileHandler(log_dir / f"{logger.name}.log"))])
        loggers.append(logger)
    return loggers


def _handler(handler: logging.Handler, level: int = logging.DEBUG) -> logging.Handler:
    handler.setLevel(level)
    handler.setFormatter(_FORMAT)
    setattr(handler, _OURS, True)
    return handler


def _replace_handlers(logger: logging.Logger, handlers: list[logging.Handler]) -> None:
    for old in [h for h in logger.handlers if getattr(h, _OURS, False)]:
        logger.removeHandler(old)
        old.close()
    for handler in handlers:
        logger.addHandler(handler)
    logger.propagate = False
