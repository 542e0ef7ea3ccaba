"""Write a MetaSchedule JSON database with TVM's own tune_tir (a 64x64 matmul, a few trials).

Run as a script (a fresh process: tune_tir imports every tensor intrinsic, ~34 s):
    python tests/storage/make_ms_database.py WORK_DIR [TRIALS]
"""

import sys

import tvm
from tvm import te
from tvm.s_tir import meta_schedule as ms
from tvm.target import Target


def main(work_dir: str, trials: int) -> None:
    a = te.placeholder((64, 64), name="A")
    b = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), "k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    ms.tune_tir(mod, Target({"kind": "llvm", "num-cores": 1}), work_dir,
                max_trials_global=trials, num_trials_per_iter=trials,
                # The first build in a fresh worker imports all tensor intrinsics (~34 s).
                builder=ms.builder.LocalBuilder(max_workers=1, timeout_sec=180))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8)
