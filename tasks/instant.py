"""Instant tuning: a whole network in minutes, with a pre-trained model and no search.

Per task: sample many candidates from MetaSchedule's design space (tasks.sampling), rank them
with the learned model (the same per-store features it was trained on), measure only the top
few, and keep the fastest in a MetaSchedule JSON database; then compile the network with it
and time it end to end, as a full retune does. Every task gets a measured, model-chosen
schedule, the small ones included, so no function of the build keeps an unscheduled default.

It spends its time measuring what the model believes in, and none on evolution: the model's
ranking is the whole search. That is what a pre-trained model is for on a machine seen for the
first time, and the baseline the full search must beat.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

import numpy as np

from core.hardware import HardwareProfile


def _commit(database: Any, task_mod: Any, target: Any, results: list[tuple[str, Any]]) -> None:
    """A task's measured candidates, (trace JSON, MeasureResult), as MetaSchedule tuning
    records (a failed one with run_secs 1e10, as MetaSchedule writes them)."""
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms

    workload = database.commit_workload(task_mod)
    args_info = ms.arg_info.ArgInfo.from_prim_func(task_mod["main"])
    for trace_json, result in results:
        sch = s_tir.Schedule(task_mod)
        s_tir.schedule.Trace.apply_json_to_schedule(json.loads(trace_json), sch)
        run_secs = [1e10] if result.error_kind else [float(s) for s in result.run_secs]
        database.commit_tuning_record(ms.database.TuningRecord(
            sch.trace, workload, run_secs=run_secs, target=target, args_info=args_info))


def instant_tune(extracted: list[Any], chosen: list[int], flops: list[float],
                 profile: HardwareProfile, database: Any, model_path: str, log: Any,
                 measurer: Any, samples: int, measure_top: int, seed: int,
                 report: Callable[[str], None] = print,
                 context_of: list[int] | None = None) -> None:
    """Tune the `chosen` tasks of `extracted` (`flops` each) instantly into `database`; `log`
    (a TuningLog) gets every measured batch, as the search's callback would feed it, under
    the context `context_of[i]` of the i-th chosen task (default: i; a search that follows
    may give a task several contexts)."""
    from core.tvm_env import load_tvm
    from models.dataset import dataset_from_features
    from models.registry import load_model
    from tasks.measure import MeasureJob
    from tasks.sampling import sample_candidates

    tvm = load_tvm(profile.target)
    from tvm.s_tir.meta_schedule.utils import shash2hex

    model = load_model(model_path)
    hardware = np.array(profile.feature_vector(), np.float32)
    target = profile.tvm_target()
    next_id = 0  # unique per run: a worker loads each artifact path once (dlopen caches it)
    for context, index in enumerate(chosen):
        if log.should_stop():
            break
        task = extracted[index]
        task_mod = task.dispatched[0]
        mod_json = tvm.ir.save_json(task_mod)
        started = time.monotonic()
        candidates, _ = sample_candidates(mod_json, profile.target, samples, seed)
        if not candidates:
            report(f"{task.task_name}: no valid candidate in its design space; left untuned")
            continue
        scores = model.predict(dataset_from_features(
            [c.features for c in candidates], profile.name, hardware,
            traces=[c.trace_json for c in candidates]))
        top = [candidates[i] for i in np.argsort(-scores, kind="stable")[:measure_top]]
        measuring = time.monotonic()
        results = measurer.measure([MeasureJob(next_id + i, shash2hex(task_mod), mod_json,
                                               c.trace_json, flops[context])
                                    for i, c in enumerate(top)])
        log.add_measure_time(time.monotonic() - measuring)
        next_id += len(top)
        _commit(database, task_mod, target, [(c.trace_json, r) for c, r in zip(top, results)])
        log.add(context if context_of is None else context_of[context],
                [None if r.error_kind else list(r.run_secs) for r in results])
        failed = [r.error_kind for r in results if r.error_kind]
        report(f"{task.task_name}: ranked {len(candidates)} candidates, measured the top "
               f"{len(top)} in {time.monotonic() - started:.1f} s"
               + (f" ({len(failed)} failed: {', '.join(sorted(set(failed)))})" if failed else ""))


def measure_top_for(trials: int, tasks: int) -> int:
    """Candidates measured per task: the trial budget spread over the tasks, at least 2."""
    return max(2, trials // max(tasks, 1))
