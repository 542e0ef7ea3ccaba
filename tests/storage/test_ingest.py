"""Ingest: shards from several machines' outboxes go into one store, checksummed, once each,
resumably; a damaged or newer-format shard is refused in one line with nothing written.

The machines here are folders of real seed shards split between two outboxes (the same files
a worker's collect exports); tests/test_service.py runs two real workers end to end."""

import json
import shutil
from pathlib import Path

import pytest

from storage.ingest import ingest_shards
from storage.seed import SEED_DIR, find_shards, load_shards
from storage.store import Store
from tests.conftest import run_cli

MANIFESTS = find_shards(SEED_DIR)


def copy_shard(manifest: Path, outbox: Path) -> Path:
    folder = outbox / manifest.parent.name
    folder.mkdir(parents=True, exist_ok=True)
    stem = manifest.name[:-len(".json")]
    for name in (f"{stem}.json", f"{stem}.parquet", f"{stem}.tasks.parquet"):
        shutil.copy(manifest.parent / name, folder / name)
    return folder / manifest.name


@pytest.fixture
def outboxes(tmp_path):
    """Two machines' outboxes: the seed's shards, alternately."""
    a, b = tmp_path / "machine-a", tmp_path / "machine-b"
    for i, manifest in enumerate(MANIFESTS[:6]):
        copy_shard(manifest, a if i % 2 == 0 else b)
    return a, b


def counts(db) -> tuple:
    with Store(db, read_only=True) as store:
        return store.query("SELECT (SELECT count(*) FROM tasks), (SELECT count(*) FROM "
                           "candidates), (SELECT count(*) FROM measurements), (SELECT count(*) "
                           "FROM features), (SELECT count(*) FROM ingested_shards)")[0]


def test_two_outboxes_ingest_once_and_equal_a_direct_load(outboxes, tmp_path):
    a, b = outboxes
    central = tmp_path / "central.duckdb"
    first = ingest_shards(central, [a, b], progress=lambda _: None)
    assert first["shards_new"] == 6 and first["measurements_added"] == sum(
        json.loads(m.read_text())["measured"] for m in MANIFESTS[:6])
    # the same shards loaded straight into another store give the same rows
    direct = tmp_path / "direct.duckdb"
    staged = tmp_path / "staged"
    for manifest in MANIFESTS[:6]:
        copy_shard(manifest, staged)
    load_shards(direct, staged, progress=lambda _: None)
    assert counts(central)[:4] == counts(direct)[:4]
    # again, and with one outbox copied into a third folder: nothing new
    shutil.copytree(a, tmp_path / "a-again")
    again = ingest_shards(central, [a, b, tmp_path / "a-again"], progress=lambda _: None)
    assert again["shards_new"] == 0 and again["measurements_added"] == 0
    assert counts(central)[4] == 6


def test_a_killed_ingest_resumes_with_the_missing_shards(outboxes, tmp_path):
    a, b = outboxes
    central = tmp_path / "central.duckdb"
    ingest_shards(central, [a], progress=lambda _: None)  # "killed" after machine a's shards
    resumed = ingest_shards(central, [a, b], progress=lambda _: None)
    assert resumed["shards_new"] == 3
    assert counts(central)[4] == 6


@pytest.mark.parametrize("damage, message", [
    ("checksum", "checksum differs"),
    ("newer", "shard format 2, but this tenforge reads format 1; upgrade tenforge"),
])
def test_a_bad_shard_is_refused_in_one_line_and_nothing_is_written(outboxes, tmp_path, damage,
                                                                   message):
    a, b = outboxes
    central = str(tmp_path / "central.duckdb")
    ingest_shards(central, [a], progress=lambda _: None)
    before = counts(central)
    manifest = sorted(b.rglob("*.json"))[-1]
    if damage == "checksum":
        data = manifest.with_name(manifest.name[:-len(".json")] + ".parquet")
        blob = bytearray(data.read_bytes())
        blob[len(blob) // 2] ^= 0xFF
        data.write_bytes(bytes(blob))
    else:
        meta = json.loads(manifest.read_text())
        manifest.write_text(json.dumps({**meta, "format": 2}))
    result = run_cli("ingest", str(a), str(b), "--db", central)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert counts(central) == before


def test_a_missing_source_is_refused(tmp_path):
    result = run_cli("ingest", str(tmp_path / "nowhere"), "--db", str(tmp_path / "c.duckdb"))
    assert result.returncode == 2 and "is not a folder" in result.stderr
    assert not (tmp_path / "c.duckdb").exists()
