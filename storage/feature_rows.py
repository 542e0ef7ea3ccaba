"""Feature rows computed after a candidate was measured (table features, any extractor).

The collect path stores each candidate's PerStoreFeature rows as it samples it. Other columns
cost more than a sample: the assembly columns (models/asm_features.py) need a build each, so
`tenforge dataset asm` adds them afterwards (tasks/compiled_code.py), a batch at a time, and a
dataset asks for them by name (models.dataset.DataSpec.asm). A candidate whose build failed
keeps a row of NaN, so it is not built again and a tree reads it as missing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from storage.store import Store

# The assembly columns (models/asm_features.py): a change to what a column means takes a new
# name, so rows of the old meaning are never read as the new.
ASM_EXTRACTOR = "asm_x86_v1"
# Rows added after measuring. Shards leave them out (storage/seed_export.py): one row per
# measurement, and the seed's 20 MB; whoever loads a shard can build them again.
DERIVED_EXTRACTORS = (ASM_EXTRACTOR,)


def unfeatured_candidates(store: Store, hardware: str, extractor: str) -> list[int]:
    """Measured candidates of profile `hardware` with no `extractor` row yet, task by task."""
    return [c for (c,) in store.query(
        "SELECT c.candidate_id FROM candidates c JOIN hardware h USING (hardware_id) "
        "WHERE h.name = ? AND EXISTS (SELECT 1 FROM measurements m WHERE m.candidate_id = "
        "c.candidate_id) AND NOT EXISTS (SELECT 1 FROM features f WHERE f.candidate_id = "
        "c.candidate_id AND f.extractor = ?) ORDER BY c.task_id, c.candidate_id",
        [hardware, extractor])]


def add_feature_rows(store: Store, candidate_ids: Sequence[int], extractor: str,
                     values: np.ndarray) -> int:
    """Store one row of `values` [n, dim] per candidate, all or none (in a transaction of its
    own); rows a candidate already has for `extractor` are kept. Returns how many were added."""
    with store.transaction():
        return insert_feature_rows(store, candidate_ids, extractor, values)


def insert_feature_rows(store: Store, candidate_ids: Sequence[int], extractor: str,
                        values: np.ndarray) -> int:
    """`add_feature_rows` inside the caller's transaction (collect stores a batch's columns
    with its measurements)."""
    values = np.asarray(values, np.float32)
    if values.ndim != 2 or values.shape[0] != len(candidate_ids):
        raise ValueError(f"{len(candidate_ids)} candidates need values of shape "
                         f"[{len(candidate_ids)}, dim], not {values.shape}")
    if not len(candidate_ids):
        return 0
    rows = pa.table({
        "candidate_id": pa.array(list(candidate_ids), pa.int64()),
        "extractor": [extractor] * len(candidate_ids),
        "dim": pa.array([values.shape[1]] * len(candidate_ids), pa.int32()),
        "n_stores": pa.array([1] * len(candidate_ids), pa.int32()),
        "values": pa.array(list(values), pa.list_(pa.float32())),
    })
    before = store.scalar("SELECT count(*) FROM features WHERE extractor = ?", [extractor])
    store._insert_arrow("features", rows, on_conflict_ignore=True)
    return int(store.scalar("SELECT count(*) FROM features WHERE extractor = ?",
                            [extractor])) - int(before)


def feature_matrix(store: Store, candidate_ids: Sequence[int], extractor: str,
                   dim: int) -> np.ndarray:
    """float32 [n, dim] in the order of `candidate_ids`: each one's `extractor` row, NaN where
    it has none (or one of another width: columns of an older version of the extractor)."""
    out = np.full((len(candidate_ids), dim), np.nan, np.float32)
    if not len(candidate_ids):
        return out
    where = {int(c): i for i, c in enumerate(candidate_ids)}
    cur = store.con.execute(
        "SELECT candidate_id, \"values\" FROM features WHERE extractor = ? AND dim = ? AND "
        "candidate_id IN (SELECT unnest(?))", [extractor, dim, list(where)])
    table = cur.to_arrow_table()
    if table.num_rows:
        flat = table.column("values").combine_chunks().values.to_numpy(zero_copy_only=False)
        rows = [where[c] for c in table.column("candidate_id").to_pylist()]
        out[rows] = np.asarray(flat, np.float32).reshape(-1, dim)
    return out
