"""The `pipeline` flow: the main job on embedded defaults (local CPU, a DuckDB file, Prefect's
ephemeral API): load the shipped seed dataset into an empty store, collect on two small networks,
run a small cost-model search on everything the store holds, pre-train the winner's
configuration on the seed's profiles and adapt it to the local one (onboarding it when this
store had no data of it: calibration set, fine-tuning, three-way accuracy table), retune a
small network with MetaSchedule's own cost model, with the learned one and with the learned one
instantly (no search), then show what is there."""

from __future__ import annotations

from prefect import flow
from pydantic import PositiveInt

from flows.collect import collect
from flows.onboard import onboard
from flows.retune import retune
from flows.search import search
from flows.transfer import pretrain, transfer
from tasks import prefect_reports as reports
from tasks import prefect_tasks as t
from tasks.pipeline import validate_pipeline


@flow(name="pipeline", log_prints=True)
def pipeline(hardware: str = "local", networks: list[str] = ["mlp", "tiny_cnn"],  # noqa: B006
             candidates_per_task: PositiveInt = 4, seed: int = 0, db: str | None = None,
             search_trials: PositiveInt = 4, search_budget_s: float = 120.0,
             retune_network: str = "tiny_cnn", retune_trials: PositiveInt = 16,
             calibration_candidates: PositiveInt = 96,
             sources: list[str] | None = None) -> dict:
    """Seed an empty store, collect a few candidates per task of small networks on `hardware`,
    then summarize.

    Args:
        hardware: a hardware profile name; 'local' = this CPU.
        networks: zoo networks to collect.
        candidates_per_task: distinct candidates per tuning task.
        seed: sampling seed.
        db: DuckDB file (default: $TENFORGE_DB or data/tenforge.duckdb).
        search_trials: trials of the small search (xgb and mlp; `tenforge search` for more).
        search_budget_s: time budget of that search.
        retune_network: the network retuned at the end, with the baseline and learned model.
        retune_trials: measured candidates per retune.
        calibration_candidates: when `hardware` had no data before this run, it is onboarded
            (`onboard`) with a calibration set of this size.
        sources: the other profiles the search and the pre-training learn from (default:
            every profile of this target kind with data in the store; fewer train faster).
    """
    spec = validate_pipeline(db, hardware, networks, candidates_per_task, seed, search_trials,
                             search_budget_s, retune_network, retune_trials,
                             calibration_candidates, sources)
    seeded = t.load_seed_if_empty(spec.db)
    new_hardware = not t.has_measurements(spec.db, spec.hardware)
    summary = collect(hardware=spec.hardware, networks=list(spec.networks),
                      candidates_per_task=candidates_per_task, seed=seed, db=spec.db)
    # the search, the pre-training and the adaptation all learn from this target kind's data
    # (CPUs for a CPU): the seed also holds a GPU's, whose features mean other things
    sources = t.source_profiles(spec.db, spec.hardware, list(spec.sources))
    found = search(hardware=[spec.hardware, *sources], families=["xgb", "mlp"],
                   trials=search_trials, time_budget_s=search_budget_s, max_epochs=10,
                   seed=seed, db=spec.db)
    adapted = _pretrain_and_adapt(spec.db, spec.hardware, sources, found["model_id"], seed,
                                  calibration_candidates if new_hardware else None)
    # onboard measured which model ranks this profile best (the fine-tuned one or its parent)
    learned = (adapted or {}).get("retune_uses") or (adapted or found)["model_id"]
    # full search with MetaSchedule's model and with the learned one, then the learned one
    # without search (instant: rank sampled candidates, measure the top few per task)
    # on the exported graph: the graph the models here learned from (collect's default)
    tuned = {f"{model} {scheduler}": retune(network=retune_network, hardware=spec.hardware,
                                            trials=retune_trials, cost_model=model,
                                            scheduler=scheduler, seed=seed, db=spec.db,
                                            graph="exported")
             for model, scheduler in (("metaschedule-xgb", "gradient"), (learned, "gradient"),
                                      (learned, "instant"))}
    reports.pipeline_report(spec.db, retune_network, spec.hardware)
    return {**summary, "seed": seeded, "search": found, "transfer": adapted, "retune": tuned}


def _pretrain_and_adapt(db: str, hardware: str, sources: list[str], winner: str, seed: int,
                        calibration: int | None) -> dict | None:
    """Pre-train the search winner's configuration on the `sources` profiles (the seed's of
    this target kind), then adapt it to `hardware`: onboard it (calibration set, fine-tune,
    three-way accuracy) when it had no data before this run, else fine-tune on all of its
    measurements."""
    if not sources:
        print("no other profile's data in the store: skipping pretrain -> transfer")
        return None
    parent = pretrain(hardware=sources, from_model=winner, seed=seed, db=db)
    if calibration is not None:
        return onboard(hardware=hardware, candidates=calibration, parent=parent["model_id"],
                       seed=seed, db=db)
    return transfer(parent=parent["model_id"], hardware=hardware, samples=None, strategy="full",
                    seed=seed, db=db)
