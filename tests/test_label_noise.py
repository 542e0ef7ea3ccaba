"""bench/label_noise.py: a re-measurement ranks the stored labels as a model would be scored."""

import numpy as np

from tests.models.synthetic import synthetic_dataset


def _fresh(data, factor):
    return {int(c): {"run_secs": [] if not np.isfinite(lat) else [float(lat * f)] * 2,
                     "error_kind": None if np.isfinite(lat) else "run_error"}
            for c, lat, f in zip(data.candidate_id, data.latency, factor)}


def test_a_re_measurement_that_agrees_ranks_perfectly_and_noise_costs_top1():
    from bench.label_noise import noise_report

    data = synthetic_dataset(n_groups=9, hardware=("cpu-a-1t",))
    nets = ("net0", "net1", "net2")
    same = noise_report(data, {"r1": _fresh(data, np.ones(len(data)))}, nets)
    for ranker in ("stored", "r1"):
        for label in ("stored", "r1", "geomean of all"):
            assert same["table"][ranker][label]["mean_network_top1"] == 1.0
    assert same["vs_stored"]["r1"]["ratio_median"] == 1.0
    assert same["vs_stored"]["r1"]["failed_only_here"] == 0

    rng = np.random.default_rng(0)
    noise = [np.exp(rng.normal(scale=0.5, size=len(data))) for _ in range(2)]
    noisy = noise_report(data, {"r1": _fresh(data, noise[0]), "r2": _fresh(data, noise[1])},
                         nets)
    assert 0 < noisy["table"]["r1"]["stored"]["mean_network_top1"] < 1.0  # picks move
    assert 0 < noisy["table"]["r1"]["r2"]["mean_network_top1"] < 1.0
    assert noisy["table"]["stored"]["stored"]["mean_network_top1"] == 1.0
    assert noisy["table"]["r2"]["r2"]["mean_network_top1"] == 1.0


def test_only_candidates_every_round_re_measured_are_scored():
    from bench.label_noise import noise_report

    data = synthetic_dataset(n_groups=6, hardware=("cpu-a-1t",))
    fresh = _fresh(data, np.ones(len(data)))
    half = {c: v for c, v in fresh.items() if c % 2 == 0}
    report = noise_report(data, {"r1": fresh, "r2": half}, ("net0", "net1", "net2"))
    assert report["candidates"] == len(half)  # the candidates every round has


def test_a_line_cut_short_by_a_kill_is_measured_again(tmp_path):
    from bench.label_noise import read_results

    path = tmp_path / "r1.jsonl"
    path.write_text('{"candidate_id": 1, "run_secs": [0.1], "error_kind": null}\n'
                    '{"candidate_id": 2, "run_se')
    assert set(read_results(path)) == {1}
