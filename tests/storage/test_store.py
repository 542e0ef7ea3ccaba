"""Store writes: idempotent inserts, a profile name never changes meaning, failures are rows."""

import json
from dataclasses import dataclass

import numpy as np
import pytest

from core.errors import TenforgeError
from storage.store import Store
from tasks.hardware import detect_local_profiles


@dataclass
class T:
    task_name: str = "mm"
    workload_hash: str = "0xabc"
    flops: float = 2.0
    mod_json: str = "{}"
    weight: int = 3


@dataclass
class C:
    schedule_hash: str
    trace_json: str = "[[], []]"
    design_space: int = 0
    sample_seed: int = 1
    features: np.ndarray = None


@dataclass
class R:
    candidate_id: int
    run_secs: tuple = (1e-3, 3e-3)
    error_kind: str | None = None
    error_msg: str | None = None
    verified: bool | None = True
    build_s: float = 0.1
    run_wall_s: float = 0.01


def _seed(store):
    hid = store.upsert_hardware(detect_local_profiles()[0].as_row())
    nid = store.upsert_network("net", 1, 8)
    tid = store.upsert_tasks([T()], nid)["0xabc"]
    sid = store.settings_id("k", {"a": 1})
    return hid, tid, sid


def test_inserts_are_idempotent_and_measurements_unique(db):
    with Store(db) as store:
        hid, tid, sid = _seed(store)
        assert _seed(store) == (hid, tid, sid)
        cands = [C(f"h{i}", features=np.ones((2, 164), np.float32) * i) for i in range(3)]
        assert store.insert_candidates(tid, hid, cands, extractor="x") == 3
        assert store.insert_candidates(tid, hid, cands, extractor="x") == 0
        pending = store.pending_candidates(hid, sid)
        assert len(pending) == 3
        ids = [p["candidate_id"] for p in pending]
        results = [R(ids[0]), R(ids[1], run_secs=(), error_kind="run_crash", error_msg="boom",
                                verified=None)]
        assert store.insert_measurements(sid, results, "0.27", "run-1") == 2
        assert store.insert_measurements(sid, results, "0.27", "run-2") == 0  # never twice
        assert [p["candidate_id"] for p in store.pending_candidates(hid, sid)] == [ids[2]]
        rows = store.query("SELECT network, mean_latency_s, error_kind FROM v_measurements "
                           "ORDER BY candidate_id")
        assert rows == [("net", pytest.approx(2e-3), None), ("net", None, "run_crash")]
        feats = store.scalar("SELECT \"values\" FROM features WHERE candidate_id = ?", [ids[2]])
        assert len(feats) == 2 * 164 and feats[0] == 2.0
        assert store.scalar("SELECT weight FROM network_tasks") == 3


def test_a_changed_profile_under_an_old_name_is_refused(db):
    profile = detect_local_profiles()[0]
    row = profile.as_row()
    with Store(db) as store:
        store.upsert_hardware(row)
        changed = {**row, "target_json": '{"kind": "llvm", "mcpu": "x86-64"}'}
        with pytest.raises(TenforgeError, match="give the changed profile a new name"):
            store.upsert_hardware(changed)


def test_another_chip_under_a_stored_name_is_refused(db):
    row = detect_local_profiles()[0].as_row()
    features = json.loads(row["features_json"])
    with Store(db) as store:
        hid = store.upsert_hardware(row)
        other = {**features, "l3_bytes": features["l3_bytes"] + 1024**2}
        with pytest.raises(TenforgeError, match="stored with l3_bytes=.* but this one has "
                                                "l3_bytes=.*another chip under the same name"):
            store.upsert_hardware({**row, "features_json": json.dumps(other)})
        appended = {**features, "a_feature_added_later": 1.0}  # not in HARDWARE_FEATURE_NAMES
        assert store.upsert_hardware({**row, "features_json": json.dumps(appended)}) == hid
        assert store.scalar("SELECT count(*) FROM hardware") == 1


def test_a_failed_transaction_leaves_nothing(db):
    with Store(db) as store:
        hid, tid, sid = _seed(store)
        with pytest.raises(RuntimeError):
            with store.transaction():
                store.insert_candidates(tid, hid, [C("x1")])
                raise RuntimeError("killed mid-batch")
        assert store.scalar("SELECT count(*) FROM candidates") == 0


def test_ctrl_c_during_a_transaction_waits_for_its_commit(db):
    """A deadline's SIGINT that lands while a measured batch is stored once aborted DuckDB's
    insert and lost the batch; now the batch commits and the interrupt follows."""
    import os
    import signal

    # Python's own Ctrl-C handler (a pytest-xdist worker ignores SIGINT: its controller
    # takes Ctrl-C), put back as it was afterwards
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with Store(db) as store:
            hid, tid, sid = _seed(store)
            with pytest.raises(KeyboardInterrupt):
                with store.transaction():
                    store.insert_candidates(tid, hid, [C("x1")])
                    os.kill(os.getpid(), signal.SIGINT)
                    store.insert_candidates(tid, hid, [C("x2")])
            assert store.scalar("SELECT count(*) FROM candidates") == 2
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_store_at_rest_is_one_file_and_an_unfolded_log_is_not_lost(db):
    """A default close folds the write-ahead log into the file (so copying the file copies the
    store); `checkpoint=False` leaves its commits in the log, which the next open replays."""
    from pathlib import Path

    wal = Path(f"{db}.wal")
    with Store(db) as store:
        hid, tid, _ = _seed(store)
    assert not wal.exists()
    with Store(db, checkpoint=False) as store, store.transaction():
        store.insert_candidates(tid, hid, [C("h1", features=np.ones((1, 164), np.float32))],
                                extractor="x")
    assert wal.exists() and wal.stat().st_size > 0
    with Store(db, read_only=True) as store:  # a reader sees it, the log still unfolded
        assert store.candidate_hashes(tid, hid) == ["h1"]
    assert wal.exists()
    with Store(db) as store, store.transaction():
        store.insert_candidates(tid, hid, [C("h2", features=np.ones((1, 164), np.float32))],
                                extractor="x")
    assert not wal.exists()
    with Store(db, read_only=True) as store:
        assert sorted(store.candidate_hashes(tid, hid)) == ["h1", "h2"]


def test_the_store_close_bench_times_both_modes_and_refuses_a_missing_store(db, capsys,
                                                                           monkeypatch):
    import sys

    from bench import store_close

    with Store(db) as store:
        hid, tid, _ = _seed(store)
        store.insert_candidates(tid, hid, [C(f"h{i}", features=np.ones((1, 164), np.float32))
                                           for i in range(2)], extractor="x")
    monkeypatch.setattr(sys, "argv", ["store_close", "--db", db, "--rounds", "2"])
    store_close.main()
    out = capsys.readouterr().out
    assert "checkpoint" in out and "log only" in out and "x; the flow's one close" in out
    with Store(db, read_only=True) as store:  # it timed a copy: the store itself is untouched
        assert sorted(store.candidate_hashes(tid, hid)) == ["h0", "h1"]
    monkeypatch.setattr(sys, "argv", ["store_close", "--db", f"{db}.missing"])
    with pytest.raises(SystemExit, match="no store at"):
        store_close.main()


def test_a_hardware_row_gives_back_the_profile_it_was_made_of():
    from core.hardware import HardwareProfile

    for profile in detect_local_profiles():
        assert HardwareProfile.from_row(profile.as_row()) == profile


def test_a_store_draws_no_progress_bar_on_stdout(db):
    """DuckDB's bar for a query over 2 s would land inside `--json` output; both modes off."""
    with Store(db) as store:
        store.upsert_network("net", 1, 8)
    for read_only in (False, True):
        with Store(db, read_only=read_only) as store:
            assert store.con.execute(
                "SELECT current_setting('enable_progress_bar')").fetchone()[0] is False
