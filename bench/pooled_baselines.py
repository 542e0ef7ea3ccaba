"""Issue 15's search-time speedup over the cells of several tuning-matrix reports of one network.

    .venv/bin/python bench/pooled_baselines.py --network mobilenet_v2 \
        docs/tuning-matrix/cpu-rocketlake-avx512-1t-nchw16c-clean \
        docs/tuning-matrix/cpu-rocketlake-avx512-1t-nchw16c-extra \
        docs/tuning-matrix/cpu-rocketlake-avx512-1t-nchw16c-ld [--variant V] [--markdown]

MetaSchedule's XGB trains on its own noisy measurements, so two runs of one seed end at
different latencies; its curve still falls at 1,000 trials, so that spread moves a seed's
speedup a lot (2.29x to 5.12x on the Xeon's mobilenet_v2). One report has three baseline runs.
This pools the runs of several reports of the same search (same variant, budget, graph) and
prints three rows:
  - each report's own pairs (a variant cell against the baseline run of its own seed, as the
    report does);
  - every variant cell against the median final of all the baseline runs (the report's
    pooled rule, `pooled_speedups`);
  - every variant cell against every baseline run.
A row's median ranks a ratio that never happened (the cell never got there) below every
number, so seeds that miss pull it down (`ratio_spread`); its range is the reached ratios'.
With --per-seed it also prints a row per variant cell: its own seed's baseline run (final
estimate within the budget, seconds to it), the cell's first estimate, when it reached that
final, both speedups, its own final, and both tuned networks' and PyTorch's milliseconds.
The reports' hosts may have run at different speeds: the pooled rows say how far a
three-seed median can move, they do not make one more precise. Reads only the cells' JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import ratio_spread  # noqa: E402
from bench.tuning_matrix import (  # noqa: E402
    LAYOUT_VARIANTS,
    VARIANTS,
    baseline_of,
    best_within,
    pair_speedup,
    pooled_speedups,
    reach,
    speedups,
)
from storage.reports import format_table, markdown_table  # noqa: E402

# the default learned search; its cells carry their graph's suffix (-nchw8c on AVX2, -nchw16c on
# AVX-512), so the folders' own cells say which one to pool
DEFAULT_SEARCH = "warm-focus-pop4-w128-online"


def on_any_graph(search: str) -> frozenset[str]:
    """`search` as a cell variant on each graph (the exported graph: no suffix)."""
    return frozenset({search, *(f"{search}-{g}" for g in LAYOUT_VARIANTS)})


DEFAULT_SEARCHES = on_any_graph(DEFAULT_SEARCH)
HEADER = ["search-time speedups", "ratios", "median (min-max)", "never", "at the target or more"]


def report_cells(folder: Path, network: str) -> list[dict[str, Any]]:
    """The cells of `network` in one report folder; a clear error where there are none."""
    paths = sorted((folder / "cells").glob(f"{network}-*.json"))
    if not paths:
        raise SystemExit(f"{folder}: no cells of {network} in {folder / 'cells'}: pass a "
                         "tuning-matrix report folder (bench/tuning_matrix.py --out)")
    return [json.loads(p.read_text()) for p in paths]


def variants_in(reports: list[list[dict[str, Any]]]) -> set[str]:
    """The variants of every cell over `reports`."""
    return {c["variant"] for cells in reports for c in cells}


def default_variant(reports: list[list[dict[str, Any]]], search: str = DEFAULT_SEARCH) -> str:
    """The default learned search (or `search`) on whichever graph the reports' cells tuned; a
    one-line error where they hold none of it, or it on several graphs."""
    present = variants_in(reports)
    found = sorted(present & on_any_graph(search))
    if len(found) != 1:
        raise SystemExit(f"{'no' if not found else 'more than one'} cell variant of the "
                         f"{'default ' if search == DEFAULT_SEARCH else ''}learned search "
                         f"({', '.join(found) or search + '[-GRAPH]'}): name one with --variant")
    return found[0]


def distinct(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`cells` without the copies: a run copied into another report folder (to pair it there
    with the cells of its seed) counts once wherever cells are pooled."""
    seen: set[str] = set()
    out = []
    for c in cells:
        key = json.dumps(c, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def pooled_runs(reports: list[list[dict[str, Any]]], variant: str,
                baseline: str) -> list[dict[str, Any]]:
    """The cells of `variant` and `baseline` over `reports`, each copy once, seeds made
    distinct per report (seeds repeat between reports: the pooled rule keeps runs apart)."""
    kept = {id(c) for c in distinct([c for cells in reports for c in cells])}
    return [{**c, "seed": (index, c["seed"])} for index, cells in enumerate(reports)
            for c in cells if c["variant"] in (variant, baseline) and id(c) in kept]


def pooled_rows(reports: list[list[dict[str, Any]]], variant: str,
                target: float) -> list[tuple]:
    """The three rows (see the module's docstring) for `variant`'s cells over `reports`."""
    present = variants_in(reports)
    baseline = baseline_of(variant, present)
    own: list[float | None] = []
    for cells in reports:
        own += [ratio for (_, v, _), (ratio, _) in speedups(cells).items() if v == variant]
    pooled_cells = pooled_runs(reports, variant, baseline)
    against_median = [r for (_, v, _), r in pooled_speedups(pooled_cells).items() if v == variant]
    cells = [c for c in pooled_cells if c["variant"] == variant]
    bases = [c for c in pooled_cells if c["variant"] == baseline and c["curve"]]
    every_pair = [pair_speedup(c, b)[0] for c in cells for b in bases]
    return [row(f"each report's own pairs (same seed) vs {baseline}", own, target),
            row(f"against the median final of {len(bases)} {baseline} runs", against_median,
                target),
            row(f"every cell against every {baseline} run", every_pair, target)]


SEED_HEADER = ["report", "seed", "baseline final est. ms (trials, s to it)",
               "first estimate: s, ms", "reaches the baseline's final: trials, s",
               "own speedup", "vs the median final", "final est. ms",
               "tuned ms baseline / this", "PyTorch ms baseline / this"]


def per_seed_rows(reports: list[list[dict[str, Any]]], names: list[str],
                  variant: str) -> list[tuple]:
    """A row per `variant` cell over `reports` (named `names`): the figures a closing note's
    per-seed table needs, against the baseline run of the cell's own seed and report."""
    present = variants_in(reports)
    baseline = baseline_of(variant, present)
    against_median = pooled_speedups(pooled_runs(reports, variant, baseline))
    rows = []
    for index, cells in enumerate(reports):
        bases = {c["seed"]: c for c in cells if c["variant"] == baseline and c["curve"]}
        for c in sorted((c for c in cells if c["variant"] == variant), key=lambda c: c["seed"]):
            pooled = against_median.get((c["network"], variant, (index, c["seed"])))
            first = f"{c['curve'][0][1]:.0f}, {c['curve'][0][2]:.2f}" if c["curve"] else "-"
            final = best_within(c["curve"], c["trials_budget"])
            base = bases.get(c["seed"])
            if base is None:
                base_cols = ("no baseline run", "-", "-")
            else:
                base_final = best_within(base["curve"], base["trials_budget"])
                base_trials, base_s = reach(base["curve"], base_final)
                got = reach(c["curve"], base_final)
                own = pair_speedup(c, base)[0]
                base_cols = (f"{base_final:.2f} ({base_trials}, {base_s:.0f})",
                             "never" if got is None else f"{got[0]}, {got[1]:.0f}",
                             "never" if own is None else f"{own:.2f}x")
            rows.append((names[index], c["seed"], base_cols[0], first, base_cols[1],
                         base_cols[2], "never" if pooled is None else f"{pooled:.2f}x",
                         "-" if final is None else f"{final:.2f}",
                         f"{ms(base, 'tuned_ms')} / {ms(c, 'tuned_ms')}",
                         f"{ms(base, 'torch_ms')} / {ms(c, 'torch_ms')}"))
    return rows


def ms(cell: dict[str, Any] | None, key: str) -> str:
    value = (cell or {}).get(key)
    return "-" if value is None else f"{value:.2f}"


def row(label: str, ratios: list[float | None], target: float) -> tuple:
    reached = [r for r in ratios if r is not None]
    at_target = sum(r >= target for r in reached)
    return (label, len(ratios), ratio_spread(ratios, count_never=False),
            len(ratios) - len(reached), f"{at_target} of {len(ratios)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", help="tuning-matrix report folders")
    parser.add_argument("--network", required=True)
    parser.add_argument("--variant", default=None,
                        help="the variant whose speedups to pool (default: the learned search, "
                             f"{DEFAULT_SEARCH}, on the graph the cells tuned)")
    parser.add_argument("--target", type=float, default=5.0,
                        help="count the ratios at this or more (issue 15's target: 5)")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--per-seed", action="store_true",
                        help="also a row per variant cell (see the module's docstring)")
    args = parser.parse_args(argv)
    if args.variant is not None and args.variant not in VARIANTS:
        raise SystemExit(f"unknown variant {args.variant}: choose from {', '.join(VARIANTS)}")
    reports = [report_cells(Path(folder), args.network) for folder in args.folders]
    args.variant = args.variant or default_variant(reports)
    if args.variant not in variants_in(reports):
        raise SystemExit(f"no {args.variant} cell of {args.network} in {', '.join(args.folders)}")
    rows = pooled_rows(reports, args.variant, args.target)
    table = markdown_table if args.markdown else format_table
    print(table(HEADER, rows))
    if args.per_seed:
        names = [Path(folder).name for folder in args.folders]
        print()
        print(table(SEED_HEADER, per_seed_rows(reports, names, args.variant)))


if __name__ == "__main__":
    main()
