"""A candidate's build with TVM's g++ link against ld directly (tasks.measure.linking).

A measuring worker builds each candidate as the collect path and every tuning search do: apply
the trace, `tvm.compile`, then `export_library` (write the object file, link the shared
library). This samples --candidates candidates of the --top heaviest tasks (FLOPs x
occurrences) of each network, compiles each once, then exports each with both links in turn,
alternating which goes first, for --rounds rounds. Per task it prints the milliseconds a
candidate spends compiling and exporting (the median over rounds of the mean over candidates),
and the whole build's ratio, g++ / ld. Both libraries of every candidate are loaded and run on
the same random inputs: their outputs must be identical (else it stops), and their run times are
printed side by side (median of 20 runs each), since the object file is the same.

    .venv/bin/python bench/build_speed.py [--networks mobilenet_v2:nchw16c,resnet18:nchw16c]
        [--top 3] [--candidates 8] [--rounds 3] [--hardware local-1t]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.tvm_env import load_tvm  # noqa: E402
from tasks.hardware import resolve_profile  # noqa: E402
from tasks.measure.linking import ld_and_libgcc, link_shared  # noqa: E402
from tasks.sampling import apply_trace, sample_candidates  # noqa: E402
from tasks.workloads import import_to_relax  # noqa: E402


def _run(tvm, path: str, args: list[np.ndarray]) -> tuple[np.ndarray, float]:
    """The library's outputs on `args` (the last argument) and its median run time, ms."""
    dev = tvm.cpu(0)
    module = tvm.runtime.load_module(path)
    tensors = [tvm.runtime.tensor(a, dev) for a in args]
    module["main"](*tensors)
    timed = module.time_evaluator("main", dev, number=1, repeat=20)(*tensors)
    return tensors[-1].numpy(), statistics.median(timed.results) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", default="mobilenet_v2:nchw16c,resnet18:nchw16c",
                        help="NETWORK:GRAPH, comma-separated")
    parser.add_argument("--top", type=int, default=3, help="heaviest tasks per network")
    parser.add_argument("--candidates", type=int, default=8, help="sampled per task")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hardware", default="local-1t")
    args = parser.parse_args()
    if ld_and_libgcc() is None:
        raise SystemExit("build_speed: no ld or no libgcc.a on this machine: the measuring "
                         "workers use TVM's own link here, there is nothing to compare")
    profile = resolve_profile(args.hardware)
    tvm = load_tvm(profile.target)
    from tvm.s_tir import analysis
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo
    from tvm.support import cc
    from tvm.target import Target

    target = Target(profile.target)
    work = tempfile.mkdtemp(prefix="build-speed-")
    print(f"{profile.name}: {args.candidates} candidates per task, {args.rounds} rounds; "
          "ms per candidate (median over rounds); run times: median of 20 runs, g++ / ld")
    ratios, saved = [], []
    for spec in args.networks.split(","):
        network, _, graph = spec.partition(":")
        tasks = ms.relax_integration.extract_tasks(
            import_to_relax(network, 1, None, graph or "exported"), profile.tvm_target())
        tasks = sorted(tasks, key=lambda t: -float(analysis.estimate_tir_flops(t.dispatched[0]))
                       * int(t.weight))[:args.top]
        for task in tasks:
            mod_json = tvm.ir.save_json(task.dispatched[0])
            candidates, _ = sample_candidates(mod_json, profile.target, args.candidates, seed=0)
            compiled, compile_s = [], []
            for c in candidates:
                started = time.perf_counter()
                compiled.append(tvm.compile(apply_trace(mod_json, c.trace_json), target=target))
                compile_s.append(time.perf_counter() - started)
            export = {"g++": [], "ld": []}
            for r in range(args.rounds):
                for way in (("g++", "ld") if r % 2 == 0 else ("ld", "g++")):
                    started = time.perf_counter()
                    for i, lib in enumerate(compiled):
                        path = f"{work}/{task.task_name}-{i}-{way}-{r}.so"
                        lib.export_library(path, fcompile=cc.create_shared if way == "g++"
                                           else link_shared)
                    export[way].append((time.perf_counter() - started) / len(compiled))
            rng = np.random.default_rng(0)
            inputs = [rng.uniform(-1, 1, [int(d) for d in a.shape]).astype(str(a.dtype))
                      for a in ArgInfo.from_prim_func(task.dispatched[0]["main"])]
            runs = {"g++": [], "ld": []}
            for i in range(len(compiled)):
                outs = {}
                for way in runs:
                    outs[way], ms_run = _run(tvm, f"{work}/{task.task_name}-{i}-{way}-0.so",
                                             [a.copy() for a in inputs])
                    runs[way].append(ms_run)
                if not np.array_equal(outs["g++"], outs["ld"]):
                    raise SystemExit(f"{task.task_name} candidate {i}: the two libraries "
                                     "computed different outputs")
            compile_ms = statistics.mean(compile_s) * 1e3
            gpp, ld = (statistics.median(export[w]) * 1e3 for w in ("g++", "ld"))
            ratio = (compile_ms + gpp) / (compile_ms + ld)
            ratios.append(ratio)
            saved.append(gpp - ld)
            print(f"  {network}:{graph} {task.task_name} ({len(compiled)}, identical outputs): "
                  f"compile {compile_ms:.0f}, export g++ {gpp:.0f} / ld {ld:.0f}; build "
                  f"{ratio:.2f}x; run {statistics.median(runs['g++']):.3f} / "
                  f"{statistics.median(runs['ld']):.3f} ms", flush=True)
    print(f"build time g++ / ld: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}, "
          f"max {max(ratios):.2f}) over {len(ratios)} tasks; export saves "
          f"{statistics.median(saved):.0f} ms a candidate (median)")


if __name__ == "__main__":
    main()
