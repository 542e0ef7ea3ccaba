"""How repeatable are tenforge's measurements, and which protocol makes them so?

Measures the same candidates --rounds times (each round a separate measurement, the artifact
rebuilt) under several run protocols, on each local CPU profile, and prints side by side:
  - the median over candidates of the coefficient of variation (CV) of one candidate's latency
    across rounds, for three statistics of a measurement's repeats: mean, median, min;
  - the median CV within one measurement (spread of its repeats);
  - the run time the protocol costs per candidate.
Ranking labels are only as good as the across-round CV (issue 3 asks for < 3%).

    .venv/bin/python bench/measurement_quality.py [--candidates 12] [--rounds 4]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench.collect_throughput import make_jobs  # noqa: E402
from core.hardware import MeasureSettings
from tasks.hardware import detect_local_profiles  # noqa: E402
from tasks.measure import Measurer  # noqa: E402

PROTOCOLS = {
    "tenset (1 run/repeat, flush)": MeasureSettings(),
    "tenset + 5 warm-ups": MeasureSettings(warmup_runs=5),
    "min_repeat_ms=50, flush": MeasureSettings(min_repeat_ms=50),
    "min_repeat_ms=50, no flush": MeasureSettings(min_repeat_ms=50, cache_flush=False),
}
STATISTICS = {"mean": np.mean, "median": np.median, "min": np.min}


def median_cv(per_candidate: dict[int, list[float]]) -> float:
    cvs = [np.std(v, ddof=1) / np.mean(v) for v in per_candidate.values() if len(v) >= 2]
    return 100.0 * float(np.median(cvs)) if cvs else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()

    print(f"{args.candidates} candidates of ResNet-18 tasks (> 1 MFLOP), {args.rounds} separate "
          "measurements each; CV in %\n")
    header = (f"{'profile':22s} {'protocol':30s} "
              + " ".join(f"{'CV ' + s:>9s}" for s in STATISTICS)
              + f" {'CV within':>10s} {'run s/cand':>10s}")
    print(header)
    for profile in detect_local_profiles():
        jobs = make_jobs(profile.target, args.candidates)
        for name, settings in PROTOCOLS.items():
            per_stat: dict[str, dict[int, list[float]]] = {s: {} for s in STATISTICS}
            within, run_wall = [], []
            with Measurer(dataclasses.replace(profile, measure=settings)) as measurer:
                for _ in range(args.rounds):
                    for result in measurer.measure(jobs):
                        if result.error_kind is not None:
                            continue
                        secs = np.array(result.run_secs)
                        for stat, fn in STATISTICS.items():
                            per_stat[stat].setdefault(result.candidate_id, []).append(fn(secs))
                        within.append(np.std(secs) / np.mean(secs))
                        run_wall.append(result.run_wall_s)
            cvs = " ".join(f"{median_cv(per_stat[s]):9.1f}" for s in STATISTICS)
            print(f"{profile.name:22s} {name:30s} {cvs} {100 * np.median(within):10.1f} "
                  f"{np.mean(run_wall):10.3f}", flush=True)


if __name__ == "__main__":
    main()
