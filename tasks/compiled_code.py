"""Stored CPU candidates rebuilt for their assembly, read into models/asm_features.py's columns.

A candidate is rebuilt from its task's module and its trace, for its profile's target, exactly
as the measurer builds it (tasks/measure/worker.py), and LLVM prints its assembly instead of an
object. ~0.2 s a candidate on one core of a Zen 4: the features cost a build, so they serve
studies and re-ranking a few picks, not ranking a search's thousands.

Builds run in worker processes (TVM and PyTorch each ship LLVM; this process never imports
TVM), `processes` at a time, up to JOB_CANDIDATES of one task per job. Two ways to keep what
they read:
- `store_asm_features` (`tenforge dataset asm`): the columns, in the store's features table,
  where datasets load them (DataSpec(asm=True)); shards leave them out;
- `asm_features` (studies, bench/asm_features.py): a cache file (.npz) keeping each
  candidate's compute functions' assembly (zlib, ~4 KB), so a change to the columns costs no
  build; it belongs to one store (candidate ids are store-local) and says which.
Either way a run that stops resumes where it was.
"""

from __future__ import annotations

import json
import multiprocessing
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import TenforgeError
from core.hardware import is_x86_cpu
from models.asm_features import ASM_DIM, asm_vector, compute_text
from storage.feature_rows import ASM_EXTRACTOR

Job = tuple[str, str, list[tuple[int, str]]]  # (task module JSON, target JSON, [(id, trace)])
JOB_CANDIDATES = 32  # candidates of one task built by one job (each job loads the module)


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


def _built(programs: Sequence[tuple], processes: int
           ) -> Iterator[list[tuple[int, bytes | str]]]:
    """The candidates of `programs` (queries.candidate_programs rows) built in worker
    processes, a job's results (up to JOB_CANDIDATES of one task) at a time as they finish.
    A Ctrl-C or an error here drops the jobs not yet started instead of waiting for them."""
    jobs: dict[tuple[str, int], Job] = {}
    counts: dict[str, int] = {}
    for candidate_id, workload, mod_json, trace, target in programs:
        # at most JOB_CANDIDATES a job: a task of hundreds of slow builds (a BERT matmul's)
        # would hold a worker, the progress line and the next save for many minutes
        part = counts[workload] = counts.get(workload, -1) + 1
        jobs.setdefault((workload, part // JOB_CANDIDATES), (mod_json, target, []))[2].append(
            (candidate_id, trace))
    context = multiprocessing.get_context("spawn")  # no TVM state forked from this process
    pool = ProcessPoolExecutor(processes, mp_context=context)
    try:
        for future in as_completed([pool.submit(_asm_job, job) for job in jobs.values()]):
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class _Tally:
    """Builds done, failed (by first error line), and the rate: the progress lines."""

    def __init__(self, wanted: int, progress: Callable[[str], None]):
        self.wanted, self.progress, self.start = wanted, progress, time.perf_counter()
        self.done, self.errors = 0, {}

    def add(self, results: list[tuple[int, bytes | str]]) -> None:
        self.done += len(results)
        for _, text in results:
            if isinstance(text, str):
                self.errors[text] = self.errors.get(text, 0) + 1

    def line(self) -> None:
        rate = self.done / max(time.perf_counter() - self.start, 1e-9)
        self.progress(f"assembly read for {self.done} of {self.wanted} candidates "
                      f"({rate:.1f}/s, {sum(self.errors.values())} failed)")

    def end(self) -> None:
        self.progress(f"assembly read for {self.done} candidates in "
                      f"{time.perf_counter() - self.start:.0f} s "
                      f"({sum(self.errors.values())} failed to build)")
        for message, times in sorted(self.errors.items(), key=lambda item: -item[1])[:3]:
            self.progress(f"  {times} x {message}")


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
    if wanted:
        with Store(db, read_only=True) as store:
            hopeless = queries.unbuildable(store, wanted)
            failed |= hopeless
            wanted = [c for c in wanted if c not in hopeless]
            programs = queries.candidate_programs(store, wanted)
        tally, last_save = _Tally(len(wanted), progress), time.perf_counter()
        try:
            for results in _built(programs, processes):
                tally.add(results)
                for candidate_id, text in results:
                    if isinstance(text, str):
                        failed.add(candidate_id)
                    else:
                        texts[candidate_id] = text
                if cache is not None and time.perf_counter() - last_save > 60:
                    _save_cache(cache, db, texts, failed)
                    last_save = time.perf_counter()
                    tally.line()
        finally:
            if cache is not None:
                _save_cache(cache, db, texts, failed)
        tally.end()
    out = np.full((len(candidate_ids), ASM_DIM), np.nan, np.float32)
    for row, candidate_id in enumerate(candidate_ids):
        text = texts.get(int(candidate_id))
        if text is not None:
            out[row] = asm_vector(zlib.decompress(text).decode())
    return out


def store_asm_features(db: str, hardware: str, processes: int = 2, limit: int | None = None,
                       progress: Callable[[str], None] = lambda _: None) -> dict[str, int]:
    """Build every measured candidate of CPU profile `hardware` in `db` that has no assembly
    columns yet (the first `limit`, task by task) and store its columns in table features
    (ASM_EXTRACTOR; NaN where the build failed, so it is not tried again). The store is opened
    for writing only to save, about once a minute: a run that stops keeps what it saved, and
    the same call resumes."""
    from storage import queries
    from storage.feature_rows import add_feature_rows, unfeatured_candidates
    from storage.store import Store

    if not Path(db).exists():
        raise TenforgeError(f"store {db} does not exist; collect into it first "
                            "(`tenforge collect`) or load the seed (`tenforge dataset load-seed`)")
    with Store(db, read_only=True) as store:
        kind = queries.stored_target(store, hardware)
        if kind is None or not is_x86_cpu(*kind):
            raise TenforgeError(f"the assembly columns read x86 code; {hardware} is "
                                f"{'not in ' + db if kind is None else '/'.join(kind)}: "
                                "name an x86 CPU profile of the store (`tenforge hardware`)")
        wanted = unfeatured_candidates(store, hardware, ASM_EXTRACTOR)[:limit]
        hopeless = queries.unbuildable(store, wanted)  # a build that timed out: missing
        programs = queries.candidate_programs(store, [c for c in wanted if c not in hopeless])
    counts = {"wanted": len(wanted), "stored": 0, "failed": len(hopeless)}
    pending = [(c, np.full(ASM_DIM, np.nan, np.float32)) for c in sorted(hopeless)]

    def save() -> None:
        if pending:
            ids, rows = [c for c, _ in pending], np.stack([v for _, v in pending])
            with Store(db) as store:
                counts["stored"] += add_feature_rows(store, ids, ASM_EXTRACTOR, rows)
            pending.clear()

    tally, last_save = _Tally(len(wanted), progress), time.perf_counter()
    try:
        for results in _built(programs, processes):
            tally.add(results)
            for candidate_id, text in results:
                failed = isinstance(text, str)
                counts["failed"] += failed
                pending.append((candidate_id, np.full(ASM_DIM, np.nan, np.float32) if failed
                                else asm_vector(zlib.decompress(text).decode())))
            if time.perf_counter() - last_save > 60:
                save()
                last_save = time.perf_counter()
                tally.line()
    finally:
        save()
    tally.end()
    return counts
