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

PRIMITIVES = ("Split", "Fuse", "Reorder", "Parallel", "Vectorize", "Unroll", "Bind",
              "CacheRead", "CacheWrite", "ReIndex", "ComputeAt", "ReverseComputeAt",
              "ComputeInline", "ReverseComputeInline", "Blockize", "Tensorize",
              "DecomposeReduction", "RFactor", "StorageAlign", "Annotate", "TransformLayout",
              "Pad")
TILES, FACTORS, CATEGORICAL, LOCATIONS = 8, 4, 4, 4
# Bumped when the same trace summarizes differently (2: EnterPostproc skipped, not a stop).
SUMMARY_VERSION = 2
DIM = len(PRIMITIVES) + TILES * FACTORS + CATEGORICAL + LOCATIONS + 1  # + total length


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
    tiles: list[list[float]] = []
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
            tiles.append([math.log2(max(int(f), 1)) for f in decision][:FACTORS])
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
        out[at + t * FACTORS: at + t * FACTORS + len(factors)] = factors
    at += TILES * FACTORS
    out[at: at + len(categorical[:CATEGORICAL])] = categorical[:CATEGORICAL]
    at += CATEGORICAL
    out[at: at + len(locations[:LOCATIONS])] = locations[:LOCATIONS]
    out[-1] = math.log1p(length - markers)
    return out


def trace_matrix(traces: list[str]) -> np.ndarray:
    """trace_vector of each trace, stacked (n x DIM)."""
    return np.stack([trace_vector(t) for t in traces]) if traces else np.zeros((0, DIM),
                                                                              np.float32)
