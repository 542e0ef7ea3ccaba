"""A dense layer's weight packed in column blocks, tuned side by side with the plain layout.

On the 480 MiB Xeon (two FMA pipes, 195 GFLOPS one-thread peak) BERT's four big matmuls end at
62-67% of the peak under both searches (bench/task_roofline.py, docs/tuning-results.md, session
101), where the same searches put them at 92-97% on the Zen 4 (one 512-bit FMA a cycle). A
tuned BERT there runs level with PyTorch (0.99x). The graph gives MetaSchedule the weight as
W[K, N] (its transpose folded into the weights at load): each step along K jumps a whole row of
N floats (12 KiB at N = 3072), a new page for every row of a tile. A vendor BLAS packs the
weight so a tile is contiguous. This asks whether the same packing lets MetaSchedule's schedules
go faster, for each shape and seed tuning four TE matmuls of the same x[M, K] in one run:

  plain       y[M, N]       = x[M, K] @ W[K, N]                      (what the graph has now)
  packed      y[M, N]       from W packed as (N/b, K, b)             (each tile contiguous)
  packed-out  y[N/b, M, b]  from the packed W, the output blocked too (what a blocked graph
                                                                        would carry between layers)
  packed-out-back  y[M, N]  packed-out's blocks written back to (M, N) in the same function (what
                            a graph gets where the next operator wants the plain layout: the
                            layout transform fused into the matmul's epilogue); the function
                            of the packed8 / packed16 graphs (tasks/blocked_matmul.py)

Round-robin, MetaSchedule's XGB, tenforge's measurement workers: each variant gets the same
trials at the same hours, so their ratio does not carry the host's drift between runs. It
prints each variant's best run (ms, GFLOPS) and its speedup over plain, per seed, then the
median over seeds.

    .venv/bin/python bench/packed_dense.py [--shapes 768x3072,3072x768] [--rows 128] \
        [--block 16] [--trials 160] [--seeds 0,1] [--hardware local-1t] [--work DIR]

A shape is KxN (BERT-base: 768x3072 up, 3072x768 down, 768x2304 QKV, 768x768 out); --rows is
M (the sequence length at batch 1). Nothing is stored; the databases stay in --work.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VARIANTS = ("plain", "packed", "packed-out", "packed-out-back")


def matmul(variant: str, rows: int, k: int, n: int, block: int) -> Any:
    """The TE PrimFunc of one variant (the module's docstring)."""
    from tvm import te

    x = te.placeholder((rows, k), name="x")
    r = te.reduce_axis((0, k), name="k")
    if variant == "plain":
        w = te.placeholder((k, n), name="w")
        y = te.compute((rows, n), lambda i, j: te.sum(x[i, r] * w[r, j], axis=r), name="matmul")
    elif variant == "packed":
        w = te.placeholder((n // block, k, block), name="w")
        y = te.compute((rows, n), lambda i, j: te.sum(x[i, r] * w[j // block, r, j % block],
                                                      axis=r), name="matmul")
    elif variant in ("packed-out", "packed-out-back"):  # what the packed graphs compute
        from tasks.blocked_matmul import blocked_output, matmul_blocked

        w = te.placeholder((n // block, k, block), name="w")
        # packed-out-back: written back to (M, N) in the same function, an epilogue
        compute = matmul_blocked if variant == "packed-out-back" else blocked_output
        y = compute(x, w, "float32")
    else:
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    return te.create_prim_func([x, w, y])


def parse_shapes(text: str, block: int) -> list[tuple[int, int]]:
    """"768x3072,3072x768" -> [(768, 3072), (3072, 768)]; a one-line error for a shape that is
    not KxN of positive integers or whose N is not a multiple of the block."""
    shapes = []
    for part in text.split(","):
        try:
            k, n = (int(v) for v in part.lower().split("x"))
        except ValueError:
            raise SystemExit(f"--shapes: {part!r} is not KxN (e.g. 768x3072)") from None
        if k < 1 or n < 1 or n % block:
            raise SystemExit(f"--shapes: {part!r} needs K, N >= 1 and N a multiple of the block "
                             f"({block})")
        shapes.append((k, n))
    return shapes


def tune_side_by_side(profile: Any, rows: int, k: int, n: int, block: int, trials: int,
                      seed: int, work: Path) -> dict[str, float]:
    """{variant: its best mean run seconds} after `trials` each, tuned in one run."""
    from core.procs import usable_cores
    from core.tvm_env import load_tvm

    tvm = load_tvm(profile.target)
    from tvm.s_tir import meta_schedule as ms

    from tasks.measure import Measurer
    from tasks.ms_backend import ms_builder, ms_runner

    target = tvm.target.Target(profile.target)
    work.mkdir(parents=True, exist_ok=True)
    contexts = [ms.TuneContext(
        mod=tvm.IRModule({"main": matmul(v, rows, k, n, block).with_attr("global_symbol",
                                                                         "main")}),
        target=target, space_generator="post-order-apply", search_strategy="evolutionary",
        task_name=v, num_threads=usable_cores(), rand_state=seed)
        for v in VARIANTS]
    with Measurer(profile) as measurer:
        database = ms.tune_tasks(
            tasks=contexts, task_weights=[1.0] * len(contexts), work_dir=str(work),
            max_trials_global=trials * len(contexts), max_trials_per_task=trials,
            num_trials_per_iter=min(32, trials), builder=ms_builder(measurer),
            runner=ms_runner(measurer), database="json", cost_model="xgb",
            task_scheduler="round-robin")
    best = {}
    for context in contexts:
        top = database.get_top_k(database.commit_workload(context.mod), 1)
        if top:
            runs = [float(s) for s in top[0].run_secs]
            best[context.task_name] = sum(runs) / len(runs)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="768x3072,3072x768", help="KxN[,KxN...]")
    parser.add_argument("--rows", type=int, default=128, help="M: rows of x (default 128)")
    parser.add_argument("--block", type=int, default=16,
                        help="columns a packed block holds (16: one AVX-512 vector of fp32)")
    parser.add_argument("--trials", type=int, default=160, help="measured candidates a variant")
    parser.add_argument("--seeds", default="0", help="comma-separated search seeds")
    parser.add_argument("--hardware", default="local-1t", help="hardware profile (this CPU's)")
    parser.add_argument("--work", default=None, help="where the databases go (default: a "
                                                     "temporary folder)")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.block < 1 or args.trials < 1:
        parser.error("--rows, --block and --trials must be >= 1")
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds: {args.seeds!r} is not comma-separated integers (e.g. 0,1)")
    shapes = parse_shapes(args.shapes, args.block)

    from core.errors import TenforgeError
    from tasks.hardware import check_runnable_here, resolve_profile

    try:  # an unknown profile, or one this machine cannot run: its one line, not a traceback
        profile = resolve_profile(args.hardware)
        check_runnable_here(profile)
    except TenforgeError as exc:
        raise SystemExit(f"--hardware: {exc}") from None
    work = Path(args.work or tempfile.mkdtemp(prefix="packed-dense-"))
    print(f"{profile.name}: M={args.rows}, block {args.block}, {args.trials} trials a variant, "
          f"round-robin with MetaSchedule's XGB; databases in {work}")
    speedups: dict[tuple[int, int, str], list[float]] = {}
    for k, n in shapes:
        flops = 2 * args.rows * k * n
        for seed in seeds:
            started = time.monotonic()
            best = tune_side_by_side(profile, args.rows, k, n, args.block, args.trials, seed,
                                     work / f"{k}x{n}-s{seed}")
            print(f"{k}x{n} seed {seed} ({time.monotonic() - started:.0f} s):")
            for variant in VARIANTS:
                if variant not in best:
                    print(f"  {variant:15s}  no valid run")
                    continue
                ratio = best["plain"] / best[variant] if "plain" in best else None
                if ratio is not None:
                    speedups.setdefault((k, n, variant), []).append(ratio)
                print(f"  {variant:15s}  {best[variant] * 1e3:8.3f} ms  "
                      f"{flops / best[variant] / 1e9:7.1f} GFLOPS"
                      + ("" if ratio is None else f"  {ratio:.2f}x plain"))
    print("median over seeds, speedup over plain (min-max):")
    for (k, n, variant), ratios in speedups.items():
        if variant != "plain":
            print(f"  {k}x{n} {variant:15s} {statistics.median(ratios):.2f}x "
                  f"({min(ratios):.2f}-{max(ratios):.2f}) over {len(ratios)} seed(s)")


if __name__ == "__main__":
    main()
