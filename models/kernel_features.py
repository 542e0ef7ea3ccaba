"""An analytic estimate of a CPU micro-kernel's FMA efficiency, from the tile block.

The tile block (models/trace_features.py) gives the vector loop and the rest of the register
tile as log2 columns, and tile_hardware_columns sets them against the target's lanes and
vector registers. What makes a dense CPU kernel fast is how those combine: the fraction of
each vector's lanes the vector loop fills, whether there are enough independent accumulators
to hide the FMA latency, whether the accumulators fit in the registers, and how many FMAs each
load feeds. Each is a ratio with a cap at 1 and the efficiency is their product; a tree splits
on one column at a time and cannot form that product from the separate log2 columns. So each
factor is a column (log2, 0 at best) and so is their sum, the estimate itself.

Rank errors (bench/rank_errors.py, session 66) put most of the held-out gap on convolutions
whose pick is 2x or more slower than the task's best, one of them for one raw tile factor over
the vector loop's width. Measured (docs/cost-models.md, session 67): no gain that six
held-out splits resolve (split by split -0.030 to +0.071, mean +0.004 network top-1), so
`kernel_features` is an option, off, kept to reproduce that table.

The model is the textbook register-blocked kernel of an x86 core: per reduction step the kernel
loads `vectors` vectors of one operand, broadcasts `rest` scalars of the other and issues
vectors x rest FMAs into as many accumulators. The FMA pipes of the x86 cores in the fleet
(Zen 3-5, Rocket Lake, Emerald Rapids) need about 8 independent accumulators (latency 4 x
2 pipes); 2 registers are kept for the loaded operands.
"""

from __future__ import annotations

import numpy as np

from models.trace_features import SUMMARY_DIM, TILE_NAMES, lanes_and_registers

KERNEL_NAMES = ("lane_fill", "fma_chains", "accumulators_fit", "fmas_per_load",
                "kernel_efficiency")
FMA_CHAINS = 8.0  # independent accumulators that keep both FMA pipes busy (latency 4 x 2)
OPERAND_REGISTERS = 2.0  # vector registers the loaded operands take beside the accumulators


def kernel_columns(trace: np.ndarray, hardware: np.ndarray) -> np.ndarray:
    """KERNEL_NAMES per row (log2, at most 0), from trace matrix rows and each row's raw
    hardware vector (core.hardware.HARDWARE_FEATURE_NAMES)."""
    lanes, registers = (np.exp2(c) for c in lanes_and_registers(hardware))
    at = SUMMARY_DIM + TILE_NAMES.index("vector_loop")
    vector_loop, rest = np.exp2(trace[:, at]), np.exp2(trace[:, at + 1])
    vectors = np.ceil(vector_loop / lanes)
    fill = vector_loop / (vectors * lanes)
    accumulators = vectors * rest
    chains = np.minimum(1.0, accumulators / FMA_CHAINS)
    fit = np.minimum(1.0, (registers - OPERAND_REGISTERS) / accumulators)
    per_load = np.minimum(1.0, accumulators / (vectors + rest))
    factors = np.log2(np.stack([fill, chains, fit, per_load], 1))
    return np.hstack([factors, factors.sum(1, keepdims=True)]).astype(np.float32)
