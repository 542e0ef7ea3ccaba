"""bench/shard_table.py: a collection's table of shards, with the tasks no other shard had, on
the shard's profile and on any profile, read from manifests and task lists alone."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bench.shard_table import known_tasks, rate_per_min, table_rows

ROOT = Path(__file__).resolve().parents[1]


def _shard(folder: Path, stem: str, profile: str, hashes: list[str], measured: int,
           first: str = "2026-11-29 10:00:00", last: str = "2026-11-29 10:02:00") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"hardware": {"name": profile}, "network": ["vit"], "batch_size": 2,
            "parameters": {"input_size": 96, "graph": "exported"}, "measured": measured,
            "errors": 1, "first_measured_at": first, "last_measured_at": last}
    (folder / f"{stem}.json").write_text(json.dumps(meta))
    pq.write_table(pa.table({"workload_hash": hashes}), folder / f"{stem}.tasks.parquet")


def test_new_tasks_are_counted_against_other_folders_per_profile_and_overall(tmp_path):
    _shard(tmp_path / "seed" / "cpu-a", "old-a", "cpu-a", ["t1", "t2"], 10)
    _shard(tmp_path / "seed" / "cpu-b", "old-b", "cpu-b", ["t3"], 10)
    new = tmp_path / "extra" / "new"
    _shard(new, "s1", "cpu-a", ["t1", "t3", "t4"], 60)  # t3 is new to cpu-a only, t4 to all
    _shard(new, "s2", "cpu-a", ["t4", "t5"], 30, last="2026-11-29 10:00:00")  # no duration
    anywhere, by_profile = known_tasks([tmp_path / "seed", tmp_path / "extra"], new)
    assert anywhere == {"t1", "t2", "t3"}  # the folder's own shards are not "known"
    rows = table_rows(new, anywhere, by_profile)
    assert rows[0] == ("s1", "vit@96:2", 3, 2, 1, 60, 1, 30)
    assert rows[1] == ("s2", "vit@96:2", 2, 2, 2, 30, 1, None)
    assert rows[-1] == ("all (distinct tasks)", "", 4, None, 2, 90, 2, None)


def test_a_missing_or_empty_folder_is_refused_in_one_line(tmp_path):
    for folder in (tmp_path / "absent", tmp_path):
        run = subprocess.run([sys.executable, "bench/shard_table.py", str(folder)], cwd=ROOT,
                             capture_output=True, text=True)
        assert run.returncode != 0
        assert len(run.stderr.strip().splitlines()) == 1
        assert "give a folder of shards" in run.stderr or "no shards in" in run.stderr


def test_a_rate_needs_both_times():
    assert rate_per_min({"measured": 10}) is None
    assert rate_per_min({"measured": 10, "first_measured_at": "2026-11-29 10:00:00",
                         "last_measured_at": "2026-11-29 10:00:30"}) == 20
