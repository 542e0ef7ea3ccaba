"""bench/collect_overlap.py: builds packed onto workers chunk by chunk against one stream,
hand-computed, and on a real shard of the H200 (its build times are facts of that lease)."""

from pathlib import Path

import pytest

from bench.collect_overlap import chunked_seconds, main, packed_seconds

SHARD = (Path(__file__).resolve().parents[1] / "dataset/device/h200-20261204-s90"
         / "20261204T173542-resnet18+mobilenet_v2+bert-3cb012dd.parquet")


def test_a_chunk_waits_for_its_slowest_build_and_a_stream_does_not():
    builds = [10.0, 1.0, 1.0, 1.0]  # two workers, chunks of two
    assert packed_seconds(builds, 2) == 10.0  # the other worker builds the three short ones
    assert chunked_seconds(builds, 2, 2) == 10.0 + 1.0
    assert packed_seconds([], 3) == 0.0


def test_the_h200_shard_projects_a_saving_and_bad_input_is_one_line(capsys, tmp_path):
    assert main([str(SHARD), "--workers", "8", "--chunk", "16"]) == 0
    out = capsys.readouterr().out
    assert "272 builds" in out and "projected saving: 1.87x" in out
    with pytest.raises(SystemExit, match="not a shard's measurements file"):
        main([str(SHARD).replace(".parquet", ".tasks.parquet")])
    with pytest.raises(SystemExit, match="at least 1"):
        main([str(SHARD), "--workers", "0"])
