"""MetaSchedule's per-task log files, set up without touching anyone else's log handlers (a
`dictConfig` that flushed Prefect's API log handler under the logging lock hung a pipeline)."""

import logging

from tasks.tuning.task_logs import SCHEDULER_LOGGER, task_loggers


class _Watched(logging.Handler):
    """A handler that notes whether anyone flushed or closed it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.calls.append("emit")

    def flush(self) -> None:
        self.calls.append("flush")

    def close(self) -> None:
        self.calls.append("close")
        super().close()


def test_other_handlers_are_neither_flushed_nor_closed(tmp_path):
    root, scheduler = _Watched(), _Watched()
    logging.getLogger().addHandler(root)
    logging.getLogger(SCHEDULER_LOGGER).addHandler(scheduler)
    try:
        task_loggers(tmp_path, ["fused_conv2d", "softmax"])
        assert root.calls == [] and scheduler.calls == []
        assert root in logging.getLogger().handlers
        assert scheduler in logging.getLogger(SCHEDULER_LOGGER).handlers
    finally:
        logging.getLogger().removeHandler(root)
        logging.getLogger(SCHEDULER_LOGGER).removeHandler(scheduler)


def test_each_task_logs_to_its_own_file_and_the_scheduler_to_stdout_and_a_file(tmp_path, capsys):
    conv, softmax = task_loggers(tmp_path, ["fused_conv2d", "softmax"])
    conv.info("conv line")
    softmax.debug("softmax line")
    logging.getLogger(SCHEDULER_LOGGER).info("task table")
    for handler in [*conv.handlers, *softmax.handlers,
                    *logging.getLogger(SCHEDULER_LOGGER).handlers]:
        handler.flush()
    logs = tmp_path / "logs"
    assert conv.name == f"{SCHEDULER_LOGGER}.task_0_fused_conv2d"  # MetaSchedule's names
    assert "conv line" in (logs / f"{conv.name}.log").read_text()
    assert "softmax line" in (logs / f"{softmax.name}.log").read_text()
    assert "conv line" not in (logs / f"{softmax.name}.log").read_text()
    assert "task table" in (logs / f"{SCHEDULER_LOGGER}.task_scheduler.log").read_text()
    assert "task table" in capsys.readouterr().out


def test_a_second_run_replaces_the_first_runs_handlers(tmp_path):
    first = task_loggers(tmp_path / "a", ["dense"])[0]
    old = list(first.handlers)
    second = task_loggers(tmp_path / "b", ["dense"])[0]
    assert first is second and len(second.handlers) == 1 and second.handlers[0] not in old
    ours = [h for h in logging.getLogger(SCHEDULER_LOGGER).handlers
            if h.__class__ in (logging.StreamHandler, logging.FileHandler)]
    assert len(ours) == 2  # one console, one file: not one pair a run
    second.info("into b")
    second.handlers[0].flush()
    assert "into b" in (tmp_path / "b" / "logs" / f"{second.name}.log").read_text()
    assert "into b" not in (tmp_path / "a" / "logs" / f"{second.name}.log").read_text()
