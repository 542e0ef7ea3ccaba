"""The shipped seed dataset: it loads with one command, matches its manifests, round-trips
through export unchanged, and a damaged shard is refused before anything is written."""

import json
import re
import shutil

import pyarrow.parquet as pq
import pytest

from storage.seed import SEED_DIR, find_shards, load_shards
from storage.seed_export import OUTBOX_COMPRESSION, export_shards
from storage.store import Store
from tests.conftest import run_cli

MANIFESTS = find_shards(SEED_DIR)


@pytest.fixture(scope="module")
def seeded(seed_store, tmp_path_factory):
    """The session's seed store (storage.seed.load_shards into an empty store), copied; the
    command a user types then finds every shard there already."""
    db = str(tmp_path_factory.mktemp("seed") / "seed.duckdb")
    shutil.copy(seed_store, db)
    result = run_cli("dataset", "load-seed", "--db", db)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"loaded {len(MANIFESTS)} seed shards (0 new measurements, {len(MANIFESTS)} " \
        "loaded before)" in result.stdout
    return db


def test_every_shard_is_in_the_store_as_its_manifest_says(seeded):
    with Store(seeded, read_only=True) as store:
        for path in MANIFESTS:
            m = json.loads(path.read_text())
            measured, errors, hardware = store.query(
                "SELECT count(*), count(m.error_kind), any_value(h.name) FROM measurements m "
                "JOIN candidates c USING (candidate_id) JOIN hardware h USING (hardware_id) "
                "WHERE m.flow_run_id = ?", [m["run_id"]])[0]
            assert (measured, errors, hardware) == (m["measured"], m["errors"],
                                                    m["hardware"]["name"]), path.name
            assert store.scalar("SELECT status FROM runs WHERE run_id = ?",
                                [m["run_id"]]) == m["run_status"]
        # the query surface shows it, and every measured candidate kept its features
        assert store.scalar("SELECT count(DISTINCT candidate_id) FROM v_measurements") == \
            sum(json.loads(p.read_text())["measured"] for p in MANIFESTS)
        assert store.scalar("SELECT count(*) FROM measurements m WHERE NOT EXISTS (SELECT 1 "
                            "FROM features f WHERE f.candidate_id = m.candidate_id)") == 0
        assert store.scalar("SELECT count(*) FROM measurements WHERE error_kind IS NULL AND "
                            "NOT mean_latency_s > 0") == 0


def test_loading_twice_adds_nothing(seeded):
    before = Store(seeded, read_only=True)
    counts = before.query("SELECT (SELECT count(*) FROM candidates), "
                          "(SELECT count(*) FROM measurements)")
    before.close()
    summary = load_shards(seeded, progress=lambda _: None)
    # each shard's run row says it is there: nothing is read into the store again
    assert summary["measurements_added"] == 0 and summary["loaded_before"] == len(MANIFESTS)
    with Store(seeded, read_only=True) as store:
        assert store.query("SELECT (SELECT count(*) FROM candidates), "
                           "(SELECT count(*) FROM measurements)") == counts


def test_export_of_a_loaded_store_reproduces_the_shards(seeded, tmp_path):
    from storage.block_names import variable_lookups

    # the outbox's faster level: the content, not the level, is what must round-trip
    export_shards(seeded, tmp_path, compression_level=OUTBOX_COMPRESSION)
    renamed = 0
    for path in MANIFESTS:
        stem = path.name[:-len(".json")]
        mine = pq.read_table(tmp_path / path.parent.name / f"{stem}.parquet")
        shipped = pq.read_table(path.parent / f"{stem}.parquet")
        assert mine.column_names == shipped.column_names
        # A trace of another import's block names comes back with the stored module's
        # (storage/block_names.py): it differs in those names alone.
        for a, b in zip(mine.column("trace_json").to_pylist(),
                        shipped.column("trace_json").to_pylist()):
            if a != b:
                renamed += 1
                assert variable_lookups(a) != variable_lookups(b), stem
                assert re.sub(_LOOKUP, "", a) == re.sub(_LOOKUP, "", b), stem
        mine = mine.drop_columns(["trace_json"])
        shipped = shipped.drop_columns(["trace_json"])
        # measured_at loses nothing; run_secs were float32 both times; features are the same bytes
        assert mine.equals(shipped), stem
    assert renamed < 100  # the few traces sampled on a module their shard does not carry


_LOOKUP = r'\["GetSBlock", \[\], \["lv[^"]*"'


def test_new_only_writes_no_shard_the_store_loaded_or_ingested(seeded, tmp_path):
    """`export-seed --new-only` into a new folder: a store that loaded the seed (load-seed) or
    took a shard in through `ingest` writes none of them again; without it, as before."""
    from storage.ingest import ingest_shards

    assert export_shards(seeded, tmp_path / "a", compression_level=OUTBOX_COMPRESSION,
                         new_only=True) == []
    one = MANIFESTS[0]
    folder = tmp_path / "one" / one.parent.name
    folder.mkdir(parents=True)
    for path in one.parent.glob(f"{one.stem}.*"):
        shutil.copy(path, folder)
    db = str(tmp_path / "ingested.duckdb")
    ingest_shards(db, [tmp_path / "one"], progress=lambda _: None)
    assert export_shards(db, tmp_path / "b", compression_level=OUTBOX_COMPRESSION,
                         new_only=True) == []
    again = export_shards(db, tmp_path / "c", compression_level=OUTBOX_COMPRESSION)
    assert [s.stem for s in again] == [one.stem]


def test_a_damaged_shard_is_refused_before_anything_is_written(tmp_path):
    seed = tmp_path / "seed"
    shutil.copytree(SEED_DIR, seed)
    victim = sorted(seed.glob("*/*.tasks.parquet"))[-1]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(data)
    db = tmp_path / "store.duckdb"
    result = run_cli("dataset", "load-seed", "--from", str(seed), "--db", str(db))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "checksum differs" in lines[0] and victim.name in lines[0]
    assert not db.exists()


def test_unknown_hardware_names_the_profiles_the_seed_has(tmp_path):
    result = run_cli("dataset", "load-seed", "--hardware", "tpu-v9", "--db",
                     str(tmp_path / "s.duckdb"))
    assert result.returncode == 2
    assert "no seed shards for hardware tpu-v9; the seed has: cpu-" in result.stderr
    assert not (tmp_path / "s.duckdb").exists()


def test_the_datasheet_shows_what_the_seed_holds():
    from pathlib import Path

    doc = (Path(SEED_DIR).parents[1] / "docs" / "seed-dataset.md").read_text()
    generated = run_cli("dataset", "info", "--markdown")
    assert generated.returncode == 0
    assert generated.stdout.strip() in doc, \
        "regenerate: ./run dataset info --datasheet docs/seed-dataset.md"


def test_the_seed_stays_within_its_20_mib_cap():
    """Issue 19: the repository carries what fits in 20 MiB; the rest stays in the collecting
    store, and docs/seed-dataset.md names what was left out."""
    from pathlib import Path

    size = sum(p.stat().st_size for p in Path(SEED_DIR).rglob("*") if p.is_file())
    assert size <= 20 * 2**20, f"the seed holds {size / 2**20:.2f} MiB: leave shards out"
