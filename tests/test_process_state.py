"""bench/process_state.py: conditions from the command line, and what /proc says of a process."""

import os

import pytest

from bench.process_state import MODES, huge_kib, last_cpu, parse_conditions, set_mode


def test_conditions_are_every_cpu_with_every_page_mode_and_bad_ones_exit_in_one_line():
    assert parse_conditions("all,0", "4k,huge", {0, 1}) == [
        ("all", "4k"), ("all", "huge"), ("0", "4k"), ("0", "huge")]
    with pytest.raises(SystemExit, match=r"--cpus '7': give 'all' or CPUs of \[0, 1\]"):
        parse_conditions("7", "4k", {0, 1})
    with pytest.raises(SystemExit, match="--pages 'big': give any of 4k, huge"):
        parse_conditions("all", "big", {0, 1})


def test_proc_readings_of_this_process_and_of_none():
    assert last_cpu(os.getpid()) in os.sched_getaffinity(0)
    assert isinstance(huge_kib(os.getpid()), int)
    assert last_cpu(2 ** 22 + 1) is None and huge_kib(2 ** 22 + 1) is None  # no such process


def test_the_page_mode_sets_and_clears_glibcs_tunable(monkeypatch):
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    set_mode("huge")
    assert os.environ["GLIBC_TUNABLES"] == MODES["huge"]
    set_mode("4k")
    assert "GLIBC_TUNABLES" not in os.environ
