"""bench/label_statistic.py: which of a measurement's mean and median a fresh timing agrees
with, and a model trained and scored on each statistic's labels."""

import numpy as np
import pytest

from tests.conftest import SEED_PROFILE


def _record(mean, median, fresh):
    return {"candidate_id": 0, "stored_mean": mean, "stored_median": median,
            "run_secs": list(fresh), "error_kind": None}


def test_closeness_says_which_stored_statistic_a_fresh_timing_agrees_with():
    from bench.label_statistic import closeness

    records = [_record(3.0, 1.0, [1.0, 1.0, 1.1]),  # one hiccup in the stored repeats
               _record(2.0, 1.0, [1.0, 1.0, 9.0]),  # and again in the fresh ones
               _record(1.0, 1.0, [1.2, 1.2, 1.2]),  # calm: both the same distance
               _record(1.02, 1.0, [1.0, 1.0, 1.0]),
               _record(1.2, 1.0, [1.0] * 3),  # neither spiky nor calm: left out
               {**_record(3.0, 1.0, []), "error_kind": "run_error"}]  # failed again: left out
    out = closeness(records)
    assert out["spiky"]["candidates"] == 2 and out["calm"]["candidates"] == 2
    assert out["spiky"]["median_closer"] == 1.0 and out["spiky"]["median_off"] == 0.0
    assert out["spiky"]["mean_off"] == pytest.approx(np.median([np.log(3), np.log(2)]))
    assert out["spiky"]["spiky_again"] == 0.5
    assert out["calm"]["median_closer"] == 0.5  # a tie is not "closer"


def test_spiky_and_calm_candidates_come_from_their_stored_repeats(seed_store):
    from bench.label_statistic import CALM, SPIKY, spiky_and_calm

    rows = spiky_and_calm(seed_store, SEED_PROFILE, 5)
    assert 0 < len(rows) <= 10
    for _, mean, median, workload, mod_json, trace_json, flops in rows:
        assert mean / median > SPIKY or mean / median < CALM
        assert workload.startswith("0x") and mod_json and trace_json and flops > 0
    assert spiky_and_calm(seed_store, SEED_PROFILE, 5) == rows  # seeded draw


def test_both_statistics_train_and_score_on_the_same_splits(seed_store):
    from bench.label_statistic import score_both

    runs = score_both(seed_store, (SEED_PROFILE,), {"n_estimators": 20}, ("resnet18",), [0])
    assert {(r["trained"], r["scored"]) for r in runs} == {
        (t, s) for t in ("mean", "median") for s in ("mean", "median")}
    for r in runs:
        assert 0 < r["mean_network_top1"] <= r["mean_network_top5"] <= 1
        assert {n.split("@")[0] for n in r["networks"]} == {"resnet18"}
