"""Commands that run a flow: the flow's own validate function first (one line, exit 2, before
Prefect starts), then the flow with the same parameters (it validates them again, cheaply)."""

from __future__ import annotations

import argparse


def cmd_collect(args: argparse.Namespace) -> int:
    from tasks.collect import validate_collect

    spec = validate_collect(args.db, args.hardware, args.networks, args.candidates, args.seed,
                            args.batch_size, args.measure_batch, args.outbox, args.input_size,
                            args.graph, args.simt, args.reuse_tasks, args.asm)
    from flows.collect import collect

    collect(hardware=args.hardware, networks=args.networks, candidates_per_task=args.candidates,
            seed=args.seed, batch_size=args.batch_size, input_size=args.input_size, db=spec.db,
            measure_batch=args.measure_batch, outbox=spec.outbox, graph=args.graph,
            simt=args.simt, reuse_tasks=args.reuse_tasks, asm=args.asm)
    return 0


def cmd_pipeline(args: argparse.Namespace) -> int:
    from tasks.pipeline import validate_pipeline

    spec = validate_pipeline(args.db, args.hardware, args.networks, args.candidates, args.seed,
                             search_trials=args.search_trials,
                             retune_trials=args.retune_trials,
                             calibration_candidates=args.calibration,
                             sources=args.sources)
    from flows.pipeline import pipeline

    pipeline(hardware=args.hardware, networks=args.networks,
             candidates_per_task=args.candidates, seed=args.seed, db=spec.db,
             search_trials=args.search_trials, retune_trials=args.retune_trials,
             calibration_candidates=args.calibration, sources=list(spec.sources) or None)
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from tasks.training_specs import validate_search

    spec = validate_search(args.db, args.hardware, args.networks, args.split, args.holdout,
                           args.families, args.trials, args.time_budget, args.metric,
                           args.multi_objective, args.seed, args.max_epochs, args.study,
                           args.register_if_better)
    from flows.search import search

    search(hardware=args.hardware, networks=args.networks, split=args.split,
           holdout=args.holdout, families=args.families, trials=args.trials,
           time_budget_s=args.time_budget, metric=args.metric,
           multi_objective=args.multi_objective, seed=args.seed, max_epochs=args.max_epochs,
           study=args.study, db=spec.db, register_if_better=args.register_if_better)
    return 0


def cmd_pretrain(args: argparse.Namespace) -> int:
    from tasks.training_specs import validate_pretrain

    spec = validate_pretrain(args.db, args.hardware, args.family, args.params, args.from_model,
                             args.networks, args.holdout, args.register_if_better)
    from flows.transfer import pretrain

    pretrain(hardware=args.hardware, family=args.family, params=args.params,
             from_model=args.from_model, networks=args.networks, seed=args.seed, db=spec.db,
             holdout=args.holdout, register_if_better=args.register_if_better)
    return 0


def cmd_transfer(args: argparse.Namespace) -> int:
    from tasks.training_specs import validate_transfer

    spec = validate_transfer(args.db, args.parent, args.hardware, args.samples, args.strategy,
                             args.networks, args.seed)
    from flows.transfer import transfer

    transfer(parent=args.parent, hardware=args.hardware, samples=args.samples,
             strategy=args.strategy, networks=args.networks, seed=args.seed, db=spec.db)
    return 0


def cmd_retune(args: argparse.Namespace) -> int:
    from tasks.retune import validate_retune

    params = dict(network=args.network, hardware=args.hardware, trials=args.trials,
                  minutes=args.minutes, cost_model=args.cost_model, scheduler=args.scheduler,
                  flops_share=args.flops_share, batch_size=args.batch_size, seed=args.seed,
                  population=args.population, out=args.out, input_size=args.input_size,
                  warm_start=args.warm_start, graph=args.graph,
                  trials_per_round=args.trials_per_round, warm_samples=args.warm_samples,
                  hold_top=args.hold_top, rerank_model=args.rerank_model,
                  tile_mix=args.tile_mix)
    spec = validate_retune(args.db, **params)
    from flows.retune import retune

    retune(**params, force=args.force, db=spec.db)
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    """Not a flow: one local compile, no orchestration (`retune --out` runs it as a task)."""
    from tasks.deploy import compile_deployable, validate_compile

    spec = validate_compile(args.db, args.network, args.hardware, args.tuning_id, args.out)
    compile_deployable(spec)
    return 0


def cmd_onboard(args: argparse.Namespace) -> int:
    from tasks.onboard import validate_onboard

    spec = validate_onboard(args.db, args.hardware, args.candidates, args.parent, args.family,
                            args.strategy, args.seed)
    from flows.onboard import onboard

    onboard(hardware=args.hardware, candidates=args.candidates, parent=args.parent,
            family=args.family, strategy=args.strategy, seed=args.seed, db=spec.db)
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from storage.ingest import check_new_shards
    from tasks.ingest import validate_ingest

    spec = validate_ingest(args.db, args.sources)
    # Beyond the flow's own checks: a damaged or newer shard refused in one line before Prefect
    # starts (the ingest task checksums them all again before its first write).
    check_new_shards(spec.db, list(spec.sources))
    from flows.ingest import ingest

    ingest(sources=list(spec.sources), db=spec.db)
    return 0
