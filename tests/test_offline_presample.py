"""bench/offline/presample.py's host profiles: a lent machine's host CPU is presampled here
under the profile its own shards recorded, so that its collect finds the candidates."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from core.errors import TenforgeError

ROOT = Path(__file__).resolve().parents[1]


def _presample():
    spec = importlib.util.spec_from_file_location("presample", ROOT / "bench/offline/presample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_shard_manifest_gives_the_hosts_profile_as_its_store_row_had_it():
    manifest = next((ROOT / "dataset/device/h200-20261130-s68").glob("*-ce528b24.json"))
    profile = _presample().profile_of_shard(manifest)
    stored = json.loads(manifest.read_text())["hardware"]
    row = profile.as_row()
    # the store refuses a profile whose target changed under the same name (upsert_hardware):
    # the presampled row must be the one the host's own collect registers
    assert profile.name == "cpu-emeraldrapids-avx512-1t" and profile.num_threads == 1
    for key in ("name", "target_json", "features_json", "runner_json", "description"):
        assert json.loads(row[key]) == json.loads(stored[key]) if key.endswith("json") \
            else row[key] == stored[key]
    assert row["feature_vector"] == stored["feature_vector"]


def test_a_file_that_is_no_shard_manifest_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text('{"format": 1}')
    with pytest.raises(TenforgeError, match="not a shard manifest with a hardware block"):
        _presample().profile_of_shard(bad)
