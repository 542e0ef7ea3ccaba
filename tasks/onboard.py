"""First contact with new hardware (the `onboard` flow's plain steps, no Prefect).

A person with a new machine wants to know one thing: how well can tenforge rank candidates
here, after how little measuring? Onboarding answers it:

1. Calibration set: a few hundred candidates over tasks the store already measured on other
   profiles, chosen to be informative. Tasks: round-robin over operator kinds (a conv, a dense,
   a depthwise conv, ... before a second of any kind), heaviest kind first, so a small set
   covers the operators a network is made of. Within a kind, cheap tasks first: a task whose median
   candidate took over CHEAP_MEDIAN_S on its source profile comes after every cheaper one.
   (Measured: with the grown seed the heaviest tasks were VGG's convs and BERT's dense layers,
   whose candidates take 20 ms-1.8 s each, ~3.7 s a candidate with the warm-up, repeats and
   reference check; 48 of them took 3 minutes of a 2-vCPU machine. A lighter task of the same
   operator kind teaches the same ranking.) Candidates per task: the source profile's measured
   candidates at evenly spaced quantiles of its latency, the best included, so the set holds
   both the top (what tuning needs ranked right) and the spread (the pairs a ranking learns
   from). The same schedules are re-measured here, so source and target labels of one program
   sit side by side.
2. Fine-tune the best pre-trained model on the calibration tasks (transfer, whole tasks held
   out), and train MetaSchedule's XGBModel from scratch on the same rows.
3. Report held-out ranking accuracy: pre-trained as is, fine-tuned, and from scratch. Both
   registered models' scores on this profile go to `model_evaluations`, so retune then tunes
   with whichever ranked these held-out tasks best (fine-tuning does not always win).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import TenforgeError
from core.spec import Spec
from storage import queries
from storage.store import Store
from tasks.hardware import check_runnable_here, resolve_profile
from tasks.shipped import SHIPPED, register_shipped, require_shipped_for, shipped_for

PER_TASK = 12  # candidates per calibration task: enough pairs to rank, few enough for many tasks
CHEAP_MEDIAN_S = 0.005  # a calibration task's median candidate on its source, preferred below


@dataclass(frozen=True)
class StoredCandidate:
    """A candidate as insert_candidates takes it, copied from another profile's row."""

    schedule_hash: str
    trace_json: str
    design_space: int
    sample_seed: int
    features: np.ndarray


def operator_kind(task_name: str) -> str:
    """'fused_conv2d_add_relu_1' and 'fused_conv2d31_add2_relu2' -> 'conv2d_add_relu': the
    operator chain without TVM's numbering (a copy number at the end, or, as TVM 0.27 names
    tasks, one glued to each operator), so tasks of one kind share a key."""
    ops = [re.sub(r"^(conv[123]d|[a-z]+)\d+$", r"\1", op)
           for op in task_name.removeprefix("fused_").split("_") if not op.isdigit()]
    return "_".join(ops)


@dataclass(frozen=True)
class OnboardSpec(Spec):
    """A validated onboard request (the profile's real name; parent None: choose one)."""

    hardware: str
    candidates: int
    parent: str | None
    family: str
    strategy: str
    seed: int


def validate_onboard(db: str | None, hardware: str, candidates: int, parent: str | None,
                     family: str = "xgb", strategy: str = "residual",
                     seed: int = 0) -> OnboardSpec:
    """Cheap checks before any work."""
    from models.registry import model_class
    from models.transfer import check_strategy_name
    from tasks.validation import check_db_path, check_positive_ints

    check_strategy_name(strategy)
    model_class(family)  # an unknown family fails here
    profile = resolve_profile(hardware)
    check_runnable_here(profile)
    check_positive_ints(candidates=candidates)
    if candidates < 4 * PER_TASK:
        raise TenforgeError(f"candidates must be at least {4 * PER_TASK} (4 tasks of "
                            f"{PER_TASK}: some are held out to score the models), got "
                            f"{candidates}")
    path = check_db_path(db)
    if parent == SHIPPED:
        require_shipped_for(profile)  # none for this CPU: refused here, in one line
    elif parent is not None:
        with Store(path, read_only=True) as store:
            store.model_row(parent)  # an unknown id fails here, in one line
    return OnboardSpec(db=path, hardware=profile.name, candidates=candidates, parent=parent,
                       family=family, strategy=strategy, seed=seed)


def model_for_tuning(db: str, hardware: str) -> str | None:
    """The model retune would pick for `hardware` now (tasks.retune_model.best_model)."""
    from tasks.retune_model import best_model

    with Store(db, read_only=True) as store:
        return best_model(store, hardware)


def choose_calibration(db: str, target: str, target_kind: str,
                       candidates: int) -> list[dict[str, Any]]:
    """The calibration set: [{task_id, source, candidate_ids}] over tasks measured on other
    profiles (see the module docstring for why these)."""
    with Store(db, read_only=True) as store:
        rows = queries.calibration_pool(store, target, target_kind)
    by_task: dict[int, dict[str, Any]] = {}
    for task_id, name, load, source, cand, latency in rows:
        entry = by_task.setdefault(task_id, {"name": name, "load": float(load or 0),
                                             "sources": {}})
        entry["sources"].setdefault(source, []).append((latency, cand))
    usable = []
    for task_id, entry in by_task.items():
        source, measured = max(entry["sources"].items(), key=lambda kv: (len(kv[1]), kv[0]))
        if len(measured) >= PER_TASK:
            usable.append((task_id, entry, source, sorted(measured)))
    if not usable:
        raise TenforgeError(f"no task has {PER_TASK} measured candidates on another profile "
                            "to calibrate against; load the seed first (`tenforge dataset "
                            "load-seed`)")

    def priority(item: tuple) -> tuple:  # cheap to measure first, then heaviest
        measured = item[3]
        return (measured[len(measured) // 2][0] > CHEAP_MEDIAN_S, -item[1]["load"], item[0])

    kinds: dict[str, list] = {}
    for item in sorted(usable, key=priority):
        kinds.setdefault(operator_kind(item[1]["name"]), []).append(item)
    order = []  # round-robin over operator kinds, heaviest kind (all its tasks' load) first
    queues = sorted(kinds.values(), key=lambda q: -sum(item[1]["load"] for item in q))
    while any(queues) and (len(order) + 1) * PER_TASK <= candidates:
        for queue in queues:
            if queue and (len(order) + 1) * PER_TASK <= candidates:
                order.append(queue.pop(0))
    chosen = []
    for task_id, _, source, measured in order:
        picks = np.unique(np.linspace(0, len(measured) - 1, PER_TASK).round().astype(int))
        chosen.append({"task_id": task_id, "source": source,
                       "candidate_ids": [measured[i][1] for i in picks]})
    return chosen


def stage_calibration(db: str, hardware: str, chosen: list[dict[str, Any]]) -> list[int]:
    """Store the chosen schedules as candidates of `hardware` (features copied: they describe
    the program, not the machine); returns the task ids to measure."""
    from tasks.sampling import FEATURE_EXTRACTOR

    profile = resolve_profile(hardware)
    with Store(db) as store, store.transaction():
        hardware_id = store.upsert_hardware(profile.as_row())
        for pick in chosen:
            rows = queries.candidate_copies(store, pick["candidate_ids"], FEATURE_EXTRACTOR)
            copies = [StoredCandidate(h, trace, space or 0, seed or 0,
                                      np.asarray(values, np.float32).reshape(n, dim))
                      for h, trace, space, seed, n, dim, values in rows]
            store.insert_candidates(pick["task_id"], hardware_id, copies, source="calibration",
                                    extractor=FEATURE_EXTRACTOR)
    return [pick["task_id"] for pick in chosen]


def default_parent(db: str, target: str) -> str | None:
    """The newest pre-trained model that never saw the target's data (None: there is none)."""
    with Store(db, read_only=True) as store:
        return store.newest_pretrained(unseen_by=target)


def shipped_parent(db: str, target: str, asked: bool = False) -> str | None:
    """The shipped model for the target's CPU, registered in the store so that its child's
    lineage and evaluations name it (None: tenforge ships none for this CPU)."""
    profile = resolve_profile(target)
    shipped = require_shipped_for(profile) if asked else shipped_for(profile)
    return None if shipped is None else register_shipped(db, shipped)


def accuracy_table(result: dict[str, Any], markdown: bool = False) -> str:
    """The three-way table a person with a new machine wants."""
    from storage.reports import format_table, markdown_table

    rows = []
    for label, metrics in (("pre-trained, not fine-tuned", result["parent_test"]),
                           (f"fine-tuned ({result['samples']} calibration samples)",
                            result["metrics"]),
                           ("MetaSchedule XGB, same samples, from scratch",
                            result["baseline_test"])):
        rows.append((label, *(f"{metrics[k]:.4f}" if metrics.get(k) is not None else "-"
                              for k in ("peak1", "peak5", "pairwise"))))
    header = ["model", "top-1", "top-5", "pairwise"]
    return (markdown_table if markdown else format_table)(header, rows)


def has_measurements(db: str, hardware: str) -> bool:
    """Does the store hold measurements of this profile already?"""
    if not Path(db).exists():
        return False
    with Store(db, read_only=True) as store:
        return queries.measurement_count(store, hardware) > 0
