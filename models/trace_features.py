"""Schedule features from a candidate's MetaSchedule trace, next to the per-store rows.

PerStoreFeature describes the program a schedule produced (loop extents, vector widths, bytes
touched per store); the trace says how it was produced: which primitives, in what mix, and the
decisions that distinguish candidates of one design space (tile factors, the unroll step, where
a producer is computed). TLP ranks candidates from the trace's primitive sequence alone; this
is a fixed-length summary of it that tree models can take:

- how often each schedule primitive occurs (log1p), the postprocessors' included;
- the first TILES SamplePerfectTile decisions in trace order, FACTORS factors each, as log2
  (a design space tiles its loops in the same order for every candidate, so a position means
  the same loop across candidates of a task);
- the first CATEGORICAL SampleCategorical decisions (the value chosen, log2(1 + v));
- the first LOCATIONS SampleComputeLocation decisions (-2 inline, -1 root, else a loop index).

Then the tile block (TILE_NAMES): what the tile factors add up to per level of the loop
nest. A tree splits on one column at a time, so the product of four loops' innermost factors
(the register tile a CPU kernel accumulates in) is out of its reach from the factors in
separate columns; summed as log2 it is one column. MetaSchedule's CPU tiling (SSRSRS) splits
each spatial loop into 4 levels and each reduction loop into 2; a tile decision of 4 or more
factors counts as spatial (its last 4 levels), of 2-3 as reduction (its last 2), so GPU
structures (5 and 3 levels) are read by their innermost levels. Models that take it
(`tile_features`) also get tile_hardware_columns: the vector loop against the target's lanes
and the accumulators against its vector registers, which no column of either side says alone.
Measured (docs/cost-models.md, 2026-11-27): on held-out networks of five x86 CPUs, +0.035
median network top-1 for a bag of five lgbm (higher on each of three splits) and +0.037 for
one lgbm; pairwise accuracy +0.03 to +0.04 on every split.

The trace JSON is MetaSchedule's: [instructions, decisions], an instruction being
[kind, inputs, attrs, outputs] and a decision [instruction index, value].

The EnterPostproc marker is skipped, not a stop: the seed's sampled traces (until
2026-11-23) carry the postprocessors' instructions without it, MetaSchedule's search traces
(what the tuning adapter ranks, and tuning write-back rows) with it. Stopping at the marker
gave one schedule two summaries: a model trained on sampled rows ranked the search's
candidates with their Parallel, Vectorize, Unroll and DecomposeReduction counts cut off.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Sequence

import numpy as np

from core.hardware import HARDWARE_FEATURE_NAMES

PRIMITIVES = ("Split", "Fuse", "Reorder", "Parallel", "Vectorize", "Unroll", "Bind",
              "CacheRead", "CacheWrite", "ReIndex", "ComputeAt", "ReverseComputeAt",
              "ComputeInline", "ReverseComputeInline", "Blockize", "Tensorize",
              "DecomposeReduction", "RFactor", "StorageAlign", "Annotate", "TransformLayout",
              "Pad")
TILES, FACTORS, CATEGORICAL, LOCATIONS = 8, 4, 4, 4
# Bumped when the same trace summarizes differently (2: EnterPostproc skipped, not a stop).
# The tile block appended after it (2026-11-27) left the first SUMMARY_DIM columns as they were.
SUMMARY_VERSION = 2
SUMMARY_DIM = len(PRIMITIVES) + TILES * FACTORS + CATEGORICAL + LOCATIONS + 1  # + total length
SPATIAL_LEVELS, REDUCTION_LEVELS = 4, 2
TILE_NAMES = (
    *(f"spatial_level{i}" for i in range(SPATIAL_LEVELS)),  # log2 tile volume, outermost first
    *(f"reduction_level{i}" for i in range(REDUCTION_LEVELS)),
    "vector_loop",  # the last spatial tile's innermost factor: the loop that gets vectorized
    "register_tile_rest",  # the other spatial loops' innermost factors: register tile / vector loop
    "cache_tile",  # the two inner spatial levels and the inner reduction: a tile near L1
    "inner_kernel",  # innermost spatial level and inner reduction: the micro-kernel's work
    "inner_tiled_loops",  # how many spatial loops have an innermost factor above 1
    "spatial_tiles", "reduction_tiles")
TILE_DIM = len(TILE_NAMES)
# vector_loop against the target's fp32 lanes, log2 accumulator vectors, and those against the
# vector registers (32 with AVX-512, else 16)
HARDWARE_TILE_NAMES = ("vector_loop_over_lanes", "accumulator_vectors",
                       "accumulators_over_registers")
DIM = SUMMARY_DIM + TILE_DIM  # one row of a Dataset's trace matrix
_VECTOR_BYTES = HARDWARE_FEATURE_NAMES.index("vector_unit_bytes")
_AVX512 = HARDWARE_FEATURE_NAMES.index("has_avx512f")


def trace_vector(trace_json: str) -> np.ndarray:
    """The DIM-long summary of one trace, from its JSON (float32)."""
    insts, decisions = json.loads(trace_json)
    chosen = {int(i): d for i, d in decisions}
    steps = ((kind, attrs, chosen.get(index))
             for index, (kind, _inputs, attrs, _outputs) in enumerate(insts))
    return summarize(steps, len(insts))


def summarize(steps: Iterable[tuple[str, Sequence[Any], Any]], length: int) -> np.ndarray:
    """The summary of a trace given as (kind, attrs, decision or None) per instruction, in
    order, and its total instruction count. trace_vector reads them from the JSON; the tuning
    adapter (models/ms_adapter.py) straight from the Trace object, which is ~10x cheaper
    than converting every candidate the search ranks to JSON first."""
    counts = dict.fromkeys(PRIMITIVES, 0)
    tiles: list[list[float]] = []  # every tile decision, all factors (log2)
    categorical: list[float] = []
    locations: list[float] = []
    markers = 0
    for kind, attrs, decision in steps:
        if kind == "EnterPostproc":
            markers += 1  # the same schedule summarizes the same with or without it
            continue
        if kind in counts:
            counts[kind] += 1
        if kind == "SamplePerfectTile" and decision is not None:
            tiles.append([math.log2(max(int(f), 1)) for f in decision])
        elif kind == "SampleCategorical" and decision is not None:
            values = attrs[0] if attrs else []
            value = values[int(decision)] if int(decision) < len(values) else decision
            categorical.append(math.log2(1 + max(float(value), 0)))
        elif kind == "SampleComputeLocation" and decision is not None:
            locations.append(float(decision))
    out = np.zeros(DIM, np.float32)
    out[:len(PRIMITIVES)] = np.log1p([counts[p] for p in PRIMITIVES])
    at = len(PRIMITIVES)
    for t, factors in enumerate(tiles[:TILES]):
        factors = factors[:FACTORS]
        out[at + t * FACTORS: at + t * FACTORS + len(factors)] = factors
    at += TILES * FACTORS
    out[at: at + len(categorical[:CATEGORICAL])] = categorical[:CATEGORICAL]
    at += CATEGORICAL
    out[at: at + len(locations[:LOCATIONS])] = locations[:LOCATIONS]
    out[SUMMARY_DIM - 1] = math.log1p(length - markers)
    out[SUMMARY_DIM:] = tile_block(tiles)
    return out


def tile_block(tiles: list[list[float]]) -> list[float]:
    """The TILE_NAMES columns from every tile decision's log2 factors, in trace order."""
    spatial = [0.0] * SPATIAL_LEVELS
    reduction = [0.0] * REDUCTION_LEVELS
    vector_loop, n_spatial, n_reduction, inner_tiled = 0.0, 0, 0, 0
    for factors in tiles:
        if len(factors) >= SPATIAL_LEVELS:
            for level, f in enumerate(factors[-SPATIAL_LEVELS:]):
                spatial[level] += f
            vector_loop = factors[-1]  # the last spatial loop's, once all are read
            n_spatial += 1
            inner_tiled += factors[-1] > 0
        elif factors:
            inner_levels = factors[-REDUCTION_LEVELS:]  # a 1-factor split is the inner level
            for level, f in enumerate(inner_levels, REDUCTION_LEVELS - len(inner_levels)):
                reduction[level] += f
            n_reduction += 1
    inner, inner_reduction = spatial[-1], reduction[-1]
    return [*spatial, *reduction, vector_loop, inner - vector_loop,
            spatial[-2] + inner + inner_reduction, inner + inner_reduction, float(inner_tiled),
            float(n_spatial), float(n_reduction)]


def tile_hardware_columns(trace: np.ndarray, hardware: np.ndarray) -> np.ndarray:
    """HARDWARE_TILE_NAMES per row, from trace matrix rows and each row's raw hardware vector
    (core.hardware.HARDWARE_FEATURE_NAMES; not log-scaled)."""
    lanes, registers = lanes_and_registers(hardware)
    at = SUMMARY_DIM + TILE_NAMES.index("vector_loop")
    vector_loop, rest = trace[:, at], trace[:, at + 1]
    over_lanes = vector_loop - lanes
    accumulators = np.maximum(over_lanes, 0.0) + rest
    return np.stack([over_lanes, accumulators, accumulators - registers], 1).astype(np.float32)


def lanes_and_registers(hardware: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log2 of each row's fp32 vector lanes and of its vector registers (32 with AVX-512,
    else 16), from raw hardware vectors."""
    lanes = np.log2(np.maximum(hardware[:, _VECTOR_BYTES], 4.0) / 4.0)
    return lanes, np.where(hardware[:, _AVX512] > 0, 5.0, 4.0)


def input_width(trace_features: bool, tile_features: bool) -> int:
    """How many input columns a model's trace settings add after the hardware features."""
    return (SUMMARY_DIM if trace_features else 0) + \
        (TILE_DIM + len(HARDWARE_TILE_NAMES) if tile_features else 0)


def trace_matrix(traces: list[str]) -> np.ndarray:
    """trace_vector of each trace, stacked (n x DIM)."""
    return np.stack([trace_vector(t) for t in traces]) if traces else np.zeros((0, DIM),
                                                                              np.float32)
