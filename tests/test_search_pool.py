"""bench/search_pool.py: models scored on what a search measured after its first N."""

import numpy as np
import pytest

from bench.search_pool import main, parse_after, pool_scores, replay
from core.errors import TenforgeError
from tests.conftest import SMALL_SEED_PROFILE
from tests.models.synthetic import synthetic_dataset


def test_a_replay_scores_only_what_the_search_measured_after_its_first_n():
    data = synthetic_dataset(n_groups=4, per_group=20, fail_every=7)
    order = np.random.default_rng(0).permutation(len(data))  # the search's measuring order
    assert {w for w, nets in data.workload_networks.items() if "net0" in nets} == {"w0", "w3"}
    seen_by = {}

    def oracle(train, test):  # knows the latencies of what it ranks
        seen_by["oracle"] = (set(train.candidate_id), set(test.candidate_id))
        return -np.where(np.isfinite(test.latency), test.latency, 1e9)

    def backwards(train, test):  # failed ones first, in falling scores: a pair of equal labels
        # agrees with a ranking unless the earlier row is scored higher (metrics.pairwise_accuracy)
        return np.where(np.isfinite(test.latency), test.latency, 1e9 + np.arange(len(test))[::-1])

    out = replay(data, order, 30, {"oracle": oracle, "backwards": backwards}, "net0")
    train, test = seen_by["oracle"]
    assert train == set(order[:30]) and test == set(order[30:]) and out["scored"] == 50
    assert out["oracle"]["top1"] == pytest.approx(1.0)
    assert out["oracle"]["pairwise"] == pytest.approx(1.0)
    assert out["backwards"]["top1"] < 0.5 and out["backwards"]["pairwise"] == pytest.approx(0.0)
    assert out["backwards"]["top5"] >= out["backwards"]["top1"]
    # the score covers the network's tasks only: tasks 1 and 2 count nothing, however ranked
    test_rows = data.subset(order[30:])
    scores = backwards(None, test_rows)
    right = np.isin(test_rows.group, [0, 3])  # right on the network's two tasks only
    scores[right] = oracle(data, test_rows)[right]
    assert pool_scores(test_rows, scores, "net0")["top1"] == pytest.approx(1.0)


@pytest.mark.parametrize("text", ["0", "100,-3", "ten", "100,,300"])
def test_after_must_be_positive_integers(text):
    with pytest.raises(TenforgeError, match="positive integer"):
        parse_after(text)


def test_a_missing_store_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["--db", str(tmp_path / "none.duckdb"), "--hardware", SMALL_SEED_PROFILE,
                 "--network", "mobilenet_v2", "--model", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
