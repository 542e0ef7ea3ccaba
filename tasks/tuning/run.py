"""One tuning run end to end: import, select, search, compile, time (tune_network)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from core.errors import TenforgeError
from core.hardware import HardwareProfile
from core.procs import usable_cores
from tasks.asm_rerank import Rerank, checked_rerank_model
from tasks.budget_shares import samples_by_importance
from tasks.constraints import rules_for
from tasks.instant import fill_unmeasured, instant_tune, measure_top_for
from tasks.schedule_transfer import SourceSchedule
from tasks.schedulers import create_scheduler
from tasks.sources import Workload
from tasks.tuning.checks import (
    check_online_blend,
    check_tile_mix,
    check_warm_start,
    saved_model_path,
)
from tasks.tuning.contexts import (
    GENETIC_ITERS,
    INSTANT_SAMPLES,
    POPULATION_RATIO,
    WARM_SAMPLES,
    round_batch,
    search_population,
    tune_contexts,
)
from tasks.tuning.defaults import affordable_warm_start
from tasks.tuning.hold import HOLD_SHARE, HOLD_TOP, check_hold_top, occurrences, try_hold
from tasks.tuning.log import TuningLog, recorder, stop_on_signals, survive_search_errors
from tasks.tuning.result import TuningResult, e2e_summary, online_shares
from tasks.tuning.selection import SCHEDULERS, TaskShare, select_tasks

# A learned search's online model (models.ms_adapter) weighs as much as the pre-trained one
# after this many measurements of a task: the warm start and a task's first rounds follow the
# prior, a heavy task's 300th trial mostly the search's own data.
ONLINE_HALF = 64
# How a task's scores weigh that online model: by ONLINE_HALF's count alone ("count"), or by how
# the blend ranked the task's own measured batches ("prequential"; models/online_blend.py).
ONLINE_BLEND = "count"
# A warm start spread by share (warm_spread) measures this many picks of every task first.
WARM_SPREAD_TOP = 2


def tune_network(network: str | Workload, profile: HardwareProfile, work_dir: str | Path,
                 trials: int, minutes: float | None = None, cost_model: str = "xgb",
                 scheduler: str = "gradient", flops_share: float = 0.9,
                 trials_per_iter: int | None = None, population: int | None = None,
                 population_ratio: int = POPULATION_RATIO, seed: int = 0,
                 batch_size: int = 1, input_size: int | None = None, e2e_repeat: int = 20,
                 constraints: bool = True, report: Callable[[str], None] = print,
                 on_trials: Callable[[int], None] | None = None,
                 instant_top: int | None = None,
                 search_threads: int | None = None,
                 warm_start: int | None = None, warm_focus: bool = True,
                 graph: str = "exported", feature_cache: bool = True,
                 genetic_iters: int = GENETIC_ITERS,
                 warm_samples: int = WARM_SAMPLES,
                 transfer_library: Sequence[SourceSchedule] = (),
                 round_scale: float = 1.0, warm_evolve: int = 0,
                 warm_share: bool = False, refit_every: int | None = None,
                 online: int | None = ONLINE_HALF, online_blend: str = ONLINE_BLEND,
                 warm_by_trials: bool = False, warm_spread: bool = False,
                 hold_top: int = HOLD_TOP, hold_share: float = HOLD_SHARE,
                 overlap_builds: bool = False, rerank: Rerank | None = None,
                 build_cap: bool = True, tile_mix: float | None = None,
                 tile_steer: bool = False) -> TuningResult:
    """Tune `network` on `profile` (see the module docstring). The MetaSchedule JSON database
    (the tuned schedules) is written to `work_dir`. `trials_per_iter` (candidates measured
    per turn of a task) defaults to what gives every tuned task at least two turns, and
    `population` to `population_ratio` x that (tuning.contexts.search_population). A
    pre-trained model needs fewer per turn: with 8, resnet18's first estimate came after 218 s
    instead of 635 s (docs/tuning-results.md, the lean cells).
    `constraints` applies tasks.constraints' rules (drop hopeless candidates unmeasured).
    Scheduler "instant" measures `instant_top` candidates per task (default: the trials spread
    over the tasks, 2 to 8) out of `population` ranked by the model, then the rest of `trials`
    by each task's share of the estimated latency (tasks.instant).
    `search_threads` (default: every core this process may use) run the evolutionary search
    and draw a warm start's (or instant's) samples, that many tasks at a time; measuring never
    overlaps either, so the measurement's thread count is the profile's alone.
    `warm_start` (a learned `cost_model` and a searching scheduler): before the search, measure
    the model's top `warm_start` of `warm_samples` ranked candidates per task, as instant
    tuning does, out of the same trial budget. Every task then has a measured schedule within
    minutes (the estimate exists from there), and the search starts from those records, which
    MetaSchedule's evolutionary search seeds its population with. `warm_focus` (default): the
    gradient scheduler then skips its blind first pass over the tasks the warm start measured
    (tasks.schedulers, focus); on the Xeon's resnet18 that took the search-time speedup to
    XGB's final from 2.07x to 3.05x (median of 3 seeds) and ended lower (docs/tuning-results.md).
    `graph` is how the network is prepared before it is split (core.graphs.GRAPHS).
    `feature_cache`: a learned model reuses the features of programs it ranked before
    (models/feature_cache.py); off only to measure what that saves (bench/throughput.py).
    `genetic_iters`: the evolutionary search's mutation rounds per measured batch
    (tuning.contexts.tune_contexts; MetaSchedule's 4). `warm_samples`: candidates a warm start
    samples and ranks per task; sampling and featurizing them is most of its time (~7 s a
    convolution of mobilenet_v2 on the Emerald Rapids VM, 256 each: 222 s for 53 tasks;
    128: 143 s). `transfer_library`: other tasks' fastest schedules on this profile
    (tasks.schedule_transfer.load_library); a warm start or instant tuning then ranks
    candidates made from them beside its samples (tasks.instant.TRANSFERRED a task).
    `round_scale`: a round measures that many times the default batch (`trials_per_iter`
    unset; at least 1), out of the default batch's population. 2 on mobilenet_v2 (seed 0):
    a third less search time, but twice the trials to the same latency: the 14th-26th of an
    evolved population are much worse picks than its top 13 (docs/tuning-results.md).
    `warm_evolve` > 0: the warm start (or instant tuning) also ranks the children of each
    task's best samples, bred that many generations by the model alone before anything of the
    task is measured (tasks.model_evolution). `warm_share`: the warm start's `warm_samples` a
    task are a mean, spread by FLOPs x occurrences (tasks.budget_shares.samples_by_importance), so
    the heaviest tasks rank up to 4x as many and the lightest 16.
    `refit_every`: measurements a learned model folds in between refits on everything the
    search measured (models.ms_adapter; default REFIT_EVERY, 64). `online` (None: off): each
    refit also fits a model on the search's measurements alone, which a task's search scores
    blend in, weighing as much as the pre-trained model after `online` measurements of the
    task (models.ms_adapter; on the Zen 5's BERT it took the final estimate from 111 to 108 ms,
    XGB's 107, median of 3 seeds, docs/tuning-results.md). `online_blend` "prequential": each
    task's weight is the one under which the blend best ranked the task's own measured batches
    (models/online_blend.py), `online`'s count rule only until two batches say otherwise.
    `warm_by_trials` (a focused warm start, gradient scheduler): the gradient rule counts a warm
    start as the part of a turn its trials are (`warm_start` / `trials_per_iter`), not a whole
    turn, so tasks weighing a few percent get a turn after it (tasks.schedulers, warm_turn);
    off by default: on the Zen 5's BERT it ended at 112 ms estimated against 108.
    `warm_spread`: the warm start measures the top WARM_SPREAD_TOP of every task, then the rest
    of its `warm_start` x tasks picks by each task's share of the estimated latency, from
    the same ranked samples (tasks.instant's second pass without a fresh draw).
    `overlap_builds`: each batch builds in the background while the next task is searched,
    and is timed alone before the next batch builds (tasks.ms_overlap); the model learns each
    batch's results one search later. Off by default until measured (docs/tuning-results.md).
    Whatever ends the search early (a deadline, a search error; not an interrupt), a task it
    left with no valid measurement gets the model's pick measured before compiling
    (tasks.instant.fill_unmeasured), so no function keeps TVM's default schedule.
    `hold_top` > 0 (not after an interrupt): before compiling, each task weighing at least
    `hold_share` of the estimate has its best record measured again in fresh processes (its
    `hold_top` best where that one slipped), and the network is compiled from the held
    database (work_dir/held) those picks make (tasks.tuning.hold: on the Zen 5 a BERT build
    went from 146 to 119 ms). `rerank` (instant tuning or a warm start, x86 CPUs): the top
    picks of the tasks it names are built and re-ordered by an asm model, by what LLVM made of
    them, before the top is measured (tasks.asm_rerank). `build_cap` (default): a build far
    slower than the run's others is cut (tasks/measure/build_cap.py), so one 40 s compile
    does not hold a round; off, every build has the settings' timeout. `tile_mix` (a learned
    search; None: off): keep that share of each task's measured programs outside the innermost
    tile factor it measured most (models/tile_mix.py; models.tile_mix.TILE_MIX); `tile_steer`
    keeps them outside the factor that measured fastest, spent where the measurements say
    (tile_mix.steered)."""
    from core.tvm_env import load_tvm, structural_hash_hex
    from tasks.measure import BuildCap, Measurer, WorkerFailure
    from tasks.ms_backend import ms_builder, ms_runner
    from tasks.ms_overlap import OverlappedMeasuring
    from tasks.workloads import import_to_relax

    check_hold_top(hold_top)
    if not 0 < hold_share <= 1:
        raise TenforgeError(f"hold: share {hold_share}: give a share of the estimate in (0, 1]")
    if scheduler not in SCHEDULERS:
        raise TenforgeError(f"unknown scheduler {scheduler!r}; choose one of {SCHEDULERS}")
    check_warm_start(warm_start, cost_model, scheduler)
    if rerank and not (warm_start or scheduler == "instant"):
        raise TenforgeError("a re-rank model re-orders a learned model's picks before they are "
                            "measured: give it with --scheduler instant or a --warm-start")
    if rerank:  # before anything is built: a model that does not fit says so now
        checked_rerank_model(rerank, profile)
    given = {name: value for name, value in (("refit_every", refit_every), ("online", online))
             if value is not None}
    if given:
        from tasks.validation import check_positive_ints

        check_positive_ints(**given)
    check_online_blend(online_blend, online)
    check_tile_mix(tile_mix, cost_model, scheduler, tile_steer)
    tvm = load_tvm(profile.target)
    from tvm.s_tir import meta_schedule as ms

    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    relax_mod = import_to_relax(network, batch_size, input_size, graph)
    network = network.name if isinstance(network, Workload) else network  # reports, the row
    relax_json = tvm.ir.save_json(relax_mod)
    target = profile.tvm_target()
    extracted = list(ms.relax_integration.extract_tasks(relax_mod, target))
    from tvm.s_tir import analysis

    shares = [TaskShare(str(t.task_name), float(analysis.estimate_tir_flops(t.dispatched[0])),
                        int(t.weight)) for t in extracted]
    chosen = select_tasks(shares, flops_share)
    report(f"{network}: {len(extracted)} tasks, tuning "
           + ("every one (zero-FLOP data movement too)" if flops_share == 1 else
              f"the {len(chosen)} that carry >= {flops_share:.0%} of FLOPs x occurrences"))
    if warm_start:  # (check_warm_start refused one before the instant scheduler)
        affordable = affordable_warm_start(warm_start, trials, len(chosen))
        if affordable < warm_start:
            report(f"warm start: {affordable or 'none'} a task, not {warm_start}: {trials} trials "
                   f"over {len(chosen)} tasks, and a warm start takes at most half of them")
        warm_start = affordable or None
    log = TuningLog([shares[i].name for i in chosen], [float(extracted[i].weight) for i in chosen],
                    report=report, on_trials=on_trials, budget=trials)
    instant = scheduler == "instant"
    search_threads = search_threads or usable_cores()
    if instant:
        population = population or INSTANT_SAMPLES
    else:  # the rounds' batch as the tasks give it (the dual scheduler splits tasks further)
        population = population or search_population(
            trials_per_iter or round_batch(trials, len(chosen)), population_ratio)
    rules = rules_for(profile) if constraints and not instant else []
    contexts: list[Any] = []
    if not instant:
        contexts, context_task = tune_contexts(
            [extracted[i] for i in chosen], profile, work_dir, population, seed, rules,
            per_design_space=scheduler == "dual", on_reject=log.note_rejection,
            search_threads=search_threads, genetic_iters=genetic_iters)
        log.set_contexts(context_task)
    if len(contexts) > len(chosen):
        report(f"dual scheduling: {len(contexts)} (task, design space) pairs")
    if rules:
        report("resource-constraint rules: " + ", ".join(map(str, rules)))
    if trials_per_iter is None:  # every context gets at least two rounds of the budget
        trials_per_iter = round_batch(trials, len(contexts), round_scale)
    if not instant:
        report(f"search: {trials_per_iter} candidates measured per round, out of a population "
               f"of {population} through {genetic_iters} mutation rounds, on {search_threads} "
               "threads")
    model: Any = "xgb"
    if cost_model != "xgb" and not instant:
        from models.feature_cache import DEFAULT_MAX_BYTES
        from models.ms_adapter import REFIT_EVERY, learned_cost_model

        model = learned_cost_model(cost_model, profile, refit_every or REFIT_EVERY,
                                   cache_bytes=DEFAULT_MAX_BYTES if feature_cache else 0,
                                   online=online, blend=online_blend, mix=tile_mix,
                                   steer=tile_steer)
    focus = bool(warm_start) and warm_focus
    warm_turn = min(1.0, warm_start / trials_per_iter) if focus and warm_by_trials else None
    database = ms.database.JSONDatabase(work_dir=str(work_dir))
    reranked = None  # what re-ranking by the code cost (instant_tune's summary), if asked
    cap = BuildCap() if build_cap else None
    with Measurer(profile, build_cap=cap) as measurer:
        untuned = measurer.run_network(relax_json, None, repeat=e2e_repeat)
        report(f"untuned end-to-end: {np.median(untuned['run_secs']) * 1e3:.3f} ms")
        log.started = time.monotonic()  # the search budget starts now, after the untuned run
        cpu_started = time.process_time()
        log.deadline = log.started + 60 * minutes if minutes else None
        with stop_on_signals(log):
            with survive_search_errors(log):
                if warm_start:
                    per_task = samples_by_importance([shares[i].importance for i in chosen],
                                                     warm_samples) if warm_share else warm_samples
                    spread = min(WARM_SPREAD_TOP, warm_start) if warm_spread else warm_start
                    report(f"warm start: per task, rank {warm_samples} sampled candidates"
                           + (f" on average ({min(per_task)}-{max(per_task)}, by FLOPs x "
                              "occurrences)" if warm_share else "")
                           + f" with the model and measure the top {spread}"
                           + (f" (then {warm_start - spread} a task more by share of the "
                              "estimated latency)" if spread < warm_start else "") + ", then search"
                           + (f" (counted as {warm_turn:.2f} of a turn)" if warm_turn else ""))
                    first_context = [log.context_task.index(t) for t in range(len(chosen))]
                    reranked = instant_tune(
                        extracted, chosen, [shares[i].flops for i in chosen], profile,
                        database, cost_model, log, measurer, samples=per_task,
                        measure_top=spread, seed=seed, report=report,
                        context_of=first_context, library=transfer_library,
                        evolve_generations=warm_evolve, threads=search_threads,
                        budget=log.trials + warm_start * len(chosen)
                        if warm_spread else None, fresh_second=False,
                        rerank=rerank)
                if instant:
                    top = instant_top or measure_top_for(trials, len(chosen))
                    log.budget = max(trials, top * len(chosen))  # what it plans to measure
                    report(f"instant: per task, rank {population} sampled candidates with the "
                           f"model and measure the top {top}"
                           + (f"; the rest of {trials} trials by share of the estimated latency"
                              if trials > top * len(chosen) else ""))
                    reranked = instant_tune(
                        extracted, chosen, [shares[i].flops for i in chosen], profile,
                        database, cost_model, log, measurer, samples=population,
                        measure_top=top, seed=seed, report=report, budget=trials,
                        library=transfer_library, evolve_generations=warm_evolve,
                        threads=search_threads, rerank=rerank)
                elif log.trials < trials and not log.should_stop():  # (a warm start may spend it)
                    if overlap_builds:
                        overlapped = OverlappedMeasuring(measurer, log.add_measure_time)
                        builder, runner = overlapped.builder(), overlapped.runner()
                    else:
                        builder = ms_builder(measurer, log.add_measure_time)
                        runner = ms_runner(measurer, log.add_measure_time)
                    try:
                        ms.tune_tasks(tasks=contexts,
                                      task_weights=[log.context_weight(c)
                                                    for c in range(len(contexts))],
                                      work_dir=str(work_dir),
                                      max_trials_global=trials - log.trials,
                                      num_trials_per_iter=trials_per_iter,
                                      builder=builder, runner=runner,
                                      database=database, cost_model=model,
                                      measure_callbacks=[
                                          *ms.measure_callback.MeasureCallback.create("default"),
                                          recorder(log)],
                                      task_scheduler=create_scheduler(
                                          scheduler, log, seed, focus=focus,
                                          warm_turn=warm_turn or 1.0, overlap=overlap_builds))
                    finally:  # what builds next (fill_unmeasured, the hold) shares
                        if overlap_builds:  # the build workers: none may be in flight
                            overlapped.wait_for_builds()
            # a search cut short (deadline, error) may leave tasks unmeasured: they would keep
            # TVM's default schedules; the model (MetaSchedule's XGB: a sample) picks theirs
            try:
                filled = fill_unmeasured(extracted, chosen, [shares[i].flops for i in chosen],
                                         profile, database, saved_model_path(cost_model), log,
                                         measurer, seed, report)
            except RuntimeError as exc:  # TVM's errors: what was measured still compiles
                report(f"WARNING: picking schedules for the unmeasured tasks failed "
                       f"({type(exc).__name__}: {str(exc).strip()[-200:]}); they keep their "
                       "defaults")
                filled = []
        search_s = time.monotonic() - log.started
        search_cpu_s = time.process_time() - cpu_started
        build_s = measurer.build_s  # the untuned run before the search built nothing here
        cache = getattr(model, "feature_cache", None)
        blend_shares = online_shares(model)
        if blend_shares:
            report("online model's weight per task, as its own batches chose it: "
                   + ", ".join(f"{w} on {n} tasks" for w, n in blend_shares.items()))
        if cache is not None and cache.hits + cache.misses:
            report(f"features of {cache.hits} of {cache.hits + cache.misses} candidates ranked "
                   "came from the feature cache (programs ranked before)")
        report(f"search ended ({log.final_reason()}) after {log.trials} trials in "
               f"{search_s:.0f} s ({log.measure_s:.0f} s building and running candidates, "
               + (f"beside {build_s:.0f} s of builds overlapping the search"
                  if overlap_builds else f"{build_s:.0f} s of it building")
               + (f", {cap.cut} build{'s' * (cap.cut > 1)} cut as too slow" if cap and cap.cut
                  else "")
               + f"; {search_s - log.measure_s:.0f} s searching on {search_threads} threads); "
               "compiling with the best schedules found")
        held = None
        if hold_top and log.final_reason() != "interrupt" and log.trials:
            held = try_hold(work_dir, occurrences(extracted), profile, hold_share, hold_top,
                            report)
        database_dir = held.database_dir if held else str(work_dir)
        try:
            tuned = measurer.run_network(relax_json, database_dir, repeat=e2e_repeat)
        except (RuntimeError, WorkerFailure) as exc:
            raise TenforgeError(f"{network} with the tuned schedules of {database_dir} failed to "
                                f"compile or run: {exc}; earlier tuning results are "
                                "untouched") from None
    result = TuningResult(
        network=network, hardware=profile.name, cost_model=cost_model, scheduler=scheduler,
        tasks_total=len(extracted), tasks_tuned=log.task_names, trials=log.trials,
        errors=log.errors, search_s=search_s, measure_s=log.measure_s, search_cpu_s=search_cpu_s,
        build_s=build_s, search_threads=search_threads, population=population,
        stop_reason=log.final_reason(), estimated_s=log.estimated(),
        untuned=e2e_summary(untuned), tuned=e2e_summary(tuned), curve=log.curve,
        database_dir=database_dir, network_hash=structural_hash_hex(relax_mod),
        trials_per_task=dict(zip(log.task_names, log.trials_per_task)),
        rejected_by_rules=log.rejected_by_rules,
        trials_per_round=None if instant else trials_per_iter, tasks_filled=filled,
        warm_focus=warm_focus if warm_start else None,
        warm_samples=warm_samples if warm_start else None,
        transfer_sources=len(transfer_library) if (warm_start or instant) else 0,
        warm_evolve=warm_evolve if (warm_start or instant) else 0,
        warm_share=bool(warm_start and warm_share),
        warm_spread=bool(warm_start and warm_spread),
        feature_cache=cache.stats() if cache is not None else None,
        genetic_iters=None if instant else genetic_iters,
        online=online if model != "xgb" else None,
        online_blend=online_blend if model != "xgb" and online else None,
        online_shares=blend_shares or None, warm_turn=warm_turn, held=held,
        overlap_builds=overlap_builds and not instant, rerank=reranked,
        builds_cut=cap.cut if cap else None, tile_mix=tile_mix if model != "xgb" else None,
        tile_steer=tile_steer and model != "xgb")
    report(f"tuned end-to-end: {result.tuned['latency_s'] * 1e3:.3f} ms "
           f"({result.speedup:.2f}x faster than untuned; {result.tuned['tuned_functions']} of "
           f"{result.tuned['tir_functions']} functions from the database)")
    return result
