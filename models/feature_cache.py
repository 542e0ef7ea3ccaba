"""The per-store features of candidates a search has ranked before, so it extracts them once.

MetaSchedule's evolutionary search hands the cost model the same programs again and again: the
measured best it seeds each round's population with, the parents a genetic iteration keeps
unmutated, and every candidate it measures (`update` re-extracts what `predict` ranked). On a
warm, focused resnet18 retune (300 trials, population 120) 18% of the candidates ranked had been
ranked in an earlier call and another 5% twice within one call, while PerStoreFeature
extraction was ~40% of the search's time outside measuring; without a warm start a third of
the features were reused and the search's CPU time fell 9-12% (bench/throughput.py; both in
docs/tuning-results.md, 2026-11-25, twenty-seventh session). The key is the structural hash
of the scheduled module: the features are a function of that module alone (one target per
search), and hashing costs ~2% of extracting.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Hashable, Sequence

import numpy as np

# ~140k resnet18 candidates (~1.8 KB each: 2.8 stores x 164 float32 on average in the seed),
# three times what a 1,000-trial search ranks (~45k): a search evicts only past that
DEFAULT_MAX_BYTES = 256 * 2**20


class FeatureCache:
    """Least-recently-used map from a candidate's key to its features, bounded in bytes."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[Hashable, np.ndarray] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def features(self, keys: Sequence[Hashable],
                 extract: Callable[[list[int]], list[np.ndarray]]) -> list[np.ndarray]:
        """The features of the candidates named by `keys`, in order. `extract(indices)` computes
        those of the candidates at `indices` (one per distinct key not cached yet)."""
        found: dict[Hashable, np.ndarray] = {}
        missing: dict[Hashable, int] = {}  # key -> the first index that names it
        for i, key in enumerate(keys):
            if key in found or key in missing:
                continue
            cached = self._entries.get(key)
            if cached is None:
                missing[key] = i
            else:
                self._entries.move_to_end(key)
                found[key] = cached
        if missing:
            fresh = extract(list(missing.values()))
            if len(fresh) != len(missing):
                raise ValueError(f"extract returned {len(fresh)} feature arrays for "
                                 f"{len(missing)} candidates")
            for key, value in zip(missing, fresh):
                found[key] = value
                self._put(key, value)
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        return [found[key] for key in keys]

    def _put(self, key: Hashable, value: np.ndarray) -> None:
        if value.nbytes > self.max_bytes:
            return  # would evict everything and still not fit
        self._entries[key] = value
        self.bytes += value.nbytes
        while self.bytes > self.max_bytes:
            _, old = self._entries.popitem(last=False)
            self.bytes -= old.nbytes

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "entries": len(self._entries),
                "bytes": self.bytes}
