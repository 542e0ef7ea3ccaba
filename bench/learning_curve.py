"""How a model's score on held-out networks grows with its training data, from the JSON that
`bench/feature_sets.py --task-fractions ... --row-fractions ... --json OUT` writes.

For each variant and each way of shrinking the data (a share of the tasks, or a share of each
task's rows) it prints the median training rows and tasks, the median mean network top-1 over
the seeds (min-max), and a straight line fitted through every seed's (log2 training rows, top-1):
what one doubling of the data adds, and how much data that line would need to reach a target.
A line extrapolated past the data measured is a guess, and learning curves usually bend down:
read the "data for the target" column as a lower bound. `--plot` draws the curves.

    .venv/bin/python bench/learning_curve.py --json RUN1.json [RUN2.json ...] [--target 0.85]
        [--plot docs/images/learning-curve.png]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage.reports import format_table  # noqa: E402

SHARE = re.compile(r"^(?P<base>.*) @(?P<share>[0-9.]+) (?P<kind>tasks|rows)$")


def series(runs: dict[str, list[dict]]) -> dict[tuple[str, str], list[tuple[float, list[dict]]]]:
    """{(variant, 'tasks' | 'rows'): [(share, that share's runs)], by share}. The whole data
    ('@1 tasks') ends both of its variant's series, the point where they meet."""
    out: dict[tuple[str, str], dict[float, list[dict]]] = {}
    for name, results in runs.items():
        match = SHARE.match(name)
        if match is None:
            continue
        share = float(match["share"])
        kinds = ("tasks", "rows") if share == 1 else (match["kind"],)
        for kind in kinds:
            out.setdefault((match["base"], kind), {})[share] = results
    return {key: sorted(points.items()) for key, points in out.items()
            if len(points) > 1}


def fit(points: list[tuple[float, list[dict]]]) -> tuple[float, float]:
    """(slope per doubling of the training rows, intercept) through every seed's point."""
    x = [np.log2(r["train_rows"]) for _, results in points for r in results]
    y = [r["mean_network_top1"] for _, results in points for r in results]
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def report(runs: dict[str, list[dict]], target: float) -> tuple[str, dict]:
    rows, fits = [], {}
    for (base, kind), points in series(runs).items():
        slope, intercept = fit(points)
        full_rows = np.median([r["train_rows"] for r in points[-1][1]])
        needed = 2 ** ((target - intercept) / slope) if slope > 0 else float("inf")
        fits[(base, kind)] = (slope, intercept)
        for share, results in points:
            top1 = np.array([r["mean_network_top1"] for r in results])
            rows.append((base, kind, f"{share:g}",
                         f"{np.median([r['train_rows'] for r in results]):,.0f}",
                         f"{np.median([r['train_tasks'] for r in results]):,.0f}",
                         f"{np.median(top1):.3f} ({top1.min():.3f}-{top1.max():.3f})",
                         f"{slope:+.3f}" if share == points[-1][0] else "",
                         f"{needed / full_rows:.1f}x ({needed:,.0f} rows)"
                         if share == points[-1][0] else ""))
    table = format_table(["variant", "shrunk by", "share", "train rows", "train tasks",
                          "net top-1 median (min-max)", "per doubling",
                          f"data for {target:g} (line)"], rows)
    return table, fits


def plot(runs: dict[str, list[dict]], fits: dict, path: Path, target: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for (base, kind), points in series(runs).items():
        x = np.array([np.median([r["train_rows"] for r in res]) for _, res in points])
        ys = [np.array([r["mean_network_top1"] for r in res]) for _, res in points]
        med = np.array([np.median(y) for y in ys])
        err = np.array([[m - y.min() for m, y in zip(med, ys)],
                        [y.max() - m for m, y in zip(med, ys)]])
        line = ax.errorbar(x, med, yerr=err, marker="o" if kind == "tasks" else "s",
                           capsize=3, label=f"{base}, fewer {kind}")
        slope, intercept = fits[(base, kind)]
        xs = np.geomspace(x.min(), x.max() * 8, 50)
        ax.plot(xs, intercept + slope * np.log2(xs), ls=":", color=line[0].get_color())
    ax.set_xscale("log", base=2)
    ax.axhline(target, color="grey", ls="--", lw=1)
    ax.text(ax.get_xlim()[0] * 1.1, target + 0.005, f"target {target:g}", color="grey")
    ax.set_xlabel("training rows (log scale; dotted: the fitted line, extrapolated)")
    ax.set_ylabel("mean network top-1, held-out networks")
    ax.set_title("Held-out score against training data (median of the seeds, min-max)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", nargs="+", required=True,
                        help="bench/feature_sets.py --json outputs (their runs are merged)")
    parser.add_argument("--target", type=float, default=0.85)
    parser.add_argument("--plot", help="also draw the curves into this PNG")
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {}
    for name in args.json:
        try:
            loaded = json.loads(Path(name).read_text())["runs"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"--json {name}: not a bench/feature_sets.py --json output "
                             f"({type(exc).__name__})") from None
        for variant, results in loaded.items():
            runs.setdefault(variant, results)  # the same variant twice: the first file's
    if not series(runs):
        raise SystemExit("no variant was run at two or more shares: give the JSON of a "
                         "feature_sets.py run with --task-fractions or --row-fractions")
    table, fits = report(runs, args.target)
    print(table)
    if args.plot:
        plot(runs, fits, Path(args.plot), args.target)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
