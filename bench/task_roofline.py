"""How close tuned tasks run to this core's fp32 peak: each task's best GFLOPS in MetaSchedule
tuning databases, against an FMA loop and PyTorch's sgemm, both measured here on one thread.

Two searches that both end near the roofline race for the last few percent, and a speedup
"to the other's final latency" then hangs on noise of that size. This says how much headroom
was left: per task (heaviest first), FLOPs / the fastest valid run, as a share of the peak.

    taskset -c 0 .venv/bin/python bench/task_roofline.py DB[,DB...] [DB[,DB...] ...] \
        [--min-mflops 50] [--top 15]

Each argument is a group (one variant's seeds, say); a task's GFLOPS in a group is the median
over its databases. Tasks are matched across databases by their shapes, as bench/task_bests.py
matches them. Two references, measured on one thread: the peak, a loop of independent vector
multiply-adds compiled here (`cc -O3 -march=native`: the widest vectors this CPU has, enough
chains to keep its FMA pipes full), which nothing can beat; and torch.mm of two 2048 x 2048
fp32 matrices, what a vendor BLAS gets. Without a C compiler the sgemm is the reference. Run it
pinned, with nothing else running; the summary counts only tasks of at least --min-mflops
MFLOPs (where the time goes), each once. FLOPs are TVM's estimate_tir_flops, which counts fused
element-wise work too: a small fused task (a GELU, a softmax) can read above 100%.
"""

from __future__ import annotations

import argparse
import ctypes
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.task_bests import check_database_folders, task_records

SGEMM_SIZE = 2048
SGEMM_REPEATS = 10


def sgemm_gflops(size: int = SGEMM_SIZE, repeats: int = SGEMM_REPEATS) -> float:
    """The best of `repeats` one-thread fp32 matmuls of two size x size matrices, in GFLOPS."""
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)  # warm-up: page in, pick the kernel
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 / best / 1e9


# CHAINS independent vector multiply-adds a step: enough in flight to cover the FMA latency on
# every pipe, in the widest registers there are, without spilling them (AVX-512: 16 of 32 zmm;
# AVX2: 10 of 16 ymm; SSE or NEON: 12 of 16 or more), so the loop runs at the core's FMA
# throughput. A vector wider than the registers would be split and spill.
_FMA_LOOP = r"""
#include <stdint.h>
#if defined(__AVX512F__)
#define BYTES 64
#define CHAINS 16
#elif defined(__AVX__)
#define BYTES 32
#define CHAINS 10
#else
#define BYTES 16
#define CHAINS 12
#endif
#define LANES (BYTES / 4)
typedef float vec __attribute__((vector_size(BYTES)));
int flops_per_step(void) { return 2 * LANES * CHAINS; }
float fma_loop(int64_t steps) {
    vec acc[CHAINS], mul, add;
    for (int i = 0; i < LANES; i++) { mul[i] = 0.999999f; add[i] = 1e-7f; }
    for (int c = 0; c < CHAINS; c++)
        for (int i = 0; i < LANES; i++) acc[c][i] = (float)(c + i);
    for (int64_t s = 0; s < steps; s++)
        for (int c = 0; c < CHAINS; c++) acc[c] = acc[c] * mul + add;
    float sum = 0.0f;  /* returned, so the loop is not optimized away */
    for (int c = 0; c < CHAINS; c++)
        for (int i = 0; i < LANES; i++) sum += acc[c][i];
    return sum;
}
"""


def fma_peak_gflops(steps: int = 50_000_000, repeats: int = 5) -> float | None:
    """The best of `repeats` runs of the FMA loop on this thread, in GFLOPS; None where no C
    compiler is installed or it cannot build the loop for this CPU (no -march=native)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        source, library = Path(folder) / "fma.c", Path(folder) / "fma.so"
        source.write_text(_FMA_LOOP)
        built = subprocess.run([compiler, "-O3", "-march=native", "-ffp-contract=fast",
                                "-shared", "-fPIC", "-o", str(library), str(source)],
                               check=False, capture_output=True)
        if built.returncode != 0:
            return None
        loop = ctypes.CDLL(str(library))  # mapped: the file may go with the folder
    loop.fma_loop.argtypes, loop.fma_loop.restype = [ctypes.c_int64], ctypes.c_float
    per_step = loop.flops_per_step()
    loop.fma_loop(steps // 10)  # warm-up: let the clock settle
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        loop.fma_loop(steps)
        best = min(best, time.perf_counter() - start)
    return steps * per_step / best / 1e9


def task_gflops(folder: str) -> dict[tuple, tuple[float, float]]:
    """{task shape key: (FLOPs, GFLOPS of its fastest valid run)} of one database."""
    from tvm.s_tir import analysis

    rates = {}
    for key, (mod, runs) in task_records(folder).items():
        flops = float(analysis.estimate_tir_flops(mod))
        rates[key] = (flops, flops / min(runs) / 1e9)
    return rates


def group_gflops(folders: list[str]) -> dict[tuple, tuple[float, float]]:
    """The tasks every database of a group has: (FLOPs, median GFLOPS over the databases)."""
    each = [task_gflops(folder) for folder in folders]
    common = set.intersection(*(set(tasks) for tasks in each))
    return {key: (each[0][key][0], statistics.median(tasks[key][1] for tasks in each))
            for key in common}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="+", help="comma-separated database folders, a group each")
    parser.add_argument("--min-mflops", type=float, default=50.0,
                        help="tasks below this many MFLOPs are left out of the table and summary")
    parser.add_argument("--top", type=int, default=15, help="tasks listed, most FLOPs first")
    args = parser.parse_args()
    groups = [group.split(",") for group in args.groups]
    check_database_folders(parser, [folder for group in groups for folder in group])
    if args.min_mflops < 0 or args.top < 1:
        parser.error("--min-mflops must be >= 0 and --top >= 1")

    sgemm, fma = sgemm_gflops(), fma_peak_gflops()
    print(f"torch.mm {SGEMM_SIZE}x{SGEMM_SIZE} fp32 on one thread, best of {SGEMM_REPEATS}: "
          f"{sgemm:.1f} GFLOPS")
    print("FMA loop on one thread (cc -O3 -march=native): "
          + (f"{fma:.1f} GFLOPS, the peak below" if fma else
             "no C compiler could build it here: the sgemm is the peak below"))
    peak = fma or sgemm
    tables = [group_gflops(group) for group in groups]
    keys = set.intersection(*(set(table) for table in tables))
    heavy = sorted((key for key in keys if tables[0][key][0] >= args.min_mflops * 1e6),
                   key=lambda key: -tables[0][key][0])
    print(f"{len(keys)} tasks in every group, {len(heavy)} of at least {args.min_mflops:g} MFLOPs")
    header = "  ".join(f"group {i + 1} GFLOPS (% peak)" for i in range(len(groups)))
    print(f"  MFLOPs  {header}  data shape, weight shape")
    for key in heavy[:args.top]:
        cells = "  ".join(f"{table[key][1]:8.1f} ({table[key][1] / peak:6.1%})      "
                          for table in tables)
        print(f"{tables[0][key][0] / 1e6:8.1f}  {cells}  {key[0]} {key[1] if len(key) > 1 else ''}")
    for i, table in enumerate(tables):
        # each task once: total FLOPs over total best time, the work's own average rate
        seconds = sum(table[key][0] / (table[key][1] * 1e9) for key in heavy)
        rate = sum(table[key][0] for key in heavy) / seconds / 1e9 if seconds else 0.0
        print(f"group {i + 1} ({len(groups[i])} database(s)): {rate:.1f} GFLOPS over the "
              f"{len(heavy)} tasks, {rate / peak:.1%} of the peak; sum of their bests "
              f"{seconds * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
