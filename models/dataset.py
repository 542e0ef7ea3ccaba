"""Datasets for cost models: immutable features, labels and group keys built from the store.

A `DataSpec` names the data (hardware profiles, networks, feature extractor); `load_dataset`
turns it into a `Dataset` with one row per measured candidate:

- per-store features, ragged: `store_features[store_offsets[i]:store_offsets[i+1]]` (n_i x 164)
- `latency` (seconds; inf for a failed candidate) and `label` = min latency of its task /
  latency (TenSet; 0 for a failed candidate), so higher is better like every model's score
- `group`: the task the candidate belongs to = one workload on one hardware profile; rankings
  and metrics are only meaningful within a group
- the hardware feature vector of its profile (inputs for hardware-aware models)

Nothing is pickled: a dataset is rebuilt from its spec, and `fingerprint()` identifies the exact
rows, so a model's lineage says which data trained it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import TenforgeError
from models.data_spec import CANDIDATE_SOURCES, LATENCY_STATISTICS, DataSpec  # noqa: F401

FEATURE_DIM = 164  # MetaSchedule's PerStoreFeature without the workload part
ARITHMETIC_COLUMNS = 16  # its first group: float, int, bool and select op counts
@dataclass(frozen=True, eq=False)
class Dataset:
    spec: DataSpec
    candidate_id: np.ndarray      # int64 [n]
    group: np.ndarray             # int32 [n], index into the group_* arrays
    latency: np.ndarray           # float64 [n], inf = failed
    label: np.ndarray             # float32 [n]
    store_offsets: np.ndarray     # int64 [n + 1]
    store_features: np.ndarray    # float32 [total stores, 164]
    group_hardware: np.ndarray    # int32 [groups], index into hardware_names
    group_workload: np.ndarray    # str [groups], workload hash
    group_task_name: np.ndarray   # str [groups]
    group_flops: np.ndarray       # float64 [groups]
    hardware_names: tuple[str, ...]
    hardware_features: np.ndarray  # float32 [hardware, n_hw_features]
    # workload hash -> {network label: times the network runs the task}; a label is the name,
    # or NAME@SIZE[:BATCH] where the store holds several instances (network_family)
    workload_networks: dict[str, dict[str, int]] = field(default_factory=dict)
    trace: np.ndarray | None = None  # float32 [n, trace_features.DIM] when spec.traces
    # float32 [n, asm_features.ASM_DIM], what the compiled code does, when spec.asm (rows
    # `tenforge dataset asm` stored) or set by whoever built them (tasks/compiled_code.py)
    asm: np.ndarray | None = None
    # workload hash -> FLOPs for every task of every stored network, measured here or not:
    # what a network's whole work is, whichever profiles' rows were loaded
    workload_flops: dict[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.candidate_id.size)

    @property
    def n_groups(self) -> int:
        return int(self.group_workload.size)

    def candidate_features(self, i: int) -> np.ndarray:
        return self.store_features[self.store_offsets[i]:self.store_offsets[i + 1]]

    def n_stores(self) -> np.ndarray:
        return np.diff(self.store_offsets)

    def pack_sum(self) -> np.ndarray:
        """Per-store features summed per candidate [n, 164] (TenSet's pack-sum input)."""
        out = np.zeros((len(self), self.store_features.shape[1]), np.float32)
        owner = np.repeat(np.arange(len(self)), self.n_stores())
        np.add.at(out, owner, self.store_features)
        return out

    def main_store(self) -> np.ndarray:
        """Each candidate's busiest store row [n, 164]: the one with the most arithmetic
        (PerStoreFeature's first 16 columns, op counts), e.g. a convolution's accumulation
        into its output or write cache, apart from the padding and layout stores the pack-sum
        mixes it with; zeros for a candidate with no store."""
        out = np.zeros((len(self), self.store_features.shape[1]), np.float32)
        sizes = self.n_stores()
        if not sizes.any():
            return out
        owner = np.repeat(np.arange(len(self)), sizes)
        arithmetic = self.store_features[:, :ARITHMETIC_COLUMNS].sum(1)
        order = np.lexsort((-arithmetic, owner))  # by candidate, busiest store first
        first = order[np.r_[0, np.flatnonzero(np.diff(owner[order])) + 1]]
        out[owner[first]] = self.store_features[first]
        return out

    def store_max(self) -> np.ndarray:
        """Per-store features' maximum over a candidate's stores [n, 164]; zeros where none."""
        out = np.zeros((len(self), self.store_features.shape[1]), np.float32)
        sizes = self.n_stores()
        some = sizes > 0
        if some.any():
            out[some] = np.maximum.reduceat(self.store_features,
                                            self.store_offsets[:-1][some], axis=0)
        return out

    def task_centred(self, x: np.ndarray) -> np.ndarray:
        """`x` (one row per candidate) less its group's mean row: what sets a candidate apart
        from the others of its task on its profile, the only thing a ranking within the task
        can use, in the same units for every task (a tree on raw features must find each
        task's own thresholds)."""
        out = np.asarray(x, np.float32).copy()
        if not len(self):
            return out
        order = np.argsort(self.group, kind="stable")
        starts = np.r_[0, np.flatnonzero(np.diff(self.group[order])) + 1]
        means = np.add.reduceat(out[order], starts, axis=0, dtype=np.float64)
        counts = np.diff(np.r_[starts, len(order)])
        means /= counts[:, None]
        out[order] -= np.repeat(means, counts, axis=0).astype(np.float32)
        return out

    def candidate_hardware(self) -> np.ndarray:
        """Hardware index of each candidate [n]."""
        return self.group_hardware[self.group]

    def subset(self, index: np.ndarray) -> "Dataset":
        """The rows `index` (groups and hardware tables are kept whole)."""
        index = np.asarray(index, dtype=np.int64)
        starts, ends = self.store_offsets[index], self.store_offsets[index + 1]
        sizes = ends - starts
        take = (np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
                + np.arange(int(sizes.sum())))
        return Dataset(self.spec, self.candidate_id[index], self.group[index],
                       self.latency[index], self.label[index],
                       np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
                       self.store_features[take], self.group_hardware, self.group_workload,
                       self.group_task_name, self.group_flops, self.hardware_names,
                       self.hardware_features, self.workload_networks,
                       None if self.trace is None else self.trace[index],
                       None if self.asm is None else self.asm[index], self.workload_flops)

    def fingerprint(self) -> str:
        """Identifies the rows and labels (for lineage) by what they are: each row's profile,
        task and measured latency, in load order (by schedule hash within a task). Not by
        candidate id: ids are store-local, so two stores with the same data gave two prints."""
        digest = hashlib.sha1()
        digest.update(json.dumps(self.spec.to_json(), sort_keys=True).encode())
        digest.update(json.dumps(list(self.hardware_names)).encode())
        digest.update(self.group_hardware[self.group].tobytes())
        digest.update("\n".join(self.group_workload[self.group].tolist()).encode())
        digest.update(self.latency.tobytes())
        return digest.hexdigest()[:16]

    def network_families(self) -> list[str]:
        """The networks (by name, every size and batch) with a task in this data: what a model
        trained on it has seen (its lineage's `trained_networks`). A prepared graph's tasks
        are named too (resnet18+nhwc, beside resnet18): a model that saw only the exported
        graph has not seen its NHWC convolutions."""
        labels = {n for w in np.unique(self.group_workload[self.group])
                  for n in self.workload_networks.get(w, {})}
        return sorted({network_family(n) for n in labels} | {network_name(n) for n in labels})

    def describe(self) -> dict:
        return {"candidates": len(self), "groups": int(np.unique(self.group).size),
                "failed": int(np.sum(~np.isfinite(self.latency))),
                "hardware": list(self.hardware_names), "fingerprint": self.fingerprint()}


def _check_spec(store: Any, spec: DataSpec, db: str | Path) -> dict[str, list[float]]:
    """Refuse hardware or networks the store has no data of; the stored hardware vectors."""
    from storage import queries

    stored_hw = queries.hardware_vectors(store)
    missing = [h for h in spec.hardware if h not in stored_hw]
    if missing:
        raise TenforgeError(f"hardware {', '.join(missing)} has no data in {db}; stored: "
                            f"{', '.join(sorted(stored_hw)) or 'none'}")
    if spec.networks:
        stored_nets = queries.network_names(store)
        unknown = [n for n in spec.networks if n not in stored_nets]
        if unknown:
            raise TenforgeError(f"network {', '.join(unknown)} has no data in {db}; "
                                f"stored: {', '.join(sorted(stored_nets))}")
    return stored_hw


def _nothing_measured(spec: DataSpec, db: str | Path) -> TenforgeError:
    return TenforgeError(f"no measured candidates with {spec.extractor} features for "
                         f"hardware {', '.join(spec.hardware)}"
                         f"{' and networks ' + ', '.join(spec.networks) if spec.networks else ''}"
                         f"{' from sources ' + ', '.join(spec.sources) if spec.sources else ''}"
                         f" in {db}; collect some first (`tenforge collect`)")


@dataclass(frozen=True)
class DataInventory:
    """What a dataset would hold, counted without loading it."""

    networks: frozenset[str]  # networks whose tasks have measured candidates
    candidates: int  # measured, featurized candidates


def check_dataset(db: str | Path, spec: DataSpec) -> DataInventory:
    """Everything `load_dataset` would refuse, found with a few counting queries instead of
    loading (what a flow's validate function may afford)."""
    from storage import queries
    from storage.store import Store

    with Store(db, read_only=True) as store:
        _check_spec(store, spec, db)
        count, covered = queries.measured_inventory(store, spec.hardware, spec.networks,
                                                    spec.extractor)
    if not count:
        raise _nothing_measured(spec, db)
    return DataInventory(frozenset(covered), count)


def load_dataset(db: str | Path, spec: DataSpec) -> Dataset:
    """Build the dataset `spec` names from store `db` (read-only)."""
    from storage import queries
    from storage.store import Store

    with Store(db, read_only=True) as store:
        stored_hw = _check_spec(store, spec, db)
        table = queries.measured_features(store, spec.hardware, spec.networks, spec.extractor,
                                          with_traces=spec.traces, sources=spec.sources,
                                          latency=spec.latency)
        links = queries.network_task_weights(store)
        asm = _asm_rows(store, spec, table, db)
    if table.num_rows == 0:
        raise _nothing_measured(spec, db)
    return _assemble(spec, table, stored_hw, links, asm)


def _asm_matrix(store: Any, candidate_ids: list[int]) -> np.ndarray:
    """float32 [n, ASM_DIM]: each candidate's stored asm columns, NaN where it has none."""
    from models.asm_features import ASM_DIM
    from storage.feature_rows import ASM_EXTRACTOR, feature_matrix

    return feature_matrix(store, candidate_ids, ASM_EXTRACTOR, ASM_DIM)


def with_stored_asm(db: str | Path, data: Dataset) -> Dataset:
    """`data` with each candidate's asm columns from store `db` (NaN where it has none), as
    DataSpec(asm=True) would have loaded it (its spec says so)."""
    from dataclasses import replace

    from storage.store import Store

    with Store(db, read_only=True) as store:
        return replace(data, spec=replace(data.spec, asm=True),
                       asm=_asm_matrix(store, data.candidate_id.tolist()))


def _asm_rows(store: Any, spec: DataSpec, table, db: str | Path) -> np.ndarray | None:
    """The assembly columns of the table's candidates when the spec asks for them; refuse
    data that has none (a model trained on NaN alone would rank by nothing)."""
    if not spec.asm or table.num_rows == 0:
        return None
    from storage.feature_rows import ASM_EXTRACTOR

    asm = _asm_matrix(store, table.column("candidate_id").to_pylist())
    if np.isnan(asm).all():
        raise TenforgeError(f"no assembly columns ({ASM_EXTRACTOR}) for hardware "
                            f"{', '.join(spec.hardware)} in {db}; build them first: "
                            f"`tenforge dataset asm --db {db} --hardware {spec.hardware[0]}`")
    return asm


def _assemble(spec: DataSpec, table, stored_hw: dict, links: list[tuple],
              asm: np.ndarray | None = None) -> Dataset:
    hardware = np.array(table.column("hardware").to_pylist())
    workload = np.array(table.column("workload_hash").to_pylist())
    latency = table.column("latency_s").to_numpy(zero_copy_only=False).astype(np.float64)
    latency = np.where(np.isnan(latency), np.inf, latency)
    keys = np.char.add(np.char.add(hardware, "/"), workload)
    group_keys, group = np.unique(keys, return_inverse=True)
    # Label within a group; a group with no successful candidate teaches nothing: drop it.
    best = np.full(group_keys.size, np.inf)
    np.minimum.at(best, group, latency)
    keep = np.isfinite(best[group]) & (np.bincount(group)[group] >= spec.min_candidates)
    label = np.where(np.isfinite(latency), best[group] / latency, 0.0).astype(np.float32)

    values = table.column("values").combine_chunks()
    flat = values.values.to_numpy(zero_copy_only=False).astype(np.float32)
    dims = set(table.column("dim").to_pylist())
    if dims != {FEATURE_DIM}:
        raise TenforgeError(f"features of dimension {sorted(dims)} found; this model code "
                            f"expects {FEATURE_DIM} ({spec.extractor})")
    offsets = values.offsets.to_numpy().astype(np.int64) // FEATURE_DIM
    store_features = flat.reshape(-1, FEATURE_DIM)

    hardware_names = tuple(sorted(set(hardware.tolist())))
    first = np.unique(group, return_index=True)[1]
    full = Dataset(
        spec=spec, candidate_id=table.column("candidate_id").to_numpy().astype(np.int64),
        group=group.astype(np.int32), latency=latency, label=label, store_offsets=offsets,
        store_features=store_features,
        group_hardware=np.array([hardware_names.index(h) for h in hardware[first]], np.int32),
        group_workload=workload[first], group_task_name=np.array(
            table.column("task_name").to_pylist())[first],
        group_flops=table.column("flops").to_numpy()[first].astype(np.float64),
        hardware_names=hardware_names,
        hardware_features=np.array([stored_hw[h] for h in hardware_names], np.float32),
        workload_networks=_networks_by_workload(links), trace=_traces(spec, table), asm=asm,
        workload_flops={workload: float(flops) for workload, _, _, flops in links})
    return full if keep.all() else full.subset(np.flatnonzero(keep))


def _traces(spec: DataSpec, table) -> np.ndarray | None:
    if not spec.traces:
        return None
    return _trace_matrix(table.column("trace_json").to_pylist())


def _networks_by_workload(links: list[tuple]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for workload, network, weight, _ in links:
        out.setdefault(workload, {})[network] = int(weight)
    return out


def network_name(label: str) -> str:
    """The stored network a label names, whatever its size and batch, its graph preparation
    kept: resnet18@160:4 -> resnet18, resnet18+nhwc@224:1 -> resnet18+nhwc (other tasks than
    the exported network's)."""
    return label.split("@", 1)[0]


def network_family(label: str) -> str:
    """The network a label names, whatever its size, batch and graph preparation:
    resnet18@160:4 -> resnet18, resnet18+nhwc@224:1 -> resnet18 (core.graphs.GRAPHS)."""
    return network_name(label).split("+", 1)[0]


def dataset_from_features(features: list[np.ndarray], hardware_name: str,
                          hardware_vector: np.ndarray, latency: np.ndarray | None = None,
                          groups: np.ndarray | None = None, workload: str = "adhoc",
                          traces: list[str] | np.ndarray | None = None) -> Dataset:
    """A Dataset for candidates that are not in a store (MetaSchedule's search asks about
    schedules it just made): per-candidate (n_stores x 164) features on one hardware profile.
    `latency` (seconds, inf = failed) gives labels within each of `groups` (default: one);
    `traces` (their trace JSON, or its summaries as rows) gives models that take it the
    trace summary."""
    n = len(features)
    sizes = np.array([len(f) for f in features], np.int64)
    rows = (np.concatenate([np.asarray(f, np.float32).reshape(-1, FEATURE_DIM)
                            for f in features]) if n and sizes.sum()
            else np.zeros((0, FEATURE_DIM), np.float32))
    group = np.zeros(n, np.int32) if groups is None else np.asarray(groups, np.int32)
    lat = np.full(n, np.inf) if latency is None else np.asarray(latency, np.float64)
    n_groups = int(group.max()) + 1 if n else 1
    best = np.full(n_groups, np.inf)
    np.minimum.at(best, group, lat)
    with np.errstate(divide="ignore", invalid="ignore"):
        label = np.where(np.isfinite(lat), best[group] / lat, 0.0).astype(np.float32)
    return Dataset(
        spec=DataSpec(hardware=(hardware_name,)), candidate_id=np.arange(n, dtype=np.int64),
        group=group, latency=lat, label=label,
        store_offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        store_features=rows, group_hardware=np.zeros(n_groups, np.int32),
        group_workload=np.array([f"{workload}-{g}" for g in range(n_groups)]),
        group_task_name=np.array([f"{workload}-{g}" for g in range(n_groups)]),
        group_flops=np.zeros(n_groups), hardware_names=(hardware_name,),
        hardware_features=np.asarray(hardware_vector, np.float32).reshape(1, -1),
        trace=None if traces is None else traces if isinstance(traces, np.ndarray)
        else _trace_matrix(traces))


def _trace_matrix(traces: list[str]) -> np.ndarray:
    from models.trace_features import trace_matrix

    return trace_matrix(traces)
