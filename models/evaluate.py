"""Held-out evaluation of a trained cost model: the ranking metrics of DESIGN.md section 3,
aggregated over tasks (weighted by candidates per task), plus prediction speed."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from core.errors import TenforgeError
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


# A profile that measured a few of a network's tasks (tasks it shares with another network
# collected there: a dense layer, a pooling) has not measured that network; scoring the sliver
# as a whole network put single-task "networks" at 1.000 into a profile's mean. An instance
# counts on a profile where it measured at least this share of the network's work (weight x
# FLOPs) over every task the store lists for it, measured or not. A collection of the network
# measures nearly all of it (tasks with fewer than two valid candidates drop out).
MIN_NETWORK_COVERAGE = 0.5


def _network_work(data: Dataset) -> dict[str, dict[str, float]]:
    """network -> {workload: weight x FLOPs} over every task the store lists for it
    (Dataset.workload_flops), measured on any profile or none, and the workloads with rows in
    `data` (weight alone for a network with no FLOPs known). Over the store's list,
    a profile's coverage does not hang on which other profiles' rows were loaded: one that
    measured 7 of resnet50's 40 tasks (those it shares with networks collected there) is not
    resnet50 because it was evaluated alone."""
    groups = np.unique(data.group)
    flops = {**data.workload_flops,
             **dict(zip(data.group_workload[groups], data.group_flops[groups]))}
    work: dict[str, dict[str, float]] = {}
    for workload, task_flops in flops.items():
        for net, weight in data.workload_networks.get(workload, {}).items():
            work.setdefault(net, {})[workload] = weight * float(task_flops)
    for net, tasks in work.items():
        if sum(tasks.values()) <= 0:  # no FLOPs known (a reshape's are truly 0: no work)
            work[net] = {w: float(data.workload_networks[w][net]) for w in tasks}
    return work


def network_coverage(net: str, workloads: set[str], work: dict[str, dict[str, float]]) -> float:
    """The share of `net`'s work (weight x FLOPs, over the data's tasks of it) in `workloads`."""
    tasks = work.get(net, {})
    total = sum(tasks.values())
    return sum(v for w, v in tasks.items() if w in workloads) / total if total > 0 else 0.0


def _measured_networks(data: Dataset, networks: tuple[str, ...]):
    """(network, profile index, measured workloads, {group: times the network runs it}, share
    of its work measured) for each of `networks` (default: every network) with a task measured
    on a profile."""
    work = _network_work(data)
    hardware = data.candidate_hardware()
    for h in range(len(data.hardware_names)):
        on_hw = hardware == h
        nets: dict[str, dict[int, int]] = {}
        for g in np.unique(data.group[on_hw]):
            for net, weight in data.workload_networks.get(data.group_workload[g], {}).items():
                nets.setdefault(net, {})[int(g)] = weight
        for net, weights in sorted(nets.items()):
            if _asked(net, networks):
                measured = [data.group_workload[g] for g in weights]
                yield net, h, measured, weights, network_coverage(net, set(measured), work)


def network_instances(data: Dataset, networks: tuple[str, ...] = ()):
    """(network, profile, rows, {group: times the network runs it}) for each of `networks`
    (default: every network) a profile measured: at least MIN_NETWORK_COVERAGE of its work.
    What the network-level scores are taken over (network_scores), and what a loss is
    attributed over (bench/rank_errors.py)."""
    workload = data.group_workload[data.group]
    hardware = data.candidate_hardware()
    for net, h, measured, weights, coverage in _measured_networks(data, networks):
        if coverage >= MIN_NETWORK_COVERAGE:
            rows = (hardware == h) & np.isin(workload, measured)
            yield net, data.hardware_names[h], np.flatnonzero(rows), weights


def network_slivers(data: Dataset, networks: tuple[str, ...] = ()) -> dict[str, dict]:
    """{profile: {network: share of its work measured}} where a profile measured some of one
    of `networks`, too little to score it there (under MIN_NETWORK_COVERAGE): what a report
    says it left out."""
    out: dict[str, dict[str, float]] = {}
    for net, h, _, _, coverage in _measured_networks(data, networks):
        if coverage < MIN_NETWORK_COVERAGE:
            out.setdefault(data.hardware_names[h], {})[net] = coverage
    return out


def sliver_list(slivers: dict[str, dict]) -> list[str]:
    """network_slivers as `NETWORK (share) on PROFILE, PROFILE` items, one per network and
    share (the profiles that measured the same tasks of it share a line)."""
    on: dict[tuple[str, str], list[str]] = {}
    for hw, nets in slivers.items():
        for net, share in nets.items():
            on.setdefault((net, f"{share:.1%}"), []).append(hw)
    return [f"{net} ({share}) on {', '.join(hws)}" for (net, share), hws in sorted(on.items())]


def network_scores(data: Dataset, scores: np.ndarray, k: int = 1) -> dict[str, float]:
    """Network-level top-k score per (network, hardware) the data covers: where the profile
    measured at least MIN_NETWORK_COVERAGE of the network's work."""
    return _instance_scores(data, scores, network_instances(data), k)


def _instance_scores(data: Dataset, scores: np.ndarray, instances, k: int) -> dict[str, float]:
    return {f"{net}@{hw}": network_topk_score(data.latency[rows], scores[rows], data.group[rows],
                                              weights, k)
            for net, hw, rows, weights in instances}


def evaluate(model: CostModel, data: Dataset) -> dict[str, float]:
    """Metrics on `data` and prediction time per 1000 candidates (ms)."""
    start = time.perf_counter()
    scores = model.predict(data)
    per_1000 = (time.perf_counter() - start) / max(len(data), 1) * 1000 * 1000
    return {**ranking_metrics(data, scores), "predict_ms_per_1000": round(per_1000, 2)}


def network_report(model: CostModel, data: Dataset,
                   networks: tuple[str, ...] = ()) -> dict:
    """How well `model` ranks the candidates of whole networks (DESIGN.md section 3), as
    `tenforge models evaluate` prints it: per network (a name picks every instance of it),
    TenSet's network-level top-1 and top-5 averaged over the hardware profiles that measured
    it, their means over networks, and per-task peak@1, peak@5 and pairwise accuracy over the
    tasks of those networks. Per profile too, under `per_hardware`."""
    data = data.subset(network_rows(data, networks))
    slivers = network_slivers(data, networks)
    if next(network_instances(data, networks), None) is None:
        raise TenforgeError(
            f"no profile measured {MIN_NETWORK_COVERAGE:.0%} or more of the work of "
            f"{', '.join(networks) or 'any network'}, so none can be scored as a network ("
            + ", ".join(sliver_list(slivers)[:6])
            + "); collect the network on the profile first (`tenforge collect --networks "
            "NAME --hardware H`), or score a network it collected")
    scores = model.predict(data)
    report = network_topk(data, scores, networks)
    metrics = ranking_metrics(data, scores)
    return {
        "hardware": report["hardware"], "networks": report["networks"],
        "mean_network_top1": report["mean_network_top1"],
        "mean_network_top5": report["mean_network_top5"],
        "peak1": metrics["peak1"], "peak5": metrics["peak5"], "pairwise": metrics["pairwise"],
        "tasks": int(np.unique(data.group).size), "candidates": len(data),
        "per_hardware": report["per_hardware"], "not_scored": slivers,
    }


def network_rows(data: Dataset, networks: tuple[str, ...] = ()) -> np.ndarray:
    """The rows of `data` whose task belongs to one of `networks` (default: any)."""
    wanted = {w for w, nets in data.workload_networks.items()
              if any(_asked(n, networks) for n in nets)}
    rows = np.flatnonzero(np.isin(data.group_workload[data.group], list(wanted)))
    if rows.size == 0:
        raise TenforgeError("none of the measured tasks belongs to "
                            f"{', '.join(networks) or 'any network'}")
    return rows


def network_topk(data: Dataset, scores: np.ndarray, networks: tuple[str, ...] = ()) -> dict:
    """Ranking by `scores`, TenSet's network-level top-1 and top-5 of each of `networks`
    (default: all) averaged over the profiles that measured it, their means, and the same
    per profile (`per_hardware`)."""
    instances = list(network_instances(data))  # seconds on a pooled store: found once
    top = {k: _instance_scores(data, scores, instances, k) for k in (1, 5)}
    per_hw: dict[str, dict] = {}
    for key in top[1]:
        net, hw = key.rsplit("@", 1)  # labels may hold an @ (resnet18@160), profiles do not
        if not _asked(net, networks):
            continue  # a network that only shares tasks with the ones asked for
        per_hw.setdefault(hw, {})[net] = {"top1": top[1][key], "top5": top[5][key]}
    by_net: dict[str, dict[str, list[float]]] = {}
    for nets in per_hw.values():
        for net, values in nets.items():
            by_net.setdefault(net, {"top1": [], "top5": []})
            for k in ("top1", "top5"):
                by_net[net][k].append(values[k])
    mean = {net: {k: float(np.nanmean(v)) for k, v in values.items()}
            for net, values in sorted(by_net.items())}
    return {"hardware": sorted(per_hw), **_over_networks(mean),
            "per_hardware": {hw: _over_networks(nets) for hw, nets in sorted(per_hw.items())}}


def _asked(label: str, networks: tuple[str, ...]) -> bool:
    return not networks or _names(label, networks)


def _names(label: str, networks: tuple[str, ...]) -> bool:
    """Whether `networks` name the network `label`: itself, or its name without the size
    (resnet18 names resnet18@160). A prepared graph is named only as itself (resnet18+nhwc):
    its tasks are other programs than the exported network's, scored apart."""
    from models.dataset import network_name

    return label in networks or network_name(label) in networks


def _over_networks(nets: dict[str, dict[str, float]]) -> dict:
    """Per-network top-1/top-5 and their means over the networks."""
    return {"networks": nets,
            **{f"mean_network_{k}": float(np.nanmean([v[k] for v in nets.values()]))
               for k in ("top1", "top5")}}
