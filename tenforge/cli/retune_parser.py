"""The `retune` command's options: the longest list of any command, so in a file of its own."""

from __future__ import annotations

import argparse
from typing import Callable

from core.graphs import CHOICES
from models.tile_mix import TILE_MIX
from tasks.tuning import SCHEDULERS
from tenforge.cli import run_commands as run
from tenforge.cli.arg_types import non_negative, positive


def add_retune(sub: argparse._SubParsersAction,
               db_option: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser("retune", help="tune a network with the best learned cost model and "
                                      "measure its end-to-end latency")
    p.add_argument("network", help="a zoo or registered network (`tenforge networks`), or "
                                   "FILE.py:FACTORY, FILE.pt2 or FILE.onnx")
    p.add_argument("--hardware", default="local", help="hardware profile")
    p.add_argument("--trials", type=positive, default=64, help="measured candidates in all")
    p.add_argument("--minutes", type=float, default=None,
                   help="wall-clock budget of the search (default: none)")
    p.add_argument("--cost-model", default=None,
                   help="registered model id, shipped (the model tenforge ships for this "
                        "CPU), or metaschedule-xgb (default: the best registered model for "
                        "this hardware; with none, the shipped one)")
    p.add_argument("--scheduler", default="gradient", choices=SCHEDULERS,
                   help="task scheduler: gradient (MetaSchedule's), round-robin, gain "
                        "(tenforge's expected gain), dual (gain per task and design space), "
                        "instant (no search: per task rank --population sampled candidates "
                        "with the learned model, measure the top trials/tasks, 2 to 8; the "
                        "rest of --trials by each task's share of the estimated latency)")
    p.add_argument("--flops-share", type=float, default=0.9,
                   help="tune the tasks that carry this share of FLOPs x occurrences "
                        "(1.0: every task, zero-FLOP data movement such as transposes too)")
    p.add_argument("--population", type=positive, default=None,
                   help="evolutionary search population per round (default: 8x the "
                        "candidates a round measures, 4x after a warm start, 64 to 256; "
                        "instant: 256 ranked per task; smaller: faster rounds)")
    p.add_argument("--graph", choices=CHOICES, default=None,
                   help="how the network is prepared before tuning: exported (as torch.export "
                        "gives it), folded (what depends on the weights alone runs once, at "
                        "load; operators after a convolution fuse into it), nhwc (folded, "
                        "convolutions channels-last), nchw8c / nchw16c (folded, channels "
                        "blocked by 8 / 16: one AVX2 / AVX-512 vector), packed8 / packed16 "
                        "(those, and linear layers' weights packed in blocks of columns), "
                        "blocked (nchw8c or nchw16c, this profile's vector). Default: blocked "
                        "on a CPU (1.3x faster than exported on resnet18 and mobilenet_v2 at "
                        "1,000 trials), exported on a GPU")
    p.add_argument("--warm-start", type=non_negative, default=None, metavar="K",
                   help="before the search, measure the learned model's top K of "
                        "--warm-samples ranked candidates per task (as instant does), out of "
                        "--trials, at most half of them: every task has a good schedule "
                        "within minutes and the search starts from them (default 4 with a "
                        "learned model and a searching scheduler, the tuning bench's default "
                        "learned search; 0: none)")
    p.add_argument("--warm-samples", type=positive, default=None, metavar="N",
                   help="with a warm start: sampled candidates the model ranks per task "
                        "(default 128, the bench's; 256 ranks more for networks of few "
                        "tasks)")
    p.add_argument("--hold-top", type=non_negative, default=None, metavar="N",
                   help="before compiling, each heavy task's best is measured again in 2 "
                        "fresh processes, and where it ran over 10%% slower, its N best "
                        "beside it, one replacing it only if over 10%% faster there "
                        "(default 16; 0: no hold). Some schedules keep their speed only in "
                        "some processes: a BERT build ran 35%% over its estimate without it")
    p.add_argument("--rerank-model", default=None, metavar="ID",
                   help="with --scheduler instant or --warm-start, x86 CPUs: a model trained "
                        "on the asm columns re-orders each task's top 32 picks by what LLVM "
                        "made of them (a build each) before they are measured")
    p.add_argument("--trials-per-round", type=positive, default=None, metavar="N",
                   help="candidates measured per turn of a task (default: what gives every "
                        "task two turns of --trials, 4 to 64); with a pre-trained model, 8 "
                        "gives a first estimate over every task sooner and the rest of the "
                        "budget to the heaviest tasks")
    p.add_argument("--batch-size", type=positive, default=1)
    p.add_argument("--input-size", type=positive, default=None,
                   help="zoo networks: image side / sequence length (default: the network's "
                        "default size, `tenforge networks`)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true",
                   help="tune even if nothing changed since the last run")
    p.add_argument("--out", default=None,
                   help="also write the tuned network as a deployable folder (see compile)")
    p.add_argument("--tile-mix", type=float, nargs="?", const=TILE_MIX, default=None,
                   metavar="SHARE",
                   help="with a learned model and a searching scheduler: keep SHARE of each "
                        f"task's measurements (default {TILE_MIX}) outside the innermost tile "
                        "factor it measured most, where a pre-trained model can favour a "
                        "vector width that is not this CPU's fastest. On the Zen 4 it reached "
                        "MetaSchedule's final sooner than the default search on resnet18, "
                        "mobilenet_v2 and resnet50 (medians of 12 cells), not on BERT; on "
                        "8-lane AVX2 code it won one resnet18 seed of two. Default: off; 0: "
                        "off")
    db_option(p)
    p.set_defaults(func=run.cmd_retune)
