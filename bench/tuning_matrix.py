"""Issue 15's tuning bench at honest scale: network x variant x seed, one resumable cell at a time.

Variants (the first is the baseline the search-time speedup is measured against):
  ms-xgb   MetaSchedule's XGBModel, trained from scratch while tuning
  learned  tenforge's model (default lgbm with trace features, the leaderboard's best) trained
           on the seed's x86 one-thread profiles, this one included, with every network of the
           matrix held out: it never saw the networks it tunes (as a user's own network)
  instant  the same model, no search: per task, rank --samples sampled candidates and measure
           the top --top
  instant-share  instant with a budget: the top --top per task, then the rest of
           --instant-trials by each task's share of the estimated latency (tasks.instant),
           until --instant-minutes
  warm     the same model searching, after measuring its top --warm per task first (out of
           the same budget: the estimate exists within minutes, and the search starts there)
  warm-focus  warm, then the gradient scheduler without its blind first pass over the tasks
           the warm start measured (tasks.schedulers, focus): from the first batch on, the
           search goes where the weighted latency is (warm's first pass, 483 trials and ~420 s
           on the Xeon's resnet18, recorded nothing and capped its speedup near 2x)
  warm-focus-pop4  warm-focus with an evolutionary population of 4x the round's batch instead
           of 8x: half the candidates replayed and ranked a round (the model's PerStoreFeature
           extraction was about half of a focus cell's search, py-spy on the Zen 5)
  warm-focus-pop4-g2  warm-focus-pop4 whose population goes through 2 rounds of mutation
           before each measured batch instead of MetaSchedule's 4: a round then replays and ranks
           ~40% fewer candidates (at mobilenet_v2's population of 64: 50 sampled + 2 x 64
           mutated, against 50 + 4 x 64), which leaves more of a strong model's time to measuring
  warm-focus-pop4-w128  warm-focus-pop4 whose warm start samples and ranks 128 candidates a
           task instead of 256: on mobilenet_v2 NCHW16c (Emerald Rapids VM) the warm start took
           222 of the 262 s pop4 needed to reach XGB's final, ~7 s a convolution sampling and
           featurizing
  warm-focus-pop4-w64  the same with 64 a task: on mobilenet_v2 w128's warm start took 143 s and
           reached XGB's final 4.6x sooner (seed 0); how far a smaller one goes (cells from
           e71ed38 on also sample 1.10x faster, bench/sampling_speed.py)
  warm-focus-pop4-w128-xfer  w128 whose warm start also ranks candidates transferred from the
           fastest schedules of other tasks in --db on this profile (tasks.schedule_transfer;
           the held-out networks' tasks lend none): random samples' median was ~2x their
           transfers' on mobilenet_v2's heaviest NCHW16c convolutions
  warm-focus-pop4-w128-b2x  w128 whose rounds measure twice the batch (26 a round on
           mobilenet_v2's 38 tasks) out of the same population (64): ~4.4 of a learned
           round's ~7.5 s were spent evolving and ranking it (the rest measuring), so a
           measured trial costs less search.
           Seed 0: a third less search time, twice the trials to XGB's final (1.89x)
  warm-focus-pop4-w128-bhalf  the other way: half the batch (6 a round) out of the same
           population, so each measured trial had more evolution behind it
  warm-focus-pop4-w128-evo  w128 whose warm start also ranks the children the model bred from
           each task's best 16 samples, 4 generations of 32, nothing measured
           (tasks.model_evolution): on five heavy NCHW16c convolutions the evolved top 4 ran
           faster than the sampled top 4 on most tasks (bench/warm_start_pools.py)
  warm-focus-pop4-w64-evo  the same from 64 samples a task: about w128's candidate count
  warm-focus-pop4-wshare  w64's candidate count spread by FLOPs x occurrences (16 to 256 a
           task; tasks.budget_shares.samples_by_importance): w128's warm start took ~100 s of the
           150-320 s its cells needed to XGB's final on the Zen 4, and its picks fell 2-2.6x
           short of the final bests on the heaviest convolutions, not on the light tasks
  warm-focus-pop4-w128-r13  w128 whose model refits on the search's measurements after every
           round of 13 instead of every 64 (models.ms_adapter.REFIT_EVERY): a refit on 100-1,000
           rows took 0.1-0.8 s on the Zen 4, and fine-tuning on a search's first N lifted the
           model's top-1 on its later candidates by 0.05-0.13 (docs/cost-models.md, session 38).
           Measured on mobilenet_v2 (Zen 4, 3 seeds): 3.50x median against 3.73x, within noise
  warm-focus-pop4-w128-gain  w128 whose rounds go where tenforge's expected-gain rule says
           (tasks.schedulers, gain: weight x best x the larger of the task's relative
           improvement over its last two turns and 0.05 / its turns) instead of MetaSchedule's
           gradient rule, 80% of which is weight x best / turns: rounds in proportion to a
           task's weighted latency whether it still improves or not. Gain keeps a task that
           is improving until it stalls. Measured on mobilenet_v2 (Zen 4, seeds 0, 1): 2.10x
           and never against 2.99x and 2.69x; it searched 18-19 tasks against 30 (a task's
           first round after its warm pick is the one that nearly always improves)
  warm-focus-pop4-w128-g2  w128 with g2's 2 mutation rounds: on the Zen 4 a learned round
           spent about as long evolving and ranking (0.24 s a measured trial) as measuring
           (0.22 s), so halving the evolution makes a trial ~20% cheaper if its picks hold up.
           Measured on mobilenet_v2 (Zen 4, 5 seeds): 2.80x against 2.63x (4 seeds of 5), but
           weaker picks (trial speedup 1.99 against 2.29) and a higher final: tuned 9.44 ms
           against 8.27 (median)
  warm-focus-pop4-w128-online  w128 whose refits also fit a model on the search's own
           measurements from nothing (an XGBoost regression, as MetaSchedule's XGB), which a
           task's search scores blend in: the pre-trained model's weight is 64 / (64 + the
           task's measurements) (models.ms_adapter, online). On the Zen 5's BERT the learned
           search stalled ~5% above XGB's final on the heaviest matmuls (session 48), where
           a model of the task's own neighbourhood keeps improving
  warm-focus-pop4-w128-online-wt  -online whose gradient rule counts the warm start as the
           part of a turn its trials are (4 of a 23-27 batch) instead of a whole turn
           (tasks.schedulers, warm_turn). Counted whole, the Zen 5's BERT left its two
           attention batch matmuls (~2.5 ms each) at their warm picks, 1.18-1.25x XGB's.
           Measured on that BERT (3 seeds): final estimate 111.99 ms median against 108.41;
           the small tasks had turns, the FFN matmuls fewer
  warm-focus-pop4-w128-online-ovl, ms-xgb-ovl  those searches with each batch building while
           the next task is searched, timed alone before the next batch builds
           (tune_network's overlap_builds, tasks.ms_overlap): the search phases left ~0.45 of
           the 2-vCPU Zen 4 idle (session 67)
  warm-focus-pop4-w128-online16  -online whose online model weighs half at 16 of a task's
           measurements instead of 64. On the Xeon's mobilenet_v2 (session 69) two 1x1
           convolutions at 112x112 kept picks 1.4-1.7x slower than XGB's after 39-78 trials
           of their own, where the pre-trained model still weighed 45-62%
  warm-focus-pop4-w128-online-xfer  the default learned search (-online) whose warm start also
           ranks -xfer's transferred schedules: on BERT's four heavy matmuls (Zen 4, session 90)
           the model's top 4 of 128 samples and 32 transfers from other networks' matmuls
           measured 1.5-6.2 ms, within 13% of XGB's final picks, where the warm starts'
           picks had been 1.1-2.0x them (bench/warm_start_pools.py). As a search, seed 5:
           6.22x against the default's 6.35x, its warm start 1% lower in twice the time
  warm-focus-pop4-w128-online-preq  -online whose online model's weight is each task's own:
           the one under which the blend best ranked the task's measured batches, each
           scored before the models learned it (models/online_blend.py; the count rule at 64
           until two batches decide). At 16, resnet18's heavy 3x3 convolutions (ranked well
           by the prior) ended 2-3% behind XGB's picks (session 69)
  warm-focus-pop4-w128-online-mix  -online whose search keeps a quarter of each task's
           measurements outside the innermost tile factor it measured most (models/tile_mix.py):
           on the Zen 4's mobilenet_v2 (session 108) the learned search put 96% of a 112x112
           pointwise convolution's trials on 16-lane output blocks, where the model ranks no
           better than chance, and ended 1.58x behind XGB's 8-lane picks on it
  warm-focus-pop4-w128-online-steer  -mix whose quota measurements steer: kept outside the
           tile factor holding the task's fastest program (lifted always), spent on factors
           never measured (two a call) and on the runner-up (tile_mix.steered). The mix
           spent it in the model's order: 4 lanes over 16 on resnet18's stem (session 110)
  lean     the same model searching in rounds of --lean-batch candidates per task (default 8)
           instead of the ~23 a 1,000-trial budget gives 21 tasks: a pre-trained model needs less
           exploration per turn, and its estimate exists after the first, shorter pass (the
           learned cells' first pass, 417 trials and 635 s on NCHW8c, capped their speedup)
  warm-nhwc  warm on the network prepared channels-last (retune --graph nhwc: folded, every
           convolution NHWC/OHWI); run it with a --db whose NHWC data the model learns from
           and its own --work (the models' index is per work folder)
  ms-xgb-nchw8c  MetaSchedule's XGB on the network with convolutions in NCHW8c (retune
           --graph nchw8c: channels blocked by an AVX2 vector)
  learned-nchw8c, warm-nchw8c, instant-share-nchw8c, lean-nchw8c  those variants on the
           NCHW8c graph; run them with a --db that holds NCHW8c tasks of other networks
           (collect --graph nchw8c) and their own --work, as warm-nhwc. Their speedups are
           against ms-xgb-nchw8c
  ms-xgb-packed16, warm-focus-pop4-w128-online-packed16, instant-share-packed16 (and -packed8)
           those variants on the packed graph: nchw16c (nchw8c), and each linear layer's weight
           packed in blocks of 16 (8) columns, its output computed in blocks
           (tasks/blocked_matmul.py); speedups against ms-xgb-packed16 (-packed8)
  warm-focus-pop4-wshare128-online-packed16 (and -nchw16c)  the default learned search whose
           warm start ranks w128's candidate count, spread by FLOPs x occurrences (16 to 512 a
           task; -wshare256: twice that, 16 to 1,024): BERT's first estimate followed its warm
           start's random sample, not the model (seed 0's search with seed 2's model began at
           306.5 ms, seed 2's with seed 0's at 181.4; FFN matmul first picks 10.26/7.31 ms
           against 4.52/3.89, session 103). -wshare128-online-evo: its warm start also ranks
           the children the model bred from each task's best samples, as -evo
Networks named in --folded (default: bert) are tuned as the folded graph (retune --graph
folded) in every variant. Every cell tunes every task (flops share 1.0: the zero-FLOP ones
too since 2026-11-24; earlier cells tuned those with FLOPs), until --trials or --minutes, then
compiles with the best schedules found and times the network end to end (median of 20), and
times PyTorch eager on the same input and thread count (median of 30), in a fresh process,
three times, keeping the median (cells without torch_ms_readings: one process). It times PyTorch
so before the search too: the report names cells during which the host changed speed.
Before each of these two timings it waits (up to 15 minutes) until the CPUs outside its affinity
are quiet, and it records how busy they were (bench/cpu_contention.py): on this 2-vCPU machine
kind, work on the other vCPU slowed PyTorch's resnet18 by up to 48%.

A cell's result is written (atomically) to OUT/cells/NETWORK-VARIANT-sSEED.json when it ends;
a cell whose file exists is skipped, so a killed run resumes at the cell it was in (that cell
starts over: a half-run search would distort its time-to-latency). `--report` reads every cell
and writes the medians and spreads over seeds to OUT/README.md, with the curves as a PNG:

    taskset -c 1 .venv/bin/python bench/tuning_matrix.py [--networks resnet18,mobilenet_v2,bert]
        [--variants ms-xgb,learned,instant] [--seeds 0,1,2] [--trials 1000] [--minutes 60]
        [--hardware local-1t] [--out docs/tuning-matrix] [--work data/tuning-matrix]
        [--db STORE | --extra dataset/extra/SET,dataset/device/SET]
    .venv/bin/python bench/tuning_matrix.py --report [--out docs/tuning-matrix]
    .venv/bin/python bench/tuning_matrix.py --write-back STORE  # its candidates, as seed data

Search-time speedup of a variant, per network and seed: the wall time the baseline took to
reach its best estimated latency within the trial budget / the time the variant took to reach
that same latency ("never" when it did not). The estimate is the sum over tasks of occurrences
x best measured task latency (cold cache), what MetaSchedule's scheduler optimizes. The report
also tables each cell's best estimate at equal search seconds, seed by seed: how far apart the
searches are all along, not only at the baseline's last point.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import (  # noqa: E402
    extra_folders,
    parse_params,
    ratio_spread,
    refuse_extra_beside_db,
    seeded_store,
    spread,
)

VARIANTS = ("ms-xgb", "learned", "instant", "warm", "instant-share", "warm-nhwc",
            "ms-xgb-nchw8c", "learned-nchw8c", "warm-nchw8c", "instant-share-nchw8c",
            "lean", "lean-nchw8c",
            # AVX-512: one 16-float vector a channel block
            "ms-xgb-nchw16c", "lean-nchw16c", "instant-share-nchw16c",
            # the Zen 3's best resnet18 variant (warm: 4.32x in one seed), on AVX-512's block
            "warm-nchw16c",
            "warm-focus", "warm-focus-nchw8c", "warm-focus-nchw16c",
            "warm-focus-pop4", "warm-focus-pop4-nchw8c", "warm-focus-pop4-nchw16c",
            "warm-focus-pop4-g2", "warm-focus-pop4-g2-nchw8c", "warm-focus-pop4-g2-nchw16c",
            "warm-focus-pop4-w128", "warm-focus-pop4-w128-nchw8c", "warm-focus-pop4-w128-nchw16c",
            "warm-focus-pop4-w64", "warm-focus-pop4-w64-nchw8c", "warm-focus-pop4-w64-nchw16c",
            "warm-focus-pop4-w128-xfer", "warm-focus-pop4-w128-xfer-nchw8c",
            "warm-focus-pop4-w128-xfer-nchw16c",
            "warm-focus-pop4-w128-b2x", "warm-focus-pop4-w128-b2x-nchw8c",
            "warm-focus-pop4-w128-b2x-nchw16c",
            "warm-focus-pop4-w128-bhalf", "warm-focus-pop4-w128-bhalf-nchw8c",
            "warm-focus-pop4-w128-bhalf-nchw16c",
            "warm-focus-pop4-w128-evo", "warm-focus-pop4-w128-evo-nchw8c",
            "warm-focus-pop4-w128-evo-nchw16c",
            "warm-focus-pop4-w64-evo", "warm-focus-pop4-w64-evo-nchw8c",
            "warm-focus-pop4-w64-evo-nchw16c",
            "warm-focus-pop4-wshare", "warm-focus-pop4-wshare-nchw8c",
            "warm-focus-pop4-wshare-nchw16c",
            "warm-focus-pop4-w128-r13", "warm-focus-pop4-w128-r13-nchw8c",
            "warm-focus-pop4-w128-r13-nchw16c",
            "warm-focus-pop4-w128-gain", "warm-focus-pop4-w128-gain-nchw8c",
            "warm-focus-pop4-w128-gain-nchw16c",
            "warm-focus-pop4-w128-g2", "warm-focus-pop4-w128-g2-nchw8c",
            "warm-focus-pop4-w128-g2-nchw16c",
            "warm-focus-pop4-w128-online", "warm-focus-pop4-w128-online-nchw8c",
            "warm-focus-pop4-w128-online-nchw16c",
            "warm-focus-pop4-w128-online-wt", "warm-focus-pop4-w128-online-wt-nchw8c",
            "warm-focus-pop4-w128-online-wt-nchw16c",
            "warm-focus-pop4-w128-online-ovl", "warm-focus-pop4-w128-online-ovl-nchw8c",
            "warm-focus-pop4-w128-online-ovl-nchw16c",
            "ms-xgb-ovl", "ms-xgb-ovl-nchw8c", "ms-xgb-ovl-nchw16c",
            "warm-focus-pop4-w128-online16", "warm-focus-pop4-w128-online16-nchw8c",
            "warm-focus-pop4-w128-online16-nchw16c",
            "warm-focus-pop4-w128-online-preq", "warm-focus-pop4-w128-online-preq-nchw8c",
            "warm-focus-pop4-w128-online-preq-nchw16c",
            "warm-focus-pop4-w128-online-spread", "warm-focus-pop4-w128-online-spread-nchw8c",
            "warm-focus-pop4-w128-online-spread-nchw16c",
            "warm-focus-pop4-w128-online-xfer", "warm-focus-pop4-w128-online-xfer-nchw8c",
            "warm-focus-pop4-w128-online-xfer-nchw16c",
            "ms-xgb-packed8", "ms-xgb-packed16", "warm-focus-pop4-w128-online-packed8",
            "warm-focus-pop4-w128-online-packed16", "instant-share-packed8",
            "instant-share-packed16",
            "warm-focus-pop4-wshare128-online-packed16",
            "warm-focus-pop4-wshare128-online-nchw16c",
            "warm-focus-pop4-wshare256-online-packed16",
            "warm-focus-pop4-wshare256-online-nchw16c",
            "warm-focus-pop4-wshare128-online-evo-packed16",
            "warm-focus-pop4-wshare128-online-evo-nchw16c",
            "warm-focus-pop4-w128-online-mix", "warm-focus-pop4-w128-online-mix-nchw8c",
            "warm-focus-pop4-w128-online-mix-nchw16c", "warm-focus-pop4-w128-online-mix-packed16",
            "warm-focus-pop4-w128-online-steer", "warm-focus-pop4-w128-online-steer-nchw8c",
            "warm-focus-pop4-w128-online-steer-nchw16c",
            "warm-focus-pop4-w128-online-steer-packed16",
            )  # appended: the report's order and plot colours stay
# VARIANT-GRAPH tunes the graph GRAPH
LAYOUT_VARIANTS = ("nhwc", "nchw8c", "nchw16c", "packed8", "packed16")
NEAR = 1.1  # the second speedup: to within 10% of the baseline's final estimate
TORCH_PROCESSES = 3  # PyTorch is timed in this many fresh processes; a cell keeps their median
BUSY_TIMING = 0.25  # other vCPUs busier than this while timing: the cell's ms are suspect
# ... and while searching: its search-time speedups are (a baseline cell's too, every variant's
# against it). On the 2-vCPU Zen 4, MetaSchedule's mobilenet_v2 searches took 797 and 896 s
# with vCPU 1 72-100% busy, against 635-716 s in five with it idle (docs/tuning-results.md,
# forty-fourth session).
BUSY_SEARCH = 0.25


def step_curve(points: list[Any]) -> list[list[float]]:
    """[trials, wall s, estimate ms] where the estimate improved, and the last point: all that
    reaching a latency or the best within a budget needs, a few hundred bytes per cell."""
    kept: list[list[float]] = []
    for p in points:
        if p.estimated_s is None:
            continue
        row = [p.trials, round(p.wall_s, 2), p.estimated_s * 1e3]
        if not kept or row[2] < kept[-1][2]:
            kept.append(row)
    if points and kept and points[-1].trials != kept[-1][0] and points[-1].estimated_s:
        kept.append([points[-1].trials, round(points[-1].wall_s, 2), kept[-1][2]])
    return kept


def reach(points: list[list[float]], latency_ms: float) -> tuple[int, float] | None:
    """(trials, wall s) at which the curve first got to `latency_ms`; None: it never did."""
    for trials, wall, est in points:
        if est <= latency_ms * (1 + 1e-9):
            return int(trials), wall
    return None


def best_within(points: list[list[float]], trials: int,
                seconds: float = math.inf) -> float | None:
    """Best estimated latency (ms) within the first `trials` trials and `seconds` of the
    search (None: no estimate by then, the first pass over the tasks was not done)."""
    inside = [est for t, wall, est in points if t <= trials and wall <= seconds]
    return min(inside) if inside else None


def cpu_model() -> str:
    """'AMD EPYC (family 25, model 1, stepping 1, cache 32768 KB)': a VM's model name alone may
    not tell Zen 3 from 4, nor its model number one Xeon from another (105 and 480 MiB of L3
    behind model 167, docs/seed-dataset.md session 80)."""
    fields: dict[str, str] = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    if "model name" not in fields:
        return platform.processor()
    return (f"{fields['model name']} (family {fields.get('cpu family', '?')}, model "
            f"{fields.get('model', '?')}, stepping {fields.get('stepping', '?')}, cache "
            f"{fields.get('cache size', '?')})")


def git_commit() -> str:
    """The commit of the checkout this file runs from, wherever the process was started: a cell
    run from a worktree (cwd elsewhere) recorded the cwd's HEAD before session 75."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True,
                              cwd=Path(__file__).resolve().parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_atomically(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    os.replace(tmp, path)  # a kill leaves the old file or the new one, never half of one


def training_networks(stored: list[str], holdout: list[str]) -> list[str]:
    """The stored networks a model may learn from: a held-out network's prepared graphs
    (resnet18+nhwc) are held out with it (models.dataset.network_family)."""
    from models.dataset import network_family

    return [n for n in stored if network_family(n) not in holdout]


SHARED_TASKS_OUT = "shared-tasks-out"  # part of a model's key in WORK/models.json
# also part of the key: models since it was added never saw a task of the graphs the matrix
# tunes either, even where only a training network's graph lists it (register_tuned_graphs)
TUNED_GRAPHS_OUT = "tuned-graphs-out"


def ingested_digest(db: str) -> str | None:
    """One digest of the shards `tenforge ingest` (or --extra) loaded into `db` beside the seed,
    None for the seed alone: part of a model's key, so a store that gained shards trains a new
    model rather than reusing one that never saw them."""
    from storage.store import Store

    with Store(db, read_only=True) as store:
        digests = sorted(d for (d,) in store.query("SELECT manifest_sha256 FROM ingested_shards"))
    if not digests:
        return None
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()[:16]


def learned_model(db: str, profile_name: str, holdout: list[str], family: str,
                  params: dict[str, Any], seed: int, work: Path) -> dict[str, Any]:
    """The seed's model for `seed`, trained once and remembered in WORK/models.json."""
    from bench._data import one_thread_cpus
    from storage.store import Store
    from tasks.training import pretrain

    index_path = work / "models.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    from models.trace_features import SUMMARY_VERSION

    # SHARED_TASKS_OUT: models since it was added never saw a task a held-out network shares
    shards = ingested_digest(db)
    key_parts = [family, params, sorted(holdout), seed, profile_name, SUMMARY_VERSION,
                 SHARED_TASKS_OUT, TUNED_GRAPHS_OUT]
    # the seed alone keeps the key it always had: earlier work folders' models stay valid
    key = json.dumps(key_parts + ([shards] if shards else []), sort_keys=True)
    if key in index and Path(index[key]["path"]).exists():
        return index[key]
    # every one-thread CPU profile with data; this machine's among them once it has some (a
    # CPU new to the store: the model learns from the others alone, a pure transfer)
    hardware = one_thread_cpus(db)
    if profile_name not in hardware:
        print(f"{profile_name} has no data in {db}: the model learns from {', '.join(hardware)}",
              flush=True)
    with Store(db, read_only=True) as store:
        stored = sorted({n for (n,) in store.query("SELECT name FROM networks")})
    others = training_networks(stored, holdout)
    # a task a held-out network shares with a training one stays out too: its rows may come
    # from tuning the held-out network itself (a written-back matrix cell)
    out = pretrain(db, hardware, others, family, params, None, seed, None, log=print,
                   drop_tasks_of=tuple(holdout))
    with Store(db, read_only=True) as store:
        row = store.model_row(out["model_id"])
    entry = {"model_id": out["model_id"], "path": out["path"], "family": family,
             "params": params, "trained_on": hardware, "networks": others,
             "held_out": sorted(holdout), "shared_tasks_held_out": True,
             "rows": int(row.get("train_rows") or 0),
             "data_fingerprint": row.get("data_fingerprint"), "seed": seed,
             "ingested_shards": shards}
    index[key] = entry
    write_atomically(index_path, index)
    return entry


def register_tuned_graphs(db: str, profile: Any, todo: Sequence[tuple[int, str, str]],
                          folded: str) -> list[str]:
    """Store each learned cell's network as the graph it tunes (its tasks; nothing measured),
    importing only what the store lacks, and return those graphs' labels. A held-out network's
    tasks stay out of its model through the store's list of them (drop_tasks_of); a graph the
    store never held (bert+packed16) is not listed, yet another network may measure the very
    same tasks under it (gpt2+packed16's dense layers are BERT's), and the model learned them.
    The -xfer variants' schedule library holds them out the same way, so this runs before it
    loads (on a fresh store it loaded first until session 104)."""
    from core.graphs import stored_network_name
    from tasks.collect import register_network

    graphs = sorted({(network, cell_graph(network, variant, folded))
                     for _, network, variant in todo if not uses_ms_xgb(variant)})
    for network, graph in graphs:
        register_network(db, profile, network, 1, None, graph, reuse_stored=True)
    return [stored_network_name(network, graph) for network, graph in graphs]


def cell_graph(network: str, variant: str, folded: str) -> str:
    """How a cell prepares its network (core.graphs): GRAPH for the -GRAPH variants (warm-nhwc),
    folded for the networks named in `folded` (comma-separated), else as exported."""
    for graph in LAYOUT_VARIANTS:
        if variant.endswith(f"-{graph}"):
            return graph
    return "folded" if network in folded.split(",") else "exported"


def uses_ms_xgb(variant: str) -> bool:
    """MetaSchedule's XGB, from scratch (ms-xgb, ms-xgb-nchw8c): no learned model."""
    return variant == "ms-xgb" or variant.startswith("ms-xgb-")


FULL_WARM_SAMPLES = 256  # what every warm variant but the -wN ones ranks


SHARE_MEAN_SAMPLES = 64  # the -wshare variants' mean a task

REFIT_EVERY_R13 = 13  # the -r13 variants: the model refits after every round of 13
ONLINE_HALF_EARLY = 16  # the -online16 variants: the online model weighs half this soon


def warm_samples_of(variant: str) -> int:
    """Candidates a warm start ranks per task: N for a warm-focus-pop4-wN variant, on average N
    for -wshareN and SHARE_MEAN_SAMPLES for -wshare, else the 256 the warm cells were run with
    (retune's default, WARM_SAMPLES)."""
    sized = re.match(r"warm-focus-pop4-w(share)?(\d*)", variant)
    if not sized:
        return FULL_WARM_SAMPLES
    return int(sized.group(2)) if sized.group(2) else SHARE_MEAN_SAMPLES


def search_settings(variant: str, args: argparse.Namespace) -> dict[str, Any]:
    """tune_network's budget and search settings for a cell of `variant`."""
    from models.tile_mix import TILE_MIX
    from tasks.model_evolution import GENERATIONS
    from tasks.tuning.contexts import GENETIC_ITERS, POPULATION_RATIO
    from tasks.tuning.run import ONLINE_HALF

    instant = variant.startswith("instant")
    share = variant.startswith("instant-share")
    return {
        "trials": args.instant_trials if share else args.top if instant else args.trials,
        "minutes": args.instant_minutes if share else None if instant else args.minutes,
        "scheduler": "instant" if instant else "gain" if "-gain" in variant else "gradient",
        "population": args.samples if instant else None,
        "instant_top": args.top if instant else None,
        "warm_start": args.warm if variant.startswith("warm") else None,
        "warm_focus": variant.startswith("warm-focus"),
        "population_ratio": 4 if variant.startswith("warm-focus-pop4") else POPULATION_RATIO,
        "genetic_iters": 2 if "-g2" in variant else GENETIC_ITERS,
        "warm_samples": warm_samples_of(variant),
        "trials_per_iter": args.lean_batch if variant.startswith("lean") else None,
        "round_scale": 2.0 if "-b2x" in variant else 0.5 if "-bhalf" in variant else 1.0,
        "warm_evolve": GENERATIONS if "-evo" in variant else 0,
        "warm_share": "-wshare" in variant,
        "refit_every": REFIT_EVERY_R13 if "-r13" in variant else None,
        # explicit both ways: tune_network's default is on, the variants before it were off
        "online": (ONLINE_HALF_EARLY if "-online16" in variant
                   else ONLINE_HALF if "-online" in variant else None),
        "online_blend": "prequential" if "-preq" in variant else "count",
        "warm_by_trials": "-wt" in variant,
        "warm_spread": "-spread" in variant,
        "overlap_builds": "-ovl" in variant,
        "tile_mix": TILE_MIX if "-mix" in variant or "-steer" in variant else None,
        "tile_steer": "-steer" in variant,
    }


def uses_transfer(variant: str) -> bool:
    return "-xfer" in variant


def run_cell(network: str, variant: str, seed: int, args: argparse.Namespace,
             model: dict[str, Any] | None, commit: str,
             library: Sequence[Any] = ()) -> dict[str, Any]:
    from bench.cpu_contention import busy_share, other_cpu_ticks, wait_for_quiet
    from bench.tuning import torch_eager_ms_fresh
    from core.pause import pause_others
    from core.tvm_env import tvm_version
    from tasks.hardware import resolve_profile
    from tasks.tuning import tune_network

    profile = resolve_profile(args.hardware)
    database = Path(args.work) / "databases" / f"{network}-{variant}-s{seed}"
    shutil.rmtree(database, ignore_errors=True)  # a cell starts over (see the docstring)
    share = variant.startswith("instant-share")
    settings = search_settings(variant, args)
    graph = cell_graph(network, variant, args.folded)
    # the host's speed as the search starts: PyTorch now and after the search (some hosts
    # drift 1.7x within an hour, session 82), so the report can say when a cell ran slow
    waited = {"torch before": wait_for_quiet()}
    before, before_readings = torch_ms_median(network, profile.num_threads, torch_eager_ms_fresh)
    began = time.time()
    ticks = {"start": other_cpu_ticks()}
    # From the search's end to the last timing, the pause file asks collections beside this
    # bench to wait (core/pause.py), then each timing waits for the other vCPUs to be quiet.
    quiet = contextlib.ExitStack()

    def report(line: str) -> None:
        print(f"  [{network} {variant} s{seed}] {line}", flush=True)
        if line.startswith("search ended"):  # next: compile and time the tuned network
            ticks["search ended"] = other_cpu_ticks()
            # (the search's time is taken by now: waiting here delays the timing, not it)
            quiet.enter_context(pause_others(args.pause_file))
            waited["tuned"] = wait_for_quiet()
            ticks["tuned timing"] = other_cpu_ticks()

    with quiet:
        result = tune_network(network, profile, database, **settings,
                              cost_model="xgb" if uses_ms_xgb(variant) else model["path"],
                              flops_share=1.0, seed=seed, graph=graph, report=report,
                              transfer_library=library if uses_transfer(variant) else ())
        ticks["tuned timed"] = other_cpu_ticks()
        waited["torch"] = wait_for_quiet()
        ticks["torch timing"] = other_cpu_ticks()
        eager, eager_readings = torch_ms_median(network, profile.num_threads,
                                                torch_eager_ms_fresh)
        # the tuned network once more, after PyTorch, in a fresh worker: a cell whose two
        # readings disagree (instant-share s2: 91.4 ms, re-timed 75.5) says so itself
        again = time_tuned_again(profile, network, graph, Path(result.database_dir))
        ticks["end"] = other_cpu_ticks()
    wall = time.time() - began
    # the rest of the machine's load while searching, and while timing tuned and torch (the
    # waits for quiet left out)
    contention = {"search": busy_share(ticks["start"], ticks.get("search ended")),
                  "timing": busy_share(*joined(ticks.get("tuned timing"), ticks["tuned timed"],
                                               ticks["torch timing"], ticks["end"]))}
    return {
        "network": network, "variant": variant, "seed": seed, "hardware": profile.name,
        "threads": profile.num_threads,
        "trials_budget": args.instant_trials if share else args.trials,
        "minutes": args.instant_minutes if share else args.minutes,
        "warm_start": settings["warm_start"],
        "warm_focus": settings["warm_focus"],
        "population_ratio": settings["population_ratio"],
        "genetic_iters": settings["genetic_iters"],
        "warm_samples": settings["warm_samples"] if settings["warm_start"] else None,
        "transfer_sources": result.transfer_sources,
        "warm_evolve": result.warm_evolve,
        "warm_share": result.warm_share,
        "warm_spread": result.warm_spread,  # cells before 2026-12-01 07:06 lack it: False
        "trials_per_round": result.trials_per_round,  # as used (lean: --lean-batch)
        "round_scale": settings["round_scale"],
        "refit_every": settings["refit_every"],
        "online": settings["online"],
        "online_blend": result.online_blend,  # cells before 2026-12-01 03:36 lack it: "count"
        "online_shares": result.online_shares,  # prequential: weight -> tasks that chose it
        "warm_turn": result.warm_turn,  # None: a whole turn (every cell before -wt)
        "overlap_builds": result.overlap_builds,  # cells before 2026-11-30 22:40: False
        # builds cut by the run's build cap (None: no cap; cells before session 107 lack it)
        "builds_cut": result.builds_cut,
        "tile_mix": result.tile_mix,  # (None: off; cells before session 109 lack it)
        "tile_steer": result.tile_steer,  # (cells before session 111 lack it)
        # the heaviest tasks' picks measured again before compiling (tasks.tuning.hold; cells
        # before 2026-11-28 15:00 have no such key: compiled from the search's database)
        "held": None if result.held is None else {
            "tasks": result.held.heavy, "changed": result.held.changed,
            "measured": result.held.measured, "hold_s": round(result.held.hold_s, 1)},
        "scheduler": settings["scheduler"],  # cells before 2026-11-27 21:00: gradient (or instant)
        "graph": graph,
        # before 2026-11-23 22:30: in the bench's process; no torch_ms_readings: one process
        "torch_timing": f"median of {TORCH_PROCESSES} fresh processes",
        "trials": result.trials, "errors": result.errors, "stop_reason": result.stop_reason,
        "search_s": round(result.search_s, 1), "measure_s": round(result.measure_s, 1),
        "build_s": round(result.build_s, 1),
        "wall_s": round(wall, 1), "search_threads": result.search_threads,
        "population": result.population, "tasks_total": result.tasks_total,
        "tasks_tuned": len(result.tasks_tuned),
        "tasks_filled": result.tasks_filled,  # left unmeasured by the search, then picked
        "tuned_ms": result.tuned["latency_s"] * 1e3, "tuned_ms_again": again,
        "untuned_ms": result.untuned["latency_s"] * 1e3, "torch_ms": eager,
        "torch_ms_readings": eager_readings,
        "torch_ms_before": before, "torch_ms_before_readings": before_readings,
        "tuned_functions": result.tuned["tuned_functions"],
        "tir_functions": result.tuned["tir_functions"],
        "estimated_ms": None if result.estimated_s is None else result.estimated_s * 1e3,
        "curve": step_curve(result.curve),
        "model": None if uses_ms_xgb(variant) else model,
        "other_cpus_busy": contention, "waited_for_quiet_s": waited,
        "provenance": {"tvm": tvm_version(), "cpu": cpu_model(), "commit": commit,
                       "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(began)),
                       "cores": len(os.sched_getaffinity(0)), "python": platform.python_version()},
    }


def torch_ms_median(network: str, threads: int,
                    time_one: Callable[..., float]) -> tuple[float, list[float]]:
    """PyTorch eager's ms as the median of TORCH_PROCESSES readings of `time_one` (each a fresh
    process), and the readings. One process is a coin flip on some hosts: on the 105 MiB Xeon
    one read 63.8 ms and the next 80.0, the machine quiet (session 82)."""
    readings = [time_one(network, threads, runs=30) for _ in range(TORCH_PROCESSES)]
    return statistics.median(readings), readings


def time_tuned_again(profile: Any, network: str, graph: str, database: Path) -> float:
    """The tuned network's median ms of 20 runs, compiled from the database it was compiled
    from (the held one where there is one) in a new worker."""
    from core.tvm_env import load_tvm
    from tasks.measure import Measurer
    from tasks.workloads import import_to_relax

    tvm = load_tvm(profile.target)
    module = tvm.ir.save_json(import_to_relax(network, 1, None, graph))
    with Measurer(profile) as measurer:
        run = measurer.run_network(module, str(database), repeat=20)
    return float(np.median(run["run_secs"])) * 1e3


def joined(a0, a1, b0, b1) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """Two tick windows, a0-a1 and b0-b1, as one (start, end) pair for busy_share."""
    if None in (a0, a1, b0, b1):
        return None, None
    return (0, 0), (a1[0] - a0[0] + b1[0] - b0[0], a1[1] - a0[1] + b1[1] - b0[1])


def collect(args: argparse.Namespace) -> None:
    from tasks.hardware import resolve_profile

    networks = [n for n in args.networks.split(",") if n]
    variants = [v for v in args.variants.split(",") if v]
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise SystemExit(f"unknown variant(s) {', '.join(bad)}: choose from {', '.join(VARIANTS)}")
    seeds = [int(s) for s in args.seeds.split(",") if s]
    params = parse_params(args.params)  # before the store loads: a typo costs no minutes
    # the networks the learned model never sees: the matrix's, whichever this run tunes
    holdout = sorted({*networks, *(n for n in (args.holdout or "").split(",") if n)})
    profile = resolve_profile(args.hardware)
    extra = extra_folders(args.extra)
    refuse_extra_beside_db(args.db, extra, "WORK/seed.duckdb")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    db = seeded_store(args.db or str(work / "seed.duckdb"), extra,
                      log=lambda line: print(line, flush=True))
    cells = Path(args.out) / "cells"
    todo = [(s, n, v) for s in seeds for n in networks for v in variants
            if not (cells / f"{n}-{v}-s{s}.json").exists()]
    print(f"{len(todo)} of {len(seeds) * len(networks) * len(variants)} cells to run on "
          f"{profile.name}, {len(os.sched_getaffinity(0))} core(s)", flush=True)
    # first: the schedule library and the models hold out the tasks of the graphs it stores
    if any(not uses_ms_xgb(v) for _, _, v in todo):
        registered = register_tuned_graphs(db, profile, todo, args.folded)
        print(f"tuned graphs in the store (their tasks held out): {', '.join(registered)}",
              flush=True)
    library: list[Any] = []
    if any(uses_transfer(v) for _, _, v in todo):  # the held-out networks lend no schedules
        from storage.store import Store
        from tasks.schedule_transfer import load_library

        with Store(db, read_only=True) as store:
            library = load_library(store, profile.name, holdout)
        print(f"schedule library: {len(library)} schedules of other tasks on {profile.name}, "
              f"none of {', '.join(holdout)}", flush=True)
    commit = git_commit()  # the code this process runs, whatever lands while it does
    for done, (seed, network, variant) in enumerate(todo):
        print(f"== cell {done + 1}/{len(todo)}: {network} {variant} seed {seed} "
              f"({time.strftime('%H:%M:%S')})", flush=True)
        model = None if uses_ms_xgb(variant) else learned_model(
            db, profile.name, holdout, args.family, params, seed, work)
        row = run_cell(network, variant, seed, args, model, commit, library)
        if row["stop_reason"] == "interrupt":  # SIGTERM or Ctrl-C: not a result, rerun it
            raise SystemExit(f"interrupted in {network} {variant} seed {seed}: no cell written; "
                             "run again to resume")
        write_atomically(cells / f"{network}-{variant}-s{seed}.json", row)
        print(f"== {network} {variant} seed {seed}: {row['tuned_ms']:.2f} ms tuned, torch "
              f"{row['torch_ms']:.2f} ms, {row['trials']} trials in {row['search_s']:.0f} s "
              f"({row['stop_reason']})", flush=True)


def baseline_of(variant: str, present: set[str]) -> str:
    """The variant a cell's search-time speedup is measured against: MetaSchedule's XGB on the
    same graph (learned-nchw8c against ms-xgb-nchw8c) where the matrix has it, else ms-xgb.
    ms-xgb-GRAPH itself is measured against ms-xgb: does the graph reach NCHW's final sooner?"""
    for graph in LAYOUT_VARIANTS:
        same = f"{VARIANTS[0]}-{graph}"
        if variant.endswith(f"-{graph}") and variant != same and same in present:
            return same
    return VARIANTS[0]


def pair_speedup(cell: dict[str, Any], base: dict[str, Any],
                 slack: float = 1.0) -> tuple[float | None, float | None]:
    """(search-time speedup, trial speedup) of `cell` to `base`'s best estimate within its
    budget x `slack`: `base`'s seconds (trials) to that latency / `cell`'s; (None, None) where
    `cell` never reached it."""
    final = best_within(base["curve"], base["trials_budget"]) * slack
    base_trials, base_wall = reach(base["curve"], final)
    got = reach(cell["curve"], final)
    return ((None, None) if got is None else
            (base_wall / max(got[1], 1e-9), base_trials / max(got[0], 1)))


def curve_speedup(cell: dict[str, Any], base: dict[str, Any]) -> float | None:
    """The median, over the points where `base`'s estimate improved within its budget, of
    `base`'s seconds to that estimate / `cell`'s (0 where `cell` never got there); None where
    `base` has no estimate. `pair_speedup` asks only about `base`'s last point, a race to its
    last few percent that one quick or slow run decides; this asks all along its curve."""
    # the curve's closing point repeats its best estimate at the last trial: not an improvement
    points = [p for i, p in enumerate(base["curve"]) if p[0] <= base["trials_budget"]
              and (i == 0 or p[2] < base["curve"][i - 1][2])]
    ratios = []
    for _, seconds, estimate in points:
        got = reach(cell["curve"], estimate)
        ratios.append(0.0 if got is None else seconds / max(got[1], 1e-9))
    return statistics.median(ratios) if ratios else None


def speedups(cells: list[dict[str, Any]], slack: float = 1.0) -> dict[tuple, tuple]:
    """(network, variant, seed) -> `pair_speedup` against the variant's baseline
    (`baseline_of`) of the same seed, to its final estimate x `slack` (1.1: within 10% of
    it)."""
    present = {c["variant"] for c in cells}
    base = {(c["network"], c["variant"], c["seed"]): c for c in cells}
    out = {}
    for c in cells:
        b = base.get((c["network"], baseline_of(c["variant"], present), c["seed"]))
        if b is None or not b["curve"]:
            continue
        out[(c["network"], c["variant"], c["seed"])] = pair_speedup(c, b, slack)
    return out


def pooled_speedups(cells: list[dict[str, Any]]) -> dict[tuple, float | None]:
    """(network, variant, seed) -> search-time speedup to the median of the baseline seeds'
    final estimates: the median of the baseline seeds' seconds to that latency (a seed that
    never got there counts as never) / this cell's (None: it never got there). Of an even
    number of seeds: the higher middle final and the lower middle time.

    `speedups` pairs each cell with the baseline of its own seed, so one weak baseline seed
    (on the Zen 5, MetaSchedule's XGB ended 18.0, 20.4 and 19.5 ms over seeds 0-2) makes one
    big ratio; against the pooled final every cell chases the same latency."""
    present = {c["variant"] for c in cells}
    out = {}
    for c in cells:
        base = [b for b in cells if b["network"] == c["network"] and b["curve"]
                and b["variant"] == baseline_of(c["variant"], present)]
        if not base:
            continue
        # with an even number of baseline seeds, the higher of the two middle finals (one that
        # half of them reached: the mean of two is reached by one seed only, so its median time
        # would be "never") and the quicker of the two middle times (the smaller speedup)
        target = statistics.median_high(best_within(b["curve"], b["trials_budget"])
                                        for b in base)
        times = sorted((reach(b["curve"], target) or (0, float("inf")))[1] for b in base)
        base_wall = statistics.median_low(times)
        got = reach(c["curve"], target)
        out[(c["network"], c["variant"], c["seed"])] = (
            None if got is None or math.isinf(base_wall) else base_wall / max(got[1], 1e-9))
    return out


def speedup_column(values: list[float | None]) -> str:
    """The report's cell for a speedup of a variant's seeds (None: never reached): 'no
    baseline' (none to give), or `ratio_spread` of them."""
    return ratio_spread(values) if values else "no baseline"


def shared_tasks(db: str, network: str, trained_networks: list[str]) -> tuple[int, int, float]:
    """(tasks of `network` also in a training network, its tasks, their share of its FLOPs x
    occurrences): the learned model holds out whole networks, and networks share layers
    (ResNet-50's 3x3 convolutions are ResNet-18's, GPT-2's dense layers BERT's). `network` at
    batch 1 and its largest stored input size (the zoo's default)."""
    from storage.store import Store

    with Store(db, read_only=True) as store:
        rows = store.con.execute(
            "WITH mine AS (SELECT nt.task_id, nt.weight * t.flops AS work FROM network_tasks nt "
            "JOIN tasks t USING (task_id) WHERE nt.network_id = (SELECT network_id FROM "
            "networks WHERE name = $net AND batch = 1 ORDER BY input_size DESC LIMIT 1)), "
            "seen AS (SELECT DISTINCT task_id FROM network_tasks JOIN networks USING "
            "(network_id) WHERE list_contains($trained, name)) "
            "SELECT count(*) FILTER (WHERE task_id IN (SELECT task_id FROM seen)), count(*), "
            "sum(work) FILTER (WHERE task_id IN (SELECT task_id FROM seen)) / "
            "nullif(sum(work), 0) FROM mine", {"net": network, "trained": trained_networks}
        ).fetchall()
    shared, total, share = rows[0]
    return int(shared), int(total), float(share or 0.0)


def overlap_lines(db: str, cells: list[dict[str, Any]]) -> list[str]:
    """The training overlap of each network the learned model tuned, as Markdown lines."""
    lines = []
    for network in sorted({c["network"] for c in cells if c.get("model")}):
        trained = next(c["model"]["networks"] for c in cells
                       if c["network"] == network and c.get("model"))
        shared, total, share = shared_tasks(db, network, trained)
        lines.append(f"- {network}: {shared} of its {total} tasks ({share:.0%} of its FLOPs) are "
                     "also tasks of networks the learned model trained on")
    return lines


def neighbours(cells: list[dict[str, Any]]) -> str:
    """The highest search and timing busy shares of the other vCPUs over `cells`."""
    def most(window: str) -> float | None:
        known = [v for v in (c.get("other_cpus_busy", {}).get(window) for c in cells)
                 if v is not None]
        return max(known) if known else None

    def shown(share: float | None, bound: float) -> str:
        if share is None:
            return "n/a"
        return f"{share:.0%}" + (" suspect" if share > bound else "")

    return f"{shown(most('search'), BUSY_SEARCH)} / {shown(most('timing'), BUSY_TIMING)}"


def busy_searches(cells: list[dict[str, Any]]) -> list[str]:
    """A line per cell that searched with the other vCPUs more than BUSY_SEARCH busy: its
    search times, and so the speedups measured with it (as variant or as baseline), are
    suspect. The line says which to rerun."""
    busy = [c for c in cells
            if (c.get("other_cpus_busy", {}).get("search") or 0) > BUSY_SEARCH]
    head = (f"Cells that searched with the other vCPUs more than {BUSY_SEARCH:.0%} busy (their "
            f"search-time speedups are suspect: rerun them): {len(busy)}" + (":" if busy else "."))
    return [head, *(f"- {c['network']} {c['variant']} s{c['seed']}: "
                    f"{c['other_cpus_busy']['search']:.0%} busy, {c['search_s']:.0f} s"
                    for c in busy)]


def report(args: argparse.Namespace) -> None:
    from storage.reports import format_table, markdown_table

    out = Path(args.out)
    cells = [json.loads(p.read_text()) for p in sorted((out / "cells").glob("*.json"))]
    if not cells:
        raise SystemExit(f"no cells under {out / 'cells'}: run the matrix first (without "
                         "--report)")
    gains = speedups(cells)
    near = speedups(cells, slack=NEAR)
    pooled = pooled_speedups(cells)
    torch_median = network_torch_ms(cells)
    rows = []
    for (network, variant) in sorted({(c["network"], c["variant"]) for c in cells},
                                     key=lambda k: (k[0], VARIANTS.index(k[1]))):
        mine = [c for c in cells if (c["network"], c["variant"]) == (network, variant)]
        keys = [(network, variant, c["seed"]) for c in mine]
        pairs = [gains[key] for key in keys if key in gains]
        rows.append((
            network, variant, ",".join(str(c["seed"]) for c in mine),
            spread([c["tuned_ms"] for c in mine]), spread([c["torch_ms"] for c in mine]),
            spread([c["torch_ms"] / c["tuned_ms"] for c in mine]),
            spread([torch_median[network] / c["tuned_ms"] for c in mine]),
            spread([c["trials"] for c in mine], 0),
            spread([c["search_s"] / 60 for c in mine], 1),
            spread([c["trials"] / max(c["search_s"] / 60, 1e-9) for c in mine], 1),
            # no cell of its baseline (another CPU's matrix may lack ms-xgb): nothing to say
            speedup_column([p[0] for p in pairs]),
            ratio_spread([p[1] for p in pairs]),
            speedup_column([near[key][0] for key in keys if key in near]),
            speedup_column([pooled[key] for key in keys if key in pooled]),
            "/".join(sorted({c["stop_reason"] for c in mine})),
            spread([c["tuned_functions"] / c["tir_functions"] for c in mine]),
            neighbours(mine),
            spread([both_timings_ms(c) for c in mine]),
            spread([torch_median[network] / both_timings_ms(c) for c in mine])))
    headers = ["network", "variant", "seeds", "tuned ms", "torch ms", "vs torch (x faster)",
               "vs torch, all cells' median", "trials", "search min", "trials/min",
               f"search-time speedup vs {VARIANTS[0]}", "trial speedup",
               f"search-time speedup to {NEAR:g}x its final",
               f"search-time speedup to {VARIANTS[0]}'s median final", "stopped by",
               "functions tuned",
               "other vCPUs busy: search / timing (max)",
               "tuned ms, both timings' mean", "vs torch, both timings, all cells' median"]
    table = format_table(headers, rows)
    print(table)
    first = cells[0]
    # the budget line names a search cell's (an instant-share cell has its own, smaller one)
    search = next((c for c in cells if not c["variant"].startswith("instant")), first)
    lines = [
        "# Tuning matrix (issue 15, item 7): generated by `bench/tuning_matrix.py --report`",
        "",
        "Do not edit: rerun the report. Median (min-max) over the seeds done. Cells:",
        "`cells/NETWORK-VARIANT-sSEED.json` (curve, settings, model lineage, provenance).",
        f"Hardware {first['hardware']} ({first['threads']} thread(s)) on "
        f"{first['provenance']['cpu']}, TVM {first['provenance']['tvm']}; budget "
        f"{search['trials_budget']} trials or {search['minutes']} minutes a search cell "
        "(instant-share: its own, in its cells).",
        "vs torch = PyTorch eager ms / tuned ms at the same thread count (> 1: tuned is faster);",
        "the next column divides the median of every cell's PyTorch reading of that network",
        "instead (the same program each time: one cell's reading is noisier than their median).",
        f"A cell's PyTorch reading: the median of {TORCH_PROCESSES} fresh processes (cells with",
        "no torch_ms_readings: one process).",
        "Search-time speedup = the baseline's seconds to its best estimate within the budget /",
        "the variant's seconds to that estimate (same seed; the baseline is ms-xgb, and for a",
        "VARIANT-GRAPH, ms-xgb-GRAPH where the matrix has it); the next but one column: to within",
        f"{NEAR - 1:.0%} of it. The estimate exists once every task has a measurement (the first "
        "pass over the tasks). Against the baseline's median final: every seed chases the",
        "median of the baseline seeds' final estimates, and the baseline's time is the median of",
        "its seeds' times to that latency (one weak baseline seed cannot make a big ratio).",
        "In every speedup median a seed that never got there ranks below every ratio ('never'",
        "where the median falls on one); the range is the reached ratios', [k never] their count.",
        "Other vCPUs busy: the share of the CPUs outside the bench's affinity that was busy while",
        "it searched, and while it timed the tuned network and PyTorch (bench/cpu_contention.py;",
        "before each of those two timings a cell waits, up to 15 minutes, for a 5 s window with",
        "the others at most 10% busy);",
        (f"a timing share over {BUSY_TIMING:.0%} makes that cell's ms columns suspect, a "
         f"search share over {BUSY_SEARCH:.0%} its"),
        "search-time columns (and every variant's against it, if it is the baseline): rerun it",
        "(delete its file). n/a: a cell from before this was recorded.",
        "The last two columns take the mean of a cell's two timings of its tuned network (each",
        "in a fresh process, which alone can run 10% slow or fast), or its one where it has one.",
        "", *markdown_table(headers, rows).splitlines()]
    lines += ["", *timing_disagreements(cells), "", *torch_outliers(cells, torch_median),
              "", *host_drift(cells), "", *busy_searches(cells), "",
              *estimates_at_lines(cells)]
    db = args.db or str(Path(args.work) / "seed.duckdb")
    if Path(db).exists():
        lines += ["", "The learned model held out whole networks, not their layers:", "",
                  *overlap_lines(db, cells)]
    lines += ["", "![curves](curves.png)", ""]
    (out / "README.md").write_text("\n".join(lines))
    plot(cells, out / "curves.png")
    print(f"\nwrote {out / 'README.md'} and {out / 'curves.png'}")


RETIME_GAP = 0.10  # a cell's two timings of its tuned network further apart: say so


def both_timings_ms(cell: dict[str, Any]) -> float:
    """The mean of a cell's two timings of its tuned network, or its one (cells before
    2026-11-24). Each timing is one fresh process, and a process alone runs up to ~10% slow or
    fast (docs/tuning-results.md, seventy-seventh session): two halve the bet on one."""
    again = cell.get("tuned_ms_again")
    return cell["tuned_ms"] if not again else (cell["tuned_ms"] + again) / 2


def timing_disagreements(cells: list[dict[str, Any]]) -> list[str]:
    """A line per cell whose second timing of the tuned network (after PyTorch, in a fresh
    worker; cells since 2026-11-24) is more than RETIME_GAP away from its first."""
    return readings_apart(cells, "tuned_ms", "tuned_ms_again",
                          "Timed twice (the tuned network again after PyTorch)")


def readings_apart(cells: list[dict[str, Any]], first: str, then: str, title: str) -> list[str]:
    """A head line (how many cells have both readings `first` and `then`, how many of them
    differ by more than RETIME_GAP) and a line per such cell."""
    timed = [c for c in cells if c.get(first) and c.get(then)]
    far = [c for c in timed if abs(c[then] / c[first] - 1) > RETIME_GAP]
    head = (f"{title}: {len(timed)} cells; {len(far)} more than {RETIME_GAP:.0%} apart"
            + (":" if far else "."))
    return [head, *(f"- {c['network']} {c['variant']} s{c['seed']}: {c[first]:.2f} ms, "
                    f"then {c[then]:.2f}" for c in far)]


def network_torch_ms(cells: list[dict[str, Any]]) -> dict[str, float]:
    """Per network, the median of every cell's PyTorch eager reading (one thread count per
    matrix: its cells are timed alike)."""
    by_network: dict[str, list[float]] = {}
    for c in cells:
        by_network.setdefault(c["network"], []).append(c["torch_ms"])
    return {network: float(np.median(values)) for network, values in by_network.items()}


def torch_outliers(cells: list[dict[str, Any]], median: dict[str, float]) -> list[str]:
    """A line per cell whose PyTorch reading is more than RETIME_GAP off its network's median:
    its own "vs torch" is off by as much (the tuned network is timed twice; PyTorch in one
    process in older cells, the median of TORCH_PROCESSES in newer ones)."""
    far = [c for c in cells if abs(c["torch_ms"] / median[c["network"]] - 1) > RETIME_GAP]
    head = (f"PyTorch readings more than {RETIME_GAP:.0%} off their network's median "
            f"({', '.join(f'{n} {m:.2f} ms' for n, m in sorted(median.items()))}): "
            f"{len(far)}" + (":" if far else "."))
    return [head, *(f"- {c['network']} {c['variant']} s{c['seed']}: PyTorch {c['torch_ms']:.2f} "
                    f"ms, tuned {c['tuned_ms']:.2f}" for c in far)]


def host_drift(cells: list[dict[str, Any]]) -> list[str]:
    """A line per cell whose PyTorch reading before its search and after it differ by more
    than RETIME_GAP: the host changed speed while it searched, and its estimates and search
    time with it (cells from before 2026-12-03 have no reading before and are left out)."""
    return readings_apart(cells, "torch_ms_before", "torch_ms",
                          "PyTorch timed before and after the search (the host's speed)")


SECONDS_STEPS = (50, 100, 200, 250, 500, 1000, 2000, 5000)  # the equal-seconds table's
SECONDS_COLUMNS = 8                                            # step and widest grid


def seconds_grid(cells: list[dict[str, Any]]) -> list[int]:
    """Search seconds for the equal-seconds table: the first of SECONDS_STEPS that spans the
    longest curve in at most SECONDS_COLUMNS columns, up to the first column past its end."""
    longest = max(c["curve"][-1][1] for c in cells)
    step = next((s for s in SECONDS_STEPS if longest / s <= SECONDS_COLUMNS), SECONDS_STEPS[-1])
    return list(range(step, int(longest) + step, step))[:SECONDS_COLUMNS]


def estimates_at_lines(cells: list[dict[str, Any]]) -> list[str]:
    """Each cell's best estimate within its trial budget at equal search seconds, the seeds'
    variants side by side. The speedup columns race to the baseline's last estimate, which one
    quick or slow run (or host phase) decides; this says how far apart the searches were all
    along (sessions 83-84 wrote it by hand for the 105 MiB Xeon)."""
    from storage.reports import markdown_table

    with_curve = [c for c in cells if c["curve"]]
    if not with_curve:
        return []
    grid = seconds_grid(with_curve)
    headers = ["seed", "network", "variant", *(f"{s} s" for s in grid)]
    order = sorted(with_curve,
                   key=lambda c: (c["network"], c["seed"], VARIANTS.index(c["variant"])))

    def at(cell: dict[str, Any], seconds: int) -> str:
        # within the trial budget, as every final above (the last batch may overshoot it)
        best = best_within(cell["curve"], cell["trials_budget"], seconds)
        return "-" if best is None else f"{best:.2f}"

    rows = [(c["seed"], c["network"], c["variant"], *(at(c, s) for s in grid)) for c in order]
    return ["Each cell's best estimate (ms, within its trial budget) by the search seconds "
            "heading the column ('-': no estimate yet, the first pass over the tasks was not "
            "done):", "", *markdown_table(headers, rows).splitlines()]


def plot(cells: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    networks = sorted({c["network"] for c in cells})
    fig, axes = plt.subplots(len(networks), 1, figsize=(8, 3.6 * len(networks)), squeeze=False)
    colors = dict(zip(VARIANTS, (f"C{i}" for i in range(len(VARIANTS)))))  # one per variant
    for ax, network in zip(axes[:, 0], networks):
        for c in (c for c in cells if c["network"] == network and c["curve"]):
            wall = [p[1] / 60 for p in c["curve"]]
            est = [p[2] for p in c["curve"]]
            ax.step(wall, est, where="post", color=colors[c["variant"]], alpha=0.8,
                    marker="o" if len(wall) == 1 else None,  # instant: one point
                    label=f"{c['variant']} s{c['seed']}")
        ax.set_yscale("log")
        ax.set_xlabel("search wall time (min)")
        ax.set_ylabel("estimated latency (ms)")
        ax.set_title(f"{network}: best estimate so far")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="resnet18,mobilenet_v2,bert")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--trials", type=int, default=1000, help="a search cell's trial budget")
    parser.add_argument("--minutes", type=float, default=60, help="a search cell's deadline")
    parser.add_argument("--samples", type=int, default=256, help="instant: ranked per task")
    parser.add_argument("--top", type=int, default=8, help="instant: measured per task")
    parser.add_argument("--instant-trials", type=int, default=400,
                        help="instant-share: trials in all (the first pass takes --top per task)")
    parser.add_argument("--instant-minutes", type=float, default=5,
                        help="instant-share: deadline")
    parser.add_argument("--warm", type=int, default=4,
                        help="warm: the model's picks measured per task before the search")
    parser.add_argument("--lean-batch", type=int, default=8,
                        help="lean: candidates measured per turn of a task")
    parser.add_argument("--folded", default="bert",
                        help="networks whose cells tune the folded graph (their weight-only "
                             "work runs once, at load): BERT's exported graph transposes every "
                             "linear weight on every inference, and tuned at 150 trials it was "
                             "1.82x slower than folded (docs/graph-levers-bert)")
    parser.add_argument("--holdout", default="",
                        help="networks the learned model never sees besides --networks (a run "
                             "of one network that must use the whole matrix's model)")
    parser.add_argument("--hardware", default="local-1t")
    parser.add_argument("--family", default="lgbm")
    parser.add_argument("--params", default='{"trace_features": true, "tile_features": true}',
                        help="the learned model's parameters (JSON; the tile block since "
                             "2026-11-27: docs/tuning-results.md, fortieth session)")
    parser.add_argument("--db", help="store with the training data (default: WORK/seed.duckdb, "
                                     "loaded from the seed once)")
    parser.add_argument("--extra", metavar="DIR,DIR",
                        help="shard folders to load into WORK/seed.duckdb beside the seed (e.g. "
                             "dataset/extra/...,dataset/device/...): the learned models train "
                             "on them too")
    parser.add_argument("--out", default="docs/tuning-matrix", help="cells and the report")
    parser.add_argument("--work", default="data/tuning-matrix",
                        help="models and tuning databases (not committed)")
    parser.add_argument("--pause-file", default="data/tuning-matrix/pause",
                        help="held while timing: collections run with TENFORGE_PAUSE_FILE set "
                             "to it wait (core/pause.py); '' for none")
    parser.add_argument("--report", action="store_true", help="only write the report")
    parser.add_argument("--write-back", metavar="STORE",
                        help="only store the finished cells' measured candidates in STORE, a "
                             "store holding the seed (bench/matrix_writeback.py), for "
                             "`tenforge dataset export-seed`")
    return parser


def main() -> None:
    from tenforge.cli import bootstrap

    args = main_parser().parse_args()
    args.pause_file = args.pause_file or None
    if args.report:
        report(args)
        return
    bootstrap()
    if args.write_back:
        from bench.matrix_writeback import write_back_cells

        write_back_cells(args.out, args.work, args.write_back)
        return
    collect(args)


if __name__ == "__main__":
    main()
