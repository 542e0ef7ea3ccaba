"""bench/build_cap.py: the build cap's rule applied to a store's measurements, per profile."""

import subprocess
import sys
from pathlib import Path

from bench.build_cap import rows

ROOT = Path(__file__).resolve().parents[1]


def _parse(row):
    profile, _median, cap, builds, cut, _past, _share, lost, near, tasks = row
    return (profile, float(cap), int(builds.replace(",", "")),
            int(cut.split()[0]), int(lost.split()[0]), int(near), int(tasks.replace(",", "")))


def test_a_cap_above_every_build_cuts_nothing_and_one_below_every_build_cuts_all(seed_store):
    none = [_parse(r) for r in rows(seed_store, floor=1e6, factor=1.0)]
    assert none and all(cut == 0 and lost == 0 and near == 0 for *_, cut, lost, near, _ in none)
    every = [_parse(r) for r in rows(seed_store, floor=1e-9, factor=1e-9)]
    assert [r[0] for r in every] == [r[0] for r in none]  # the same profiles, in order
    for profile, cap, builds, cut, lost, near, tasks in every:
        assert cut == builds, profile  # every build took longer than the cap
        assert lost == tasks and near >= tasks, profile  # so every task's best is lost


def test_the_default_rule_cuts_few_builds_and_reports_them(seed_store):
    for profile, cap, builds, cut, lost, near, tasks in map(_parse, rows(seed_store, 10.0, 20.0)):
        assert cap >= 10.0 and 0 <= lost <= min(cut, tasks) and near <= cut < builds, profile


def test_a_missing_store_is_one_line_and_a_nonzero_exit(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "build_cap.py"), "--db",
                           str(tmp_path / "nothing.duckdb")], capture_output=True, text=True)
    assert done.returncode != 0
    assert done.stderr.strip() == f"--db {tmp_path / 'nothing.duckdb'}: no such store; give a " \
        "tenforge DuckDB file"
