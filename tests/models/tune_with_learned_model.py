"""Run MetaSchedule's tune_tir on a 64x64 matmul with a tenforge model as the cost model, and
print what the adapter did as JSON (a fresh process: tune_tir imports every tensor intrinsic).

    python tests/models/tune_with_learned_model.py WORK_DIR MODEL_PATH TRIALS REFIT_EVERY \
        [ONLINE [MIX [steer]]]
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()


def main(work_dir: str, model_path: str, trials: int, refit_every: int,
         online: int | None = None, mix: float | None = None, steer: bool = False) -> None:
    from models.ms_adapter import learned_cost_model
    from tasks.hardware import detect_local_profiles
    from tasks.measure import Measurer
    from tasks.ms_backend import ms_builder, ms_runner

    profile = detect_local_profiles()[-1]  # 1 thread
    cost_model = learned_cost_model(model_path, profile, refit_every=refit_every, online=online,
                                    mix=mix, steer=steer)
    import tvm
    from tvm import te
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    a = te.placeholder((64, 64), name="A")
    b = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), "k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    # Builds and runs on tenforge's workers (tasks.ms_backend), as retune does: MetaSchedule's
    # LocalBuilder pays a ~34 s intrinsics import per fresh pool worker.
    with Measurer(profile, build_workers=1) as measurer:
        database = ms.tune_tir(mod, Target(profile.target), work_dir, max_trials_global=trials,
                               num_trials_per_iter=min(trials, 4), cost_model=cost_model,
                               # a small population keeps this a CI-sized run (default 512)
                               strategy=ms.search_strategy.EvolutionarySearch(
                                   population_size=32, init_min_unmeasured=16,
                                   genetic_num_iters=2),
                               builder=ms_builder(measurer), runner=ms_runner(measurer))
    logic = cost_model.logic
    print(json.dumps({"predictions": logic.predictions, "refits": logic.refits,
                      "feature_hits": cost_model.feature_cache.hits,
                      "online": logic.online_model is not None,
                      # a mix's tile groups of what was measured (models/tile_mix.py)
                      "groups": {str(g): n for counts in logic.groups_seen.values()
                                 for g, n in counts.items()},
                      # and, steering, each group's fastest (tile_mix.steered)
                      "bests": {str(g): t for bests in logic.group_bests.values()
                                for g, t in bests.items()},
                      "records": len(database.get_all_tuning_records())}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
         int(sys.argv[5]) if len(sys.argv) > 5 else None,
         float(sys.argv[6]) if len(sys.argv) > 6 else None,
         len(sys.argv) > 7 and sys.argv[7] == "steer")
