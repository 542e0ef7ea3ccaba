"""How fast tasks.sampling draws and featurizes candidates, against the way it used to.

A warm start, instant tuning and collection all rank candidates sampled from MetaSchedule's
design space; on a one-core machine that sampling was the warm start's cost (~7 s per
convolution at 256 candidates, docs/tuning-results.md). This times, side by side on the same
tasks, alternating which goes first:

- `now`: tasks.sampling.sample_candidates (one fresh schedule copied and seeded per attempt;
  trace text through TVM's C++ JSON graph, core.tvm_env.trace_json);
- `before`: the same loop with a schedule constructed per attempt (Schedule(mod, seed=...))
  and the text from Trace.as_json converted element by element (json.dumps(to_plain_json)).

and checks both give the same candidates (hashes, trace text, features). Tasks: the --top
heaviest (FLOPs x occurrences) of each network. Prints seconds per task, per path and seed,
and the ratio (median over seeds).

    .venv/bin/python bench/sampling_speed.py [--networks mobilenet_v2:nchw16c,bert:folded]
        [--top 4] [--samples 256] [--seeds 0,1,2] [--hardware local-1t]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.tvm_env import load_tvm, to_plain_json  # noqa: E402
from tasks.hardware import resolve_profile  # noqa: E402
from tasks.sampling import attempt_seed, sample_candidates  # noqa: E402
from tasks.workloads import import_to_relax  # noqa: E402


def sample_before(mod_json: str, target: dict, count: int, seed: int) -> list[tuple]:
    """The loop as it was (one construction per attempt, trace text via as_json)."""
    tvm = load_tvm(target)
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.utils import shash2hex
    from tvm.target import Target

    mod = tvm.ir.load_json(mod_json)
    context = ms.TuneContext(mod, target=Target(target), space_generator="post-order-apply",
                             task_name="sample", rand_state=attempt_seed(seed, 0), num_threads=1)
    spaces = [s.trace.simplified(remove_postproc=True) for s in context.generate_design_space()]
    postprocs = context.space_generator.postprocs
    derived: set[str] = set()
    found = []
    attempt = since_new = 0
    while len(derived) < count and since_new < 64:
        attempt += 1
        since_new += 1
        sch = s_tir.Schedule(mod, seed=attempt_seed(seed, attempt))
        try:
            spaces[attempt % len(spaces)].apply_to_schedule(sch, remove_postproc=True,
                                                            decision_provider=lambda *_: None)
            sch.enter_postproc()
            valid = all(p.apply(sch) for p in postprocs)
        except Exception:  # noqa: BLE001 - an invalid sample
            valid = False
        if not valid:
            continue
        schedule_hash = shash2hex(sch.mod)
        if schedule_hash in derived:
            continue
        derived.add(schedule_hash)
        since_new = 0
        found.append((schedule_hash, sch))
    features = ms.feature_extractor.PerStoreFeature(extract_workload=False).extract_from(
        context, [ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"]))
                  for _, sch in found])
    return [(h, json.dumps(to_plain_json(sch.trace.as_json(remove_postproc=False))),
             f.numpy().astype(np.float32))
            for (h, sch), f in zip(found, features)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", default="mobilenet_v2:nchw16c,bert:folded",
                        help="NETWORK:GRAPH, comma-separated")
    parser.add_argument("--top", type=int, default=4, help="heaviest tasks per network")
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--hardware", default="local-1t")
    args = parser.parse_args()
    profile = resolve_profile(args.hardware)
    tvm = load_tvm(profile.target)
    from tvm.s_tir import analysis
    from tvm.s_tir import meta_schedule as ms

    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"{profile.name}: {args.samples} candidates per task, seeds {seeds}; seconds per task "
          "(before / now, the faster path run first alternates)")
    ratios = []
    for spec in args.networks.split(","):
        network, _, graph = spec.partition(":")
        relax_mod = import_to_relax(network, 1, None, graph or "exported")
        tasks = sorted(ms.relax_integration.extract_tasks(relax_mod, profile.tvm_target()),
                       key=lambda t: -float(analysis.estimate_tir_flops(t.dispatched[0]))
                       * int(t.weight))[:args.top]
        for task in tasks:
            mod_json = tvm.ir.save_json(task.dispatched[0])
            cells = []
            for k, seed in enumerate(seeds):
                timed = {}
                for path in (("before", "now") if k % 2 == 0 else ("now", "before")):
                    started = time.perf_counter()
                    if path == "before":
                        out_before = sample_before(mod_json, profile.target, args.samples, seed)
                    else:
                        out_now, _ = sample_candidates(mod_json, profile.target, args.samples,
                                                       seed)
                    timed[path] = time.perf_counter() - started
                same = ([(h, t) for h, t, _ in out_before]
                        == [(c.schedule_hash, c.trace_json) for c in out_now]
                        and all(np.array_equal(f, c.features)
                                for (_, _, f), c in zip(out_before, out_now)))
                if not same:
                    raise SystemExit(f"{task.task_name} seed {seed}: the two paths sampled "
                                     "different candidates")
                cells.append(f"s{seed} {timed['before']:.2f}/{timed['now']:.2f}")
                ratios.append(timed["before"] / timed["now"])
            print(f"  {network}:{graph} {task.task_name} ({len(out_now)} sampled, identical): "
                  + ", ".join(cells), flush=True)
    print(f"before/now time ratio: median {statistics.median(ratios):.2f}x "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}) over {len(ratios)} task-seeds")


if __name__ == "__main__":
    main()
