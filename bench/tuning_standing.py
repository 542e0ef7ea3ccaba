"""Where the default learned search stands against issue 15's targets: a row per CPU and network,
pooled over the tuning-matrix report folders given.

    .venv/bin/python bench/tuning_standing.py docs/tuning-matrix/FOLDER [FOLDER ...] \
        [--target 5] [--search VARIANT] [--markdown]

Each folder's cells are grouped by the hardware profile they ran on and the network; a group
pools the cells of the default learned search (`warm-focus-pop4-w128-online` on the graph the
cells tuned) and of its MetaSchedule XGB baseline over every folder that has them, as
bench/pooled_baselines.py does for one network. A row gives:
  - the search-time speedup of each learned cell against the median final estimate of all the
    group's XGB runs (the rule the closing notes use: one XGB run's final moves a lot from run
    to run), and against the XGB run of the cell's own seed and folder;
  - how many learned cells reached the target;
  - the speedup all along the XGB run's curve (bench/tuning_matrix.py, `curve_speedup`): at
    each point where XGB's estimate improved, its seconds to that estimate / the learned
    cell's, the median over the points, against the run of the cell's own seed. The first two
    ask only about XGB's last point, which one quick or slow run decides;
  - where the folders hold re-timings (bench/retimed_race.py's --json, kept in a folder's
    scripts/), the own-seed speedup re-timed side by side: every re-timing of a learned cell of
    the row counts once (a seed re-timed twice counts twice: its two readings differ as much as
    seeds do), never-reached ranked below every ratio;
  - the tuned networks' end-to-end milliseconds (the median over cells; a cell timed twice
    counts the mean of its two timings) and PyTorch eager's at the same thread count (the median
    of every cell's reading, since one reading moves with the host), and their ratio.
With --instant the table is instant mode's instead (issue 15's third target: within 1.3x of
the full search's latency, in at most 5 minutes): per CPU and network, the instant cells
(`instant-share` on the graph of the default learned search there, or the one graph the instant
cells tuned where no search is in the folders), their search and wall seconds, their tuned
milliseconds against the median of the learned search's cells (as read, and with each side over
its own cells' PyTorch readings, which takes out the host's drift between cells that ran hours
or sessions apart) and against the PyTorch reading of their own cell.
`--search` stands another learned search against the same XGB runs (e.g.
`warm-focus-pop4-w128-online-mix`, the tile mix: its rows come from the folders that ran it).
Pass the folders whose protocol you want to compare (the docs name them); the rows say nothing
about cells they do not read. Reads only the cells' and the re-timings' JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import ratio_spread, spread  # noqa: E402
from bench.pooled_baselines import (  # noqa: E402
    DEFAULT_SEARCH,
    DEFAULT_SEARCHES,
    default_variant,
    distinct,
    on_any_graph,
    pooled_rows,
    variants_in,
)
from bench.tuning_matrix import baseline_of, both_timings_ms, curve_speedup  # noqa: E402
from storage.reports import format_table, markdown_table  # noqa: E402

HEADER = ["CPU profile", "network", "folders", "learned cells / XGB runs",
          "speedup vs XGB's median final", "own-seed pairs", "never",
          "at the target or more", "along XGB's curve (own seed)",
          "re-timed own seed (of re-timings)", "tuned ms learned / XGB", "PyTorch ms",
          "learned vs PyTorch (x faster)"]
INSTANT = "instant-share"
INSTANT_HEADER = ["CPU profile", "network", "instant cells", "search s", "wall s",
                  "tuned ms instant", "tuned ms learned search (cells)",
                  "instant / learned search", "the same, each over its cell's PyTorch",
                  "within the target (as read / over PyTorch)", "PyTorch ms (instant cells)",
                  "instant vs its cell's PyTorch (x faster)"]


def folder_cells(folder: Path) -> list[dict[str, Any]]:
    """Every cell of one report folder; a clear error where it holds none."""
    paths = sorted((folder / "cells").glob("*.json"))
    if not paths:
        raise SystemExit(f"{folder}: no cells in {folder / 'cells'}: pass a tuning-matrix "
                         "report folder (bench/tuning_matrix.py --out)")
    return [json.loads(p.read_text()) for p in paths]


def grouped(folders: list[Path]) -> dict[tuple[str, str], list[list[dict[str, Any]]]]:
    """(hardware profile, network) -> one list of cells per folder that has cells of it."""
    groups: dict[tuple[str, str], list[list[dict[str, Any]]]] = defaultdict(list)
    for folder in folders:
        by_key: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for c in folder_cells(folder):
            by_key[(c["hardware"], c["network"])].append(c)
        for key, cells in by_key.items():
            groups[key].append(cells)
    return groups


def retimings(folders: list[Path]) -> list[dict[str, Any]]:
    """Every re-timing JSON (bench/retimed_race.py --json) under the folders' scripts/."""
    found = []
    for path in sorted(p for f in folders for p in (f / "scripts").glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise SystemExit(f"{path}: not readable JSON ({type(exc).__name__}: {exc}); a "
                             "folder's scripts/*.json should be bench/retimed_race.py's --json "
                             "output or another JSON file") from None
        if isinstance(data, dict) and isinstance(data.get("seeds"), dict) and "variant" in data:
            found.append(data)
    return found


def retimed_speedups(found: Sequence[dict[str, Any]], hardware: str, network: str,
                     variant: str) -> list[float | None]:
    """The own-seed speedup of each re-timing of `variant` on this CPU and network (None: the
    learned search never reached XGB's final picks, re-timed)."""
    return [(seed.get("retimed") or {}).get("speedup")
            for data in found
            if (data.get("hardware"), data.get("network"), data.get("variant"))
            == (hardware, network, variant)
            for seed in data["seeds"].values()]


def tuned_ms(cell: dict[str, Any]) -> float | None:
    """The cell's end-to-end time as the matrix's report takes it (`both_timings_ms`: the mean
    of its two timings where it was timed twice); None for a cell without one."""
    return None if cell.get("tuned_ms") is None else both_timings_ms(cell)


def median_of(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def standing_row(hardware: str, network: str, reports: list[list[dict[str, Any]]],
                 target: float, found: Sequence[dict[str, Any]] = (),
                 search: str = DEFAULT_SEARCH) -> tuple | None:
    """The row of one group; None where its folders hold no `search` (the default learned
    search) with an XGB baseline (a folder of other experiments); a one-line error where they
    hold it on two graphs (pass those folders apart)."""
    present = variants_in(reports)
    if not present & on_any_graph(search):
        return None
    variant = default_variant(reports, search)
    baseline = baseline_of(variant, present)
    if baseline not in present:
        return None
    # a folder of other experiments on the same CPU and network adds nothing to the row
    reports = [cells for cells in reports if variants_in([cells]) & {variant, baseline}]
    own, pooled, _ = pooled_rows(reports, variant, target)
    cells = distinct([c for cells in reports for c in cells])
    learned = [c for c in cells if c["variant"] == variant]
    xgb = [c for c in cells if c["variant"] == baseline and c["curve"]]
    learned_ms = median_of([tuned_ms(c) for c in learned])
    xgb_ms = median_of([tuned_ms(c) for c in xgb])
    torch_ms = median_of([c.get("torch_ms") for c in learned + xgb])
    along = along_curve(reports, variant, baseline)
    retimed = retimed_speedups(found, hardware, network, variant)
    return (hardware, network, len(reports), f"{len(learned)} / {len(xgb)}", pooled[2], own[2],
            pooled[3], pooled[4], spread(along),
            f"{ratio_spread(retimed)} of {len(retimed)}" if retimed else "-",
            f"{fmt(learned_ms)} / {fmt(xgb_ms)}",
            fmt(torch_ms),
            "-" if None in (learned_ms, torch_ms) else f"{torch_ms / learned_ms:.2f}")


def along_curve(reports: list[list[dict[str, Any]]], variant: str,
                baseline: str) -> list[float]:
    """`curve_speedup` of each learned cell against the XGB run of its own seed and folder."""
    out = []
    for cells in reports:
        bases = {c["seed"]: c for c in cells if c["variant"] == baseline and c["curve"]}
        for c in cells:
            ratio = (curve_speedup(c, bases[c["seed"]])
                     if c["variant"] == variant and c["seed"] in bases else None)
            if ratio is not None:
                out.append(ratio)
    return out


def instant_variant(reports: list[list[dict[str, Any]]]) -> tuple[str, str | None] | None:
    """(the instant variant, the default learned search on its graph or None) of a group; None
    where it has no instant cells; a one-line error where the instant cells tuned several graphs
    and no learned search says which to read."""
    present = variants_in(reports)
    instant = sorted(v for v in present if v == INSTANT or v.startswith(f"{INSTANT}-"))
    if present & DEFAULT_SEARCHES:
        search = default_variant(reports)
        wanted = INSTANT + search[len(DEFAULT_SEARCH):]
        return (wanted, search) if wanted in instant else None
    if len(instant) > 1:
        raise SystemExit(f"instant cells on more than one graph ({', '.join(instant)}) and no "
                         "learned search beside them: pass those folders apart")
    return (instant[0], None) if instant else None


def instant_row(hardware: str, network: str, reports: list[list[dict[str, Any]]],
                within: float) -> tuple | None:
    """Instant mode's row of one group (the module's docstring); None where it has none."""
    found = instant_variant(reports)
    if found is None:
        return None
    variant, search = found
    cells = distinct([c for group in reports for c in group])
    instant = [c for c in cells if c["variant"] == variant and c.get("tuned_ms") is not None]
    if not instant:
        return None
    learned = [c for c in cells if c["variant"] == search]
    instant_ms = [tuned_ms(c) for c in instant]
    learned_ms = median_of([tuned_ms(c) for c in learned])
    torch_ms = median_of([c.get("torch_ms") for c in instant])
    over = [] if learned_ms is None else [ms / learned_ms for ms in instant_ms]
    # a host's speed drifts up to 1.7x within hours and the cells ran hours apart: each cell's
    # own PyTorch reading, taken minutes from its tuned network, takes the drift out
    instant_shares = torch_shares(instant)
    learned_share = median_of(torch_shares(learned))
    over_torch = [] if learned_share is None else [s / learned_share for s in instant_shares]
    within_count = "-" if not over else (
        f"{sum(r <= within for r in over)} / "
        + (f"{sum(r <= within for r in over_torch)}" if over_torch else "-")
        + f" of {len(over)} at {within:g}x or less")
    return (hardware, network, len(instant), spread([c["search_s"] for c in instant], 0),
            spread([c["wall_s"] for c in instant], 0), spread(instant_ms),
            f"{fmt(learned_ms)} ({len(learned)})", spread(over), spread(over_torch),
            within_count, fmt(torch_ms), spread([1 / s for s in instant_shares]))


def torch_shares(cells: list[dict[str, Any]]) -> list[float]:
    """Each timed cell's tuned milliseconds over its own PyTorch reading."""
    return [tuned_ms(c) / c["torch_ms"] for c in cells
            if c.get("torch_ms") and c.get("tuned_ms") is not None]


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def instant_rows(folders: list[Path], within: float) -> list[tuple]:
    rows = [instant_row(hardware, network, reports, within)
            for (hardware, network), reports in grouped(folders).items()]
    return sorted((r for r in rows if r is not None), key=lambda r: (r[1], r[0]))


def standing_rows(folders: list[Path], target: float,
                  search: str = DEFAULT_SEARCH) -> list[tuple]:
    found = retimings(folders)
    rows = [standing_row(hardware, network, reports, target, found, search)
            for (hardware, network), reports in grouped(folders).items()]
    return sorted((r for r in rows if r is not None), key=lambda r: (r[1], r[0]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", help="tuning-matrix report folders")
    parser.add_argument("--target", type=float, default=5.0,
                        help="count the speedups at this or more (issue 15's target: 5)")
    parser.add_argument("--instant", action="store_true",
                        help="instant mode's table instead: its tuned latency against the full "
                             "search's and PyTorch's")
    parser.add_argument("--within", type=float, default=1.3,
                        help="with --instant, count the cells within this factor of the learned "
                             "search's latency (issue 15's target: 1.3)")
    parser.add_argument("--search", default=DEFAULT_SEARCH,
                        help="the learned search to stand against XGB, as a cell variant without "
                             f"its graph (default {DEFAULT_SEARCH}; e.g. {DEFAULT_SEARCH}-mix, "
                             "the tile mix)")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    if args.within <= 0:
        parser.error(f"--within must be a factor above 0 (1.3: within 1.3x), not {args.within:g}")
    show = markdown_table if args.markdown else format_table
    if args.instant:
        rows = instant_rows([Path(f) for f in args.folders], args.within)
        if not rows:
            raise SystemExit("none of these folders holds instant cells (instant-share[-GRAPH]) "
                             "with a tuned network")
        print(show(INSTANT_HEADER, rows))
        return
    rows = standing_rows([Path(f) for f in args.folders], args.target, args.search)
    if not rows:
        raise SystemExit(f"none of these folders holds the learned search {args.search}[-GRAPH] "
                         "beside an XGB baseline")
    print(show(HEADER, rows))


if __name__ == "__main__":
    main()
