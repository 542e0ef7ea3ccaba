"""Stored CPU candidates rebuilt for their assembly, read into models/asm_features.py's columns.

A candidate is rebuilt from its task's module and its trace, for its profile's target, exactly
as the measurer builds it (tasks/measure/worker.py), and LLVM prints its assembly instead of an
object. ~0.2 s a candidate on one core of a Zen 4: the features cost a build, so they serve
studies and re-ranking a few picks, not ranking a search's thousands.

Builds run in worker processes (TVM and PyTorch each ship LLVM; this process never imports
TVM), `processes` at a time, one task's candidates per job. A cache file (.npz) keeps each
candidate's compute functions' assembly (zlib, ~4 KB), so a run that stops resumes where it
was and a change to the columns costs no build; it belongs to one store (candidate ids are
store-local) and says which.
"""

from __future__ import annotations

import json
import multiprocessing
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import TenforgeError
from models.asm_features import ASM_DIM, asm_vector, compute_text

Job = tuple[str, str, list[tuple[int, str]]]  # (task module JSON, target JSON, [(id, trace)])


def candidate_asm(tvm: Any, mod: Any, trace_json: str, target: dict) -> str:
    """The x86 assembly of one candidate: `mod` (the task's module) scheduled by its trace."""
    from tvm.target import Target

    from tasks.sampling import scheduled_module

    return tvm.compile(scheduled_module(mod, trace_json),
                       target=Target(target)).mod.inspect_source("asm")


def _asm_job(job: Job) -> list[tuple[int, bytes | str]]:
    """In a worker: each candidate of one task's job, as (id, its compute functions' assembly,
    zlib-compressed) or (id, the error's first line) where its build fails."""
    from core.tvm_env import load_tvm

    mod_json, target_json, candidates = job
    target = json.loads(target_json)
    tvm = load_tvm(target)
    mod = tvm.ir.load_json(mod_json)
    out = []
    for candidate_id, trace in candidates:
        try:
            text = compute_text(candidate_asm(tvm, mod, trace, target))
            out.append((candidate_id, zlib.compress(text.encode(), 6)))
        except Exception as error:  # noqa: BLE001 - TVM raises TVMError subclasses
            out.append((candidate_id, (str(error).strip().splitlines() or ["?"])[-1][:200]))
    return out


def _load_cache(cache: Path | None, db: str) -> tuple[dict[int, bytes], set[int]]:
    """(candidate id -> compressed assembly, the ids whose build failed) of a cache file."""
    if cache is None or not cache.exists():
        return {}, set()
    with np.load(cache) as saved:
        if str(saved["store"]) != str(Path(db).resolve()):
            raise TenforgeError(f"{cache} holds the assembly of {saved['store']}'s candidates; "
                                f"give a cache file of {db} (candidate ids are store-local) or "
                                "a new file name")
        blob, ends = saved["blob"].tobytes(), saved["ends"].tolist()
        starts = [0] + ends[:-1]
        return ({i: blob[a:b] for i, a, b in zip(saved["ids"].tolist(), starts, ends)},
                set(saved["failed"].tolist()) if "failed" in saved.files else set())


def _save_cache(cache: Path, db: str, texts: dict[int, bytes], failed: set[int]) -> None:
    ids = sorted(texts)
    ends = np.cumsum([len(texts[i]) for i in ids], dtype=np.int64)
    blob = np.frombuffer(b"".join(texts[i] for i in ids), np.uint8)
    partial = cache.with_name(cache.name + ".partial.npz")  # np.savez adds .npz otherwise
    np.savez(partial, store=str(Path(db).resolve()), ids=np.array(ids, np.int64), ends=ends,
             blob=blob, failed=np.array(sorted(failed), np.int64))
    partial.replace(cache)  # whole or not at all: a run killed mid-write keeps the last cache


def asm_features(db: str, candidate_ids: Sequence[int], processes: int = 2,
                 cache: Path | None = None,
                 progress: Callable[[str], None] = lambda _: None) -> np.ndarray:
    """models/asm_features.ASM_NAMES of each candidate of `db`, float32 [n, ASM_DIM] in the
    order of `candidate_ids`; NaN rows where a build failed (a tree reads NaN as missing), and
    the cache remembers the failure.
    The cache keeps each candidate's assembly, not its columns: a change to the columns reads
    them again from the text, without a build."""
    from storage import queries
    from storage.store import Store

    texts, failed = _load_cache(cache, db)  # a failed build is not tried again
    wanted = sorted({int(c) for c in candidate_ids} - set(texts) - failed)
    errors: dict[str, int] = {}
    if wanted:
        with Store(db, read_only=True) as store:
            programs = queries.candidate_programs(store, wanted)
        jobs: dict[str, Job] = {}
        for candidate_id, workload, mod_json, trace, target in programs:
            jobs.setdefault(workload, (mod_json, target, []))[2].append((candidate_id, trace))
        start, done, last_save = time.perf_counter(), 0, time.perf_counter()
        context = multiprocessing.get_context("spawn")  # no TVM state forked from this process
        with ProcessPoolExecutor(processes, mp_context=context) as pool:
            for future in as_completed([pool.submit(_asm_job, job) for job in jobs.values()]):
                for candidate_id, text in future.result():
                    if isinstance(text, str):
                        failed.add(candidate_id)
                        errors[text] = errors.get(text, 0) + 1
                    else:
                        texts[candidate_id] = text
                    done += 1
                if cache is not None and time.perf_counter() - last_save > 60:
                    _save_cache(cache, db, texts, failed)
                    last_save = time.perf_counter()
                    progress(f"assembly read for {done} of {len(wanted)} candidates "
                             f"({done / (last_save - start):.1f}/s, {len(failed)} failed)")
        if cache is not None:
            _save_cache(cache, db, texts, failed)
        progress(f"assembly read for {done} candidates in {time.perf_counter() - start:.0f} s "
                 f"({sum(errors.values())} failed to build)")
        for message, times in sorted(errors.items(), key=lambda item: -item[1])[:3]:
            progress(f"  {times} x {message}")
    out = np.full((len(candidate_ids), ASM_DIM), np.nan, np.float32)
    for row, candidate_id in enumerate(candidate_ids):
        text = texts.get(int(candidate_id))
        if text is not None:
            out[row] = asm_vector(zlib.decompress(text).decode())
    return out
