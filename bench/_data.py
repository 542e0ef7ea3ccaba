"""What the benches share: the store they read (the one given, else the seed dataset loaded into
a temporary store), the profiles they use (those given, else every profile with measurements;
or its one-thread CPUs), their by_network split, and how they print a median over seeds."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

KEEP_SCRATCH = "TENFORGE_KEEP_SCRATCH"

# The tree families' feature sets the benches compare, by name: per-store rows alone, plus the
# trace summary, plus its tile block (models/trace_features.py)
FEATURE_SETS = {"per-store": {},
                "per-store + trace": {"trace_features": True},
                "per-store + trace + tiles": {"trace_features": True, "tile_features": True}}
# Where the store holds the asm columns (`tenforge dataset asm`): what the compiled code does
ASM_FEATURE_SETS = {"per-store + trace + tiles + asm": {
    "trace_features": True, "tile_features": True, "asm_features": True}}


def feature_set_name(params: dict) -> str:
    """The FEATURE_SETS (or ASM_FEATURE_SETS) name of a tree model's params (a searched
    model's, say)."""
    chosen = {key for key in ("trace_features", "tile_features") if params.get(key)}
    asm = " + asm" if params.get("asm_features") else ""
    for name, set_params in FEATURE_SETS.items():
        if set(set_params) == chosen:
            return name + asm
    return "per-store + tiles" + asm  # a search may take the tile block without the summary


def scratch_dir(prefix: str) -> Path:
    """A fresh folder under the system's temp dir, removed when the bench exits (set
    TENFORGE_KEEP_SCRATCH=1 to keep it for a look). A loaded seed store is ~0.5 GB: left behind
    by every run, they once filled this machine's disk and failed CI's tmp_path set-up."""
    folder = Path(tempfile.mkdtemp(prefix=f"tenforge-{prefix}-"))
    if not os.environ.get(KEEP_SCRATCH):
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def store_or_seed(db: str | None, prefix: str, extra: Sequence[Path] = ()) -> str:
    """`db`, or a fresh temporary store holding the seed dataset and the shard folders `extra`
    (dataset/extra/...: measurements beyond the seed's 20 MiB cap), removed at exit."""
    refuse_extra_beside_db(db, extra, "the bench's temporary seed store")
    if db is not None:
        return db
    return seeded_store(str(scratch_dir(prefix) / "seed.duckdb"), extra)


def refuse_extra_beside_db(db: str | None, extra: Sequence[Path], own_store: str) -> None:
    """--extra loads shard folders into the bench's own store (`own_store`); beside --db it would
    write into the user's store behind their back, so say how to load them there instead."""
    if db is not None and extra:
        raise SystemExit(f"--extra loads shard folders into {own_store}; with --db, load them "
                         f"into {db} with `tenforge ingest FOLDER --db {db}` and leave out --extra")


def seeded_store(path: str, extra: Sequence[Path] = (),
                 log: Callable[[str], None] = lambda _: None) -> str:
    """`path` holding the seed dataset (loaded once, when the file is missing) and the shard
    folders `extra` (a shard already ingested is skipped: a resumed bench loads nothing twice)."""
    from storage.ingest import ingest_shards
    from storage.seed import load_shards

    if not Path(path).exists():
        log(f"loading the seed into {path}")
        load_shards(path, progress=lambda _: None)
    if extra:
        added = ingest_shards(path, list(extra), progress=lambda _: None)
        log(f"--extra: {added['shards_new']} new shard(s) of {added['shards_found']} in "
            f"{', '.join(map(str, extra))}")
    return path


def extra_folders(text: str | None) -> list[Path]:
    """The comma-separated shard folders of --extra, each checked to hold shards, so a typo
    fails in one line before minutes of loading."""
    from storage.ingest import find_manifests

    folders = [Path(name.strip()) for name in text.split(",") if name.strip()] if text else []
    for folder in folders:
        try:
            found = find_manifests([folder])
        except Exception as error:  # TenforgeError: not a folder
            raise SystemExit(f"--extra {folder}: {error}") from None
        if not found:
            raise SystemExit(f"--extra {folder}: no shards in it (<shard>.json with its "
                             "parquet files, as dataset/extra/ holds)")
    return folders


def shard_provenance(folders: list[Path]) -> list[dict]:
    """Each shard under `folders` that made the data: its path from the repository's dataset/
    folder where it lies inside it (seed/<profile>/<shard>.json, extra/<set>/<shard>.json,
    device/<set>/<shard>.json), and the checksums its manifest records: every shard loaded,
    whichever profiles the model then took from the store."""
    import json

    from storage.ingest import find_manifests
    from storage.seed import SEED_DIR

    root = SEED_DIR.resolve().parent
    shards = []
    for _, manifest in find_manifests(folders):
        path = manifest.resolve()
        name = path.relative_to(root) if path.is_relative_to(root) else path
        shards.append({"shard": str(name), "files": json.loads(manifest.read_text())["files"]})
    return shards


def profiles(db: str, hardware: str | None) -> tuple[str, ...]:
    """The comma-separated `hardware`, or every profile of `db` with measurements."""
    from tasks.training import default_hardware

    return tuple(hardware.split(",")) if hardware else tuple(default_hardware(db))


def one_thread_cpus(db: str) -> list[str]:
    """`db`'s one-thread CPU profiles with measurements (a GPU schedule's features mean other
    things, and several threads are another measurement)."""
    from tasks.training import default_hardware

    return [h for h in default_hardware(db) if h.startswith("cpu-") and h.endswith("-1t")]


def held_out_bench_options(parser, holdout: str, holdout_help: str) -> None:
    """The options every held-out-network bench takes (bench/unseen_cpu.py,
    bench/layout_data.py): the store, the held-out networks, the seeds, the family, --json."""
    parser.add_argument("--db", help="store to read (default: the seed, loaded into a temp store)")
    parser.add_argument("--holdout", default=holdout, help=holdout_help)
    parser.add_argument("--seeds", default="0", help="comma-separated split and model seeds")
    parser.add_argument("--family", default="lgbm")
    parser.add_argument("--json", help="also write every number here")


def recipe_bench_options(parser, json_help: str) -> None:
    """The options of the benches that train one recipe on the by_network splits and score
    the held-out networks (bench/rank_errors.py, bench/objectives.py)."""
    parser.add_argument("--db", help="store to read (default: the seed, in a temp store)")
    parser.add_argument("--extra", metavar="DIR,DIR", help="shard folders beside the seed")
    parser.add_argument("--hardware", help="profiles to train on (default: all in the store)")
    parser.add_argument("--score-hardware", metavar="H1,H2",
                        help="score on these profiles' held-out rows only (default: all)")
    parser.add_argument("--holdout", default="resnet50,mobilenet_v2,bert")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--params", default="{}", help="the model's params (JSON)")
    parser.add_argument("--json", help=json_help)
    latency_option(parser)


def latency_option(parser) -> None:
    """--latency: which statistic of a measurement's repeats labels the rows, for training and
    for the charge of a pick alike (models.data_spec.LATENCY_STATISTICS)."""
    from models.data_spec import LATENCY_STATISTICS

    parser.add_argument("--latency", choices=LATENCY_STATISTICS, default="mean",
                        help="label by the mean of a measurement's repeats (as stored) or by "
                             "their median, which one OS hiccup cannot move")


def spread(values: list[float], digits: int = 2) -> str:
    """The median of `values` and, where there are several, their range: "0.62 (0.59-0.65)"."""
    import numpy as np

    if not values:
        return "-"
    med = float(np.median(values))
    if len(values) == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def ratio_spread(ratios: list[float | None], digits: int = 2, count_never: bool = True) -> str:
    """The median of speedup ratios where None (the cell never got there) ranks below every
    number, and the range of the reached ones: "1.19 (0.98-2.54) [1 never]". The median is
    "never" where it falls on one (of an even count: where the lower middle one is); with
    `count_never` False the "[k never]" tail is left to a column of its own.

    A median over the reached ratios alone would rise with every seed that never got there."""
    if not ratios:
        return "-"
    reached = sorted(r for r in ratios if r is not None)
    missed = len(ratios) - len(reached)
    ranked = [None] * missed + reached
    low, high = ranked[(len(ranked) - 1) // 2], ranked[len(ranked) // 2]
    median = "never" if low is None else f"{(low + high) / 2:.{digits}f}"
    if len(ratios) == 1 or not reached:
        text = median
    elif len(reached) == 1 and missed:
        text = f"{median} ({reached[0]:.{digits}f})"
    else:
        text = f"{median} ({reached[0]:.{digits}f}-{reached[-1]:.{digits}f})"
    return text + (f" [{missed} never]" if count_never and missed and reached else "")


def scored_rows(test, hardware: list[str] | None):
    """`test` restricted to the rows of `hardware` (None: all of it); an unknown name refused."""
    import numpy as np

    if not hardware:
        return test
    unknown = sorted(set(hardware) - set(test.hardware_names))
    if unknown:
        raise SystemExit(f"--score-hardware: {', '.join(unknown)} not in the data; choose from "
                         f"{', '.join(test.hardware_names)}")
    wanted = [test.hardware_names.index(h) for h in hardware]
    return test.subset(np.flatnonzero(np.isin(test.candidate_hardware(), wanted)))


def parse_params(text: str) -> dict:
    """A bench's --params: a JSON object of model params, or a one-line error saying so."""
    import json

    try:
        params = json.loads(text)
    except json.JSONDecodeError as err:
        raise SystemExit(f"--params is not JSON ({err}); give e.g. "
                         "'{\"trace_features\": true}'") from None
    if not isinstance(params, dict):
        raise SystemExit(f"--params {text} is not a JSON object; give e.g. "
                         "'{\"trace_features\": true}'")
    return params


def held_out_parts(data, seed: int, holdout: tuple[str, ...]) -> tuple:
    """(train, valid, test) of `data`'s seeded by_network split with `holdout` as the test part
    (validation is whole networks too), announced with its sizes and validation networks."""
    from models.splits import SplitSpec, make_split

    split = make_split(data, SplitSpec("by_network", seed=seed, holdout=holdout))
    train, valid, test = (data.subset(getattr(split, p)) for p in ("train", "valid", "test"))
    print(f"seed {seed}: {split.sizes()}, validation networks "
          f"{', '.join(valid.network_families())}", flush=True)
    return train, valid, test
