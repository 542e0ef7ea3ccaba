"""What a GPU's tensor cores gain: each task's best tensor-core (wmma) candidate against its
best SIMT candidate, from a store that `collect --simt` filled (both kinds sampled at random
from the same task, measured the same way on the same card).

    .venv/bin/python bench/tensor_cores.py --db STORE --hardware gpu-h200 [--json OUT]

Prints one row per task that has a valid candidate of each kind, then per network: the sum
over its tensor-core tasks of (best latency x occurrences) either way. Random samples, best of
N each: this compares the two design spaces as a search starts from them, not tuned kernels.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import median
from typing import Any, Iterable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@dataclass(frozen=True)
class KindBest:
    """One task's candidates of one kind (tensor-core or SIMT)."""

    measured: int
    valid: int
    best_us: float | None


@dataclass(frozen=True)
class TaskComparison:
    task: str
    gflops: float
    networks: dict[str, int]  # network -> occurrences of the task in it
    wmma: KindBest
    simt: KindBest

    @property
    def gain(self) -> float | None:
        """Best SIMT latency / best tensor-core latency (> 1: the tensor cores are faster)."""
        if self.wmma.best_us is None or self.simt.best_us is None:
            return None
        return self.simt.best_us / self.wmma.best_us


def compare(rows: Iterable[dict[str, Any]]) -> list[TaskComparison]:
    """Rows of (task, gflops, network, weight, tensor_cores, latency_s or None) per measured
    candidate and network it belongs to -> one comparison per task that has both kinds."""
    by_task: dict[str, dict[str, Any]] = {}
    for r in rows:
        t = by_task.setdefault(r["task"], {"gflops": r["gflops"], "networks": {},
                                           True: {}, False: {}})
        t["networks"][r["network"]] = r["weight"]
        t[bool(r["tensor_cores"])][r["candidate"]] = r["latency_s"]
    out = []
    for name, t in sorted(by_task.items()):
        if not t[True] or not t[False]:
            continue
        kinds = []
        for uses in (True, False):
            lat = [v for v in t[uses].values() if v is not None]
            kinds.append(KindBest(len(t[uses]), len(lat), min(lat) * 1e6 if lat else None))
        out.append(TaskComparison(name, t["gflops"], t["networks"], *kinds))
    return out


def summary(comparisons: list[TaskComparison]) -> dict[str, Any]:
    gains = [c.gain for c in comparisons if c.gain is not None]
    per_network: dict[str, dict[str, float]] = {}
    for c in comparisons:
        if c.gain is None:
            continue
        for network, weight in c.networks.items():
            n = per_network.setdefault(network, {"tasks": 0, "wmma_ms": 0.0, "simt_ms": 0.0})
            n["tasks"] += 1
            n["wmma_ms"] += weight * c.wmma.best_us / 1e3
            n["simt_ms"] += weight * c.simt.best_us / 1e3
    return {
        "tasks_with_both": len(gains),
        "geomean_gain": math.exp(sum(map(math.log, gains)) / len(gains)) if gains else None,
        "median_gain": median(gains) if gains else None,
        "min_gain": min(gains, default=None), "max_gain": max(gains, default=None),
        "simt_faster": sum(g < 1 for g in gains),
        "valid_share": {kind: (sum(getattr(c, kind).valid for c in comparisons)
                               / max(1, sum(getattr(c, kind).measured for c in comparisons)))
                        for kind in ("wmma", "simt")},
        "networks": {k: {**v, "gain": v["simt_ms"] / v["wmma_ms"]}
                     for k, v in sorted(per_network.items())},
    }


def load_rows(db: str, hardware: str) -> list[dict[str, Any]]:
    from storage.store import Store
    from tasks.sampling import uses_tensor_cores

    with Store(db, read_only=True) as store:
        hardware_id = store.hardware_id(hardware)
        found = store.query(
            "SELECT t.task_name, t.flops, n.name, nt.weight, c.candidate_id, c.trace_json, "
            "m.mean_latency_s FROM candidates c JOIN measurements m USING (candidate_id) "
            "JOIN tasks t USING (task_id) JOIN network_tasks nt USING (task_id) "
            "JOIN networks n USING (network_id) WHERE c.hardware_id = ?", [hardware_id])
    return [{"task": name, "gflops": flops / 1e9, "network": net, "weight": weight,
             "candidate": cid, "tensor_cores": uses_tensor_cores(trace), "latency_s": lat}
            for name, flops, net, weight, cid, trace, lat in found]


def table(comparisons: list[TaskComparison], s: dict[str, Any]) -> str:
    def us(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f}"

    lines = ["| task | GFLOP | wmma valid | best wmma us | SIMT valid | best SIMT us "
             "| SIMT / wmma |",
             "|---|---|---|---|---|---|---|"]
    for c in sorted(comparisons, key=lambda c: -c.gflops):
        lines.append(f"| {c.task} | {c.gflops:.3f} | {c.wmma.valid}/{c.wmma.measured} | "
                     f"{us(c.wmma.best_us)} | {c.simt.valid}/{c.simt.measured} | "
                     f"{us(c.simt.best_us)} | {'-' if c.gain is None else f'{c.gain:.2f}x'} |")
    lines += ["", "| network | tasks with both | wmma ms | SIMT ms | SIMT / wmma |",
              "|---|---|---|---|---|"]
    for name, n in s["networks"].items():
        lines.append(f"| {name} | {n['tasks']} | {n['wmma_ms']:.3f} | {n['simt_ms']:.3f} | "
                     f"{n['gain']:.2f}x |")
    if s["tasks_with_both"]:
        lines += ["", f"{s['tasks_with_both']} tasks with a valid candidate of each kind: SIMT / "
                  f"wmma geomean {s['geomean_gain']:.2f}x, median {s['median_gain']:.2f}x "
                  f"({s['min_gain']:.2f}-{s['max_gain']:.2f}x); SIMT faster on "
                  f"{s['simt_faster']}; valid share wmma {s['valid_share']['wmma']:.2f}, "
                  f"SIMT {s['valid_share']['simt']:.2f}"]
    else:
        lines += ["", "no task has a valid candidate of each kind (collect --simt fills them)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--hardware", required=True, help="a CUDA profile in the store")
    parser.add_argument("--json", default=None, help="also write the comparison here")
    args = parser.parse_args(argv)
    from core.errors import TenforgeError

    if not Path(args.db).is_file():
        print(f"tensor_cores: no store at {args.db}; give a DuckDB file `collect --simt` filled",
              file=sys.stderr)
        return 2
    try:
        comparisons = compare(load_rows(args.db, args.hardware))
    except TenforgeError as exc:
        print(f"tensor_cores: {exc}", file=sys.stderr)
        return 2
    s = summary(comparisons)
    print(table(comparisons, s))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"hardware": args.hardware, "summary": s,
             "tasks": [{**asdict(c), "gain": c.gain} for c in comparisons]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
