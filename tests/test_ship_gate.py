"""The shipped model's gate over several seeds (bench/ship_model.py --gate-seeds): each seed
trains on its own by_network split and is scored on the same held-out rows, and seeds that
would test other rows, or bad seed lists, are refused in one line."""

import pytest

from bench.ship_model import gate_scores, gate_sentence, parse_seeds
from models.splits import SplitSpec, make_split
from tests.models.synthetic import synthetic_dataset


def _data():
    data = synthetic_dataset(n_groups=24, per_group=16)
    # six networks of four tasks each: net0 is held out, the rest train or validate
    data.workload_networks.update({f"w{g}": {f"net{g % 6}": 1} for g in range(24)})
    return data


def test_each_gate_seed_scores_the_same_held_out_rows():
    data = _data()
    first = make_split(data, SplitSpec("by_network", seed=0, valid_fraction=0.15,
                                       holdout=("net0",)))
    scores = gate_scores(data, ("net0",), "lgbm", {"n_estimators": 20}, [1, 2], first.test)
    assert list(scores) == [1, 2]
    assert all(0 < score <= 1 for score in scores.values())
    with pytest.raises(SystemExit, match="tests other rows than the first seed's"):
        gate_scores(data, ("net0",), "lgbm", {"n_estimators": 20}, [1], first.test[1:])


@pytest.mark.parametrize("text, message", [("0,x", "give comma-separated integers"),
                                           ("1,1", "each seed once")])
def test_bad_gate_seeds_are_refused_in_one_line(text, message):
    with pytest.raises(SystemExit, match=message):
        parse_seeds(text)
    assert parse_seeds("0,1,2") == [0, 1, 2]


def test_the_readme_says_what_the_gate_measured_and_beat():
    gate = {"seeds": {"0": 0.7339, "1": 0.7104, "2": 0.7438}, "median": 0.7339,
            "shipped": "shipped-old", "shipped_score": 0.7307}
    text = gate_sentence(gate)
    assert "seeds 0 0.734, 1 0.710, 2 0.744, median 0.734" in text
    assert "against 0.731 for the model shipped before it (shipped-old)" in text
    assert text.endswith(": +0.003.")
    first = gate_sentence({"seeds": {"0": 0.7}, "median": 0.7})
    assert "shipped before" not in first and first.endswith("median 0.700.")
