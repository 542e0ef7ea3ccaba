"""How fast can candidates be measured here? Three paths on the same candidates, in one run.

  (a) limit      : one process, build + export + load + time each candidate back to back (the
                   physical limit of one core; imports and task preparation excluded)
  (b) metaschedule: MetaSchedule's LocalBuilder + LocalRunner as a user configures them, cache
                   flush on, batches of --batch: with the builder's defaults (on the first
                   --ms-default-candidates only: here every build times out, see below), and
                   with timeout_sec=120, what a user tries next
  (c) tenforge   : tasks.measure.Measurer with 2 build workers (cold: includes worker start;
                   warm: the same Measurer measuring the same candidates again)

Prints candidates per minute for each and the ratios (c)/(a), (c)/(b). Machines are noisy:
read the ratios, not the absolute numbers. Also prints the measurement quality: the median
coefficient of variation of one candidate's mean latency over --repeats separate measurements.

    .venv/bin/python bench/collect_throughput.py [--candidates 32] [--batch 16] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._data import scratch_dir  # noqa: E402
from tasks.hardware import detect_local_profiles  # noqa: E402
from tasks.measure import MeasureJob, Measurer  # noqa: E402
from tasks.measure.linking import export_candidate  # noqa: E402
from tasks.sampling import sample_candidates  # noqa: E402
from tasks.workloads import extract_network_tasks  # noqa: E402


def make_jobs(target: dict, count: int) -> list[MeasureJob]:
    """`count` candidates spread over ResNet-18's convolution and dense tasks (batch 1, 224)."""
    tasks = [t for t in extract_network_tasks("resnet18", 1, 224, target) if t.flops > 1e6]
    per_task = max(1, -(-count // len(tasks)))
    jobs: list[MeasureJob] = []
    for task in tasks:
        cands, _ = sample_candidates(task.mod_json, target, per_task, seed=7)
        jobs += [MeasureJob(len(jobs) + i, task.workload_hash, task.mod_json, c.trace_json,
                            task.flops) for i, c in enumerate(cands)]
    return jobs[:count]


def limit_path(profile, jobs: list[MeasureJob]) -> dict:
    """(a): everything in this process, one candidate after another."""
    import json

    from core.tvm_env import load_tvm
    from tasks.measure.worker import _random_args

    tvm = load_tvm("llvm")
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    os.environ["TVM_NUM_THREADS"] = str(profile.num_threads)
    target, dev, settings = Target(profile.target), tvm.cpu(0), profile.measure
    inputs = {}
    for job in jobs:  # task preparation is excluded from the limit
        if job.workload_hash not in inputs:
            mod = tvm.ir.load_json(job.mod_json)
            inputs[job.workload_hash] = _random_args(
                ms.arg_info.ArgInfo.from_prim_func(mod["main"]), seed=0)
    work = str(scratch_dir("collect-throughput"))
    build_s = run_s = 0.0
    for job in jobs:
        start = time.perf_counter()
        sch = s_tir.Schedule(tvm.ir.load_json(job.mod_json))
        s_tir.schedule.Trace.apply_json_to_schedule(json.loads(job.trace_json), sch)
        path = os.path.join(work, f"{job.candidate_id}.so")
        export_candidate(tvm.compile(sch.mod, target=target), path)  # as the workers link
        mid = time.perf_counter()
        lib = tvm.runtime.load_module(path)
        args = [tvm.runtime.tensor(a, dev) for a in inputs[job.workload_hash]]
        lib["main"](*args)  # warm-up, as the other paths do
        lib.time_evaluator("main", dev, number=1, repeat=settings.repeats_for(job.flops),
                           f_preproc="cache_flush_cpu_non_first_arg")(*args)
        end = time.perf_counter()
        build_s += mid - start
        run_s += end - mid
    return {"seconds": build_s + run_s, "ok": len(jobs), "errors": 0,
            "detail": f"build {build_s:.1f} s + run {run_s:.1f} s"}


def metaschedule_path(profile, jobs: list[MeasureJob], batch: int,
                      build_timeout_s: float | None) -> dict:
    """(b): LocalBuilder/LocalRunner as tune_tir would use them (builder timeout: default or
    `build_timeout_s`)."""
    import json

    from core.tvm_env import load_tvm

    tvm = load_tvm("llvm")
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    target = Target(profile.target)
    builder = (ms.builder.LocalBuilder() if build_timeout_s is None
               else ms.builder.LocalBuilder(timeout_sec=build_timeout_s))
    runner = ms.runner.LocalRunner(evaluator_config=ms.runner.EvaluatorConfig(
        number=1, repeat=8, enable_cpu_cache_flush=True))
    ok = errors = 0
    first_error = ""
    start = time.perf_counter()
    for begin in range(0, len(jobs), batch):
        chunk = jobs[begin:begin + batch]
        mods = []
        for job in chunk:
            sch = s_tir.Schedule(tvm.ir.load_json(job.mod_json))
            s_tir.schedule.Trace.apply_json_to_schedule(json.loads(job.trace_json), sch)
            mods.append(sch.mod)
        built = builder.build([ms.builder.BuilderInput(m, target) for m in mods])
        run_inputs, index = [], []
        for i, (mod, result) in enumerate(zip(mods, built)):
            if result.error_msg:
                errors += 1
                first_error = first_error or result.error_msg.strip().splitlines()[0]
                continue
            run_inputs.append(ms.runner.RunnerInput(  # device type "cpu": "llvm" is refused
                result.artifact_path, "cpu", ms.arg_info.ArgInfo.from_prim_func(mod["main"])))
            index.append(i)
        for future in runner.run(run_inputs):
            result = future.result()
            if result.error_msg:
                errors += 1
                first_error = first_error or result.error_msg.strip().splitlines()[0]
            else:
                ok += 1
    return {"seconds": time.perf_counter() - start, "ok": ok, "errors": errors,
            "detail": f"first error: {first_error[:80]}" if first_error else ""}


def tenforge_path(profile, jobs: list[MeasureJob], batch: int,
                  repeats: int) -> tuple[dict, dict, float]:
    """(c): cold (workers start inside the timing) and warm; then quality over `repeats`."""
    means: dict[int, list[float]] = {}
    rows = []
    start = time.perf_counter()
    with Measurer(profile, build_workers=2) as measurer:
        for round_ in range(max(2, repeats)):
            round_start = time.perf_counter()
            results = []
            for begin in range(0, len(jobs), batch):
                results += measurer.measure(jobs[begin:begin + batch])
            seconds = time.perf_counter() - (start if round_ == 0 else round_start)
            good = [r for r in results if r.error_kind is None]
            for r in good:
                means.setdefault(r.candidate_id, []).append(float(np.mean(r.run_secs)))
            rows.append({"seconds": seconds, "ok": len(good), "errors": len(results) - len(good),
                         "detail": ""})
    cvs = [np.std(v, ddof=1) / np.mean(v) for v in means.values() if len(v) >= 2]
    return rows[0], rows[1], float(np.median(cvs)) if cvs else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=32)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3,
                        help="separate measurements per candidate for the CV figure")
    parser.add_argument("--skip-metaschedule", action="store_true")
    parser.add_argument("--ms-default-candidates", type=int, default=4,
                        help="candidates for MetaSchedule's default builder (each may cost 30 s)")
    args = parser.parse_args()

    profile = detect_local_profiles()[0]
    jobs = make_jobs(profile.target, args.candidates)
    print(f"profile {profile.name}; {len(jobs)} candidates of ResNet-18 tasks; batch "
          f"{args.batch}; TenSet repeats by FLOPs, 1 run per repeat, cache flush; {os.cpu_count()} "
          "cores\n")
    results = {"(a) limit, in-process": limit_path(profile, jobs)}
    cold, warm, cv = tenforge_path(profile, jobs, args.batch, args.repeats)
    results["(c) tenforge, cold"] = cold
    results["(c) tenforge, warm"] = warm
    if not args.skip_metaschedule:
        results["(b) metaschedule, defaults"] = metaschedule_path(
            profile, jobs[:args.ms_default_candidates], args.batch, None)
        results["(b) metaschedule, 120 s"] = metaschedule_path(profile, jobs, args.batch, 120.0)

    print(f"{'path':26s} {'ok':>4s} {'err':>4s} {'seconds':>8s} {'cand/min':>9s}  notes")
    for name, row in results.items():
        rate = 60.0 * row["ok"] / row["seconds"] if row["seconds"] else 0.0
        row["rate"] = rate
        print(f"{name:26s} {row['ok']:4d} {row['errors']:4d} {row['seconds']:8.1f} {rate:9.1f}  "
              f"{row['detail']}")
    limit = results["(a) limit, in-process"]["rate"]
    print()
    for label in ("(c) tenforge, cold", "(c) tenforge, warm"):
        line = f"{label}: (c)/(a) = {results[label]['rate'] / limit:.2f}"
        for ms_label in ("(b) metaschedule, defaults", "(b) metaschedule, 120 s"):
            ms_row = results.get(ms_label)
            if ms_row and ms_row["rate"] > 0:
                line += f"; vs {ms_label[4:]}: {results[label]['rate'] / ms_row['rate']:.2f}"
            elif ms_row:
                line += f"; vs {ms_label[4:]}: inf (it measured nothing)"
        print(line)
    print(f"quality: median CV of a candidate's mean latency over {max(2, args.repeats)} "
          f"separate measurements = {100 * cv:.1f}%")


if __name__ == "__main__":
    main()
