"""Where a tuned network's end-to-end time goes, function by function, for several databases
side by side, and how many subnormal floats each function writes.

Why: a tuning-matrix cell's end-to-end time is usually within a few % of its estimate (the
sum of its tasks' best measured times), but on the Zen 5 two BERT cells of nine ran 35% above
theirs, timed twice in fresh processes (docs/tuning-results.md, forty-ninth session). The
estimate times each task alone on uniform random inputs; the network feeds each function what
the one before wrote. This bench times every call inside the network (the Relax VM's
instrument hook, one perf_counter pair per call) and, in one extra run, counts the subnormal
values in each call's output: arithmetic on subnormals can be far slower than on normal floats,
and which values underflow depends on each function's code (a vectorized exp and a scalar one
round differently).

    taskset -c 0 .venv/bin/python bench/network_functions.py --network bert --graph nchw16c \\
        --database DIR[,DIR...] [--hardware local-1t] [--runs 10] [--weights random|model] \\
        [--flush-denormals]

`--weights random` feeds every input and weight uniform(-1, 1) with seed 0, as the matrix's
end-to-end timing does (tasks/measure/worker.py); `model` feeds the network's own initialized
weights and that random input. `--flush-denormals` sets the thread's flush-to-zero and
denormals-are-zero modes (torch.set_flush_denormal) before compiling and running: if a
database is slow only without them, subnormals are what slow it. Builds and runs happen in
this process, one database after another, each with the profile's thread count.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._ms_databases import database_folders  # noqa: E402

TINY = float(np.finfo(np.float32).tiny)  # below this (and not 0) a float32 is subnormal


def subnormals(tensor: Any) -> int:
    """Subnormal values in a float32 tensor (0 for other dtypes)."""
    if str(tensor.dtype) != "float32":
        return 0
    values = np.abs(tensor.numpy())
    return int(np.count_nonzero((values > 0) & (values < TINY)))


class CallClock:
    """The Relax VM's instrument: wall time per called function and, when `census` is on,
    the subnormal values each call's output holds (destination-passing: the last argument)."""

    def __init__(self, functions: set[str]) -> None:
        self.functions = functions
        self.seconds: dict[str, list[float]] = {}  # per function, its total of each run
        self.run: dict[str, float] = {}
        self.census = False
        self.tiny: dict[str, int] = {}
        self._started = 0.0

    def __call__(self, func: Any, symbol: str, before: bool, ret: Any, *args: Any) -> int:
        if symbol not in self.functions:
            return 0
        if before:
            self._started = time.perf_counter()
            return 0
        self.run[symbol] = self.run.get(symbol, 0.0) + time.perf_counter() - self._started
        if self.census and args and hasattr(args[-1], "dtype"):
            self.tiny[symbol] = self.tiny.get(symbol, 0) + subnormals(args[-1])
        return 0

    def end_run(self) -> None:
        for symbol, seconds in self.run.items():
            self.seconds.setdefault(symbol, []).append(seconds)
        self.run = {}


def profile_database(tvm: Any, mod: Any, arrays: list[np.ndarray], database_dir: str,
                     target: Any, runs: int) -> dict[str, Any]:
    """Compile `mod` with `database_dir`'s schedules; time `runs` runs end to end without the
    instrument, then `runs` with it; one more run counts subnormal outputs."""
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    from tasks.measure.network import compile_network

    database = ms.database.JSONDatabase(work_dir=database_dir, allow_missing=False)
    executable, applied = compile_network(tvm, mod, database, target)
    functions = {gv.name_hint for gv, f in applied.functions.items()
                 if not isinstance(f, relax.Function)}
    dev = tvm.cpu(0)
    vm = relax.VirtualMachine(executable, dev)
    tensors = [tvm.runtime.tensor(a, dev) for a in arrays]
    for _ in range(3):
        vm["main"](*tensors)
    plain = []
    for _ in range(runs):
        started = time.perf_counter()
        vm["main"](*tensors)
        plain.append(time.perf_counter() - started)
    clock = CallClock(functions)
    vm.set_instrument(clock)
    for _ in range(runs):
        vm["main"](*tensors)
        clock.end_run()
    clock.census = True
    vm["main"](*tensors)
    return {"e2e_ms": statistics.median(plain) * 1e3,
            "ms": {s: statistics.median(v) * 1e3 for s, v in clock.seconds.items()},
            "tiny": clock.tiny}


def inputs_for(mod: Any, weights: list[np.ndarray], which: str) -> list[np.ndarray]:
    """`main`'s arguments: uniform(-1, 1) floats (integers 0) with seed 0 for all of them, as
    the matrix times networks, or that for the inputs and the network's own weights."""
    rng = np.random.default_rng(0)
    arrays = []
    for param in mod["main"].params:
        shape, dtype = [int(d) for d in param.ty.shape], str(param.ty.dtype)
        arrays.append(rng.uniform(-1.0, 1.0, shape).astype(dtype) if dtype.startswith("float")
                      else np.zeros(shape, dtype=dtype))
    if which == "model":
        arrays[len(arrays) - len(weights):] = [np.asarray(w) for w in weights]
    return arrays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", required=True)
    parser.add_argument("--graph", default="exported")
    parser.add_argument("--database", required=True, help="comma-separated database folders")
    parser.add_argument("--hardware", default="local-1t")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--weights", choices=("random", "model"), default="random")
    parser.add_argument("--flush-denormals", action="store_true")
    parser.add_argument("--top", type=int, default=15, help="functions listed, slowest first")
    args = parser.parse_args()
    if args.runs < 1:
        raise SystemExit(f"--runs {args.runs}: time at least 1 run")
    folders = database_folders(args.database)

    from core.tvm_env import load_tvm
    from tasks.hardware import resolve_profile
    from tasks.workloads import import_with_weights

    profile = resolve_profile(args.hardware)
    # read when TVM's thread pool starts (the first run); with one thread the calling thread
    # runs every kernel, so the flush mode set below applies to them
    os.environ["TVM_NUM_THREADS"] = str(profile.num_threads)
    tvm = load_tvm(profile.target)
    from tvm.target import Target

    if args.flush_denormals:
        import torch

        if not torch.set_flush_denormal(True):
            raise SystemExit("--flush-denormals: this CPU has no flush-to-zero mode torch "
                             "can set")
    mod, weights, _ = import_with_weights(args.network, 1, None, args.graph)
    arrays = inputs_for(mod, weights, args.weights)
    print(f"{args.network} ({args.graph}) on {profile.name}, {profile.num_threads} thread(s), "
          f"weights {args.weights}, flush-to-zero {'on' if args.flush_denormals else 'off'}; "
          f"median of {args.runs} runs each")
    results = [profile_database(tvm, mod, arrays, f, Target(profile.target), args.runs)
               for f in folders]
    names = [Path(f).name for f in folders]
    for name, result in zip(names, results):
        print(f"  {name}: end to end {result['e2e_ms']:.2f} ms, instrumented calls summed "
              f"{sum(result['ms'].values()):.2f} ms")
    symbols = sorted(set().union(*(r["ms"] for r in results)),
                     key=lambda s: -max(r["ms"].get(s, 0.0) for r in results))
    print("\nfunction" + "".join(f" | {i}: ms, subnormals out" for i in range(len(results))))
    for symbol in symbols[:args.top]:
        cells = "".join(f" | {r['ms'].get(symbol, 0.0):8.3f} {r['tiny'].get(symbol, 0):>10}"
                        for r in results)
        print(f"{symbol[:60]:60}{cells}")
    print("(columns: " + ", ".join(f"{i} = {n}" for i, n in enumerate(names)) + ")")


if __name__ == "__main__":
    main()
