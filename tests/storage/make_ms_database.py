"""Write a MetaSchedule JSON database with TVM's own tune_tir (a 64x64 matmul, a few trials).

Run as a script: python tests/storage/make_ms_database.py WORK_DIR [TRIALS]

tune_tir, its search and its JSONDatabase are MetaSchedule's; builds and runs go through
tenforge's workers (tasks.ms_backend), which import only the intrinsics the target needs
(MetaSchedule's LocalBuilder pays a ~34 s import in every fresh pool worker).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()


def main(work_dir: str, trials: int) -> None:
    from core.tvm_env import load_tvm
    from tasks.hardware import detect_local_profiles
    from tasks.measure import Measurer
    from tasks.ms_backend import ms_builder, ms_runner

    tvm = load_tvm("llvm")
    from tvm import te
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    a = te.placeholder((64, 64), name="A")
    b = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), "k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    profile = detect_local_profiles()[-1]  # 1 thread
    with Measurer(profile, build_workers=1) as measurer:
        ms.tune_tir(mod, Target({"kind": "llvm", "num-cores": 1}), work_dir,
                    max_trials_global=trials, num_trials_per_iter=trials,
                    builder=ms_builder(measurer), runner=ms_runner(measurer))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8)
