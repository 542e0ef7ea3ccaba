"""Held-out evaluation of a trained cost model: the ranking metrics of DESIGN.md section 3,
aggregated over tasks (weighted by candidates per task), plus prediction speed."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from models.base import CostModel
from models.dataset import Dataset
from models.metrics import (
    average_peak_score,
    network_topk_score,
    pairwise_accuracy,
    peak_score,
    per_task,
    rmse,
    topk_recall,
)

# The registry of ranking metrics: name -> (labels, scores, task of each row) -> value,
# aggregated over tasks as DESIGN.md section 3 defines. OBJECTIVES: those a search may
# maximize (higher is better).
RANKING_METRICS: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], float]] = {
    "peak1": lambda y, p, g: per_task(peak_score, y, p, g, k=1),
    "peak5": lambda y, p, g: per_task(peak_score, y, p, g, k=5),
    "avg_peak5": lambda y, p, g: per_task(average_peak_score, y, p, g, k=5),
    "pairwise": lambda y, p, g: per_task(pairwise_accuracy, y, p, g),
    "recall5": lambda y, p, g: per_task(topk_recall, y, p, g, k=5),
    "rmse": lambda y, p, g: rmse(y, p),
}
OBJECTIVES = ("peak1", "peak5", "pairwise", "avg_peak5")


def ranking_metrics(data: Dataset, scores: np.ndarray) -> dict[str, float]:
    return {name: metric(data.label, scores, data.group)
            for name, metric in RANKING_METRICS.items()}


def network_scores(data: Dataset, scores: np.ndarray, k: int = 1) -> dict[str, float]:
    """Network-level top-k score per (network, hardware) the data covers."""
    out = {}
    workload = data.group_workload[data.group]
    for h, hw_name in enumerate(data.hardware_names):
        on_hw = data.candidate_hardware() == h
        nets: dict[str, dict[int, int]] = {}
        for g in np.unique(data.group[on_hw]):
            for net, weight in data.workload_networks.get(data.group_workload[g], {}).items():
                nets.setdefault(net, {})[int(g)] = weight
        for net, weights in sorted(nets.items()):
            mask = on_hw & np.isin(workload, [data.group_workload[g] for g in weights])
            out[f"{net}@{hw_name}"] = network_topk_score(
                data.latency[mask], scores[mask], data.group[mask], weights, k)
    return out


def evaluate(model: CostModel, data: Dataset) -> dict[str, float]:
    """Metrics on `data` and prediction time per 1000 candidates (ms)."""
    start = time.perf_counter()
    scores = model.predict(data)
    per_1000 = (time.perf_counter() - start) / max(len(data), 1) * 1000 * 1000
    return {**ranking_metrics(data, scores), "predict_ms_per_1000": round(per_1000, 2)}
