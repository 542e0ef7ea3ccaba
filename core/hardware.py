"""Hardware profile value types: what a measurement ran on, and how it was timed.

A profile = stable name + TVM target (JSON dict form) + where and how it is measured (host,
runner, threads, measurement settings) + the hardware feature vector that cost models take as
input (Verma et al.; TenSet's HardwareParams plus cache sizes and ISA flags). Finding and
resolving profiles (probing this CPU, reading hardware.toml) is tasks/hardware.py's job.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from core.errors import TenforgeError

# The numeric hardware features, in the order models see them (do not reorder: stored vectors
# and trained models depend on it; append new names at the end).
HARDWARE_FEATURE_NAMES: tuple[str, ...] = (
    "num_cores",
    "vector_unit_bytes",
    "cache_line_bytes",
    "l1d_bytes",
    "l2_bytes",
    "l3_bytes",
    "max_shared_memory_per_block",
    "max_local_memory_per_block",
    "max_threads_per_block",
    "max_vthread_extent",
    "warp_size",
    "is_gpu",
    "has_sse42",
    "has_avx",
    "has_avx2",
    "has_fma",
    "has_avx512f",
    "has_avx512vnni",
    "has_neon",
)


def differing_features(a: dict[str, float], b: dict[str, float]) -> list[str]:
    """The hardware features both dicts have and give different values (a feature appended to
    HARDWARE_FEATURE_NAMES after one of them was stored is not a difference)."""
    return [n for n in HARDWARE_FEATURE_NAMES if n in a and n in b and float(a[n]) != float(b[n])]


def check_same_chip(name: str, stored: tuple[str, str], given: tuple[str, str]) -> None:
    """Refuse, in one line, a profile whose (target JSON, features JSON) differ from those
    stored under `name`: a profile name means one target on one chip (two Xeon VMs that report
    one CPU model are two chips)."""
    if json.loads(stored[0]) != json.loads(given[0]):
        raise TenforgeError(f"hardware profile {name!r} is stored with target {stored[0]} but is "
                            f"now {given[0]}; give the changed profile a new name")
    old, new = json.loads(stored[1]), json.loads(given[1])
    differ = differing_features(old, new)
    if differ:
        raise TenforgeError(
            f"hardware profile {name!r} is stored with "
            f"{', '.join(f'{n}={old[n]:g}' for n in differ)} but this one has "
            f"{', '.join(f'{n}={new[n]:g}' for n in differ)}: another chip under the same "
            "name; give it a new name (a [[profile]] in hardware.toml)")


# TenSet's measurement protocol: more repeats for cheaper kernels (FLOPs thresholds from its
# measure_programs.py), one run per repeat, CPU cache flushed before each repeat.
_TENSET_REPEATS = ((2416443392.0, 4), (834928640.0, 6))


@dataclass(frozen=True)
class MeasureSettings:
    """How candidates are timed. Stored with every measurement (as `key()`)."""

    number: int = 1  # runs per repeat (1: each repeat is one cold-cache run)
    repeat: int = 0  # 0: choose by FLOPs as TenSet did (10 / 8 / 6 / 4)
    min_repeat_ms: int = 0
    cache_flush: bool = True  # flush CPU caches before each repeat (CPU targets)
    warmup_runs: int = 1  # untimed runs first: page faults, thread-pool start
    build_timeout_s: float = 60.0
    run_timeout_s: float = 30.0
    check_correctness: bool = True  # compare outputs with the unscheduled function's

    def repeats_for(self, flops: float) -> int:
        if self.repeat > 0:
            return self.repeat
        if flops <= 2097152.0:
            return 10
        for threshold, repeats in _TENSET_REPEATS:
            if flops >= threshold:
                return repeats
        return 8

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def key(self) -> str:
        """Stable 12-hex-digit identity of these settings (measurements are unique per key)."""
        blob = json.dumps(self.as_dict(), sort_keys=True).encode()
        return hashlib.sha1(blob).hexdigest()[:12]


def is_x86_cpu(target_kind: str, arch: str) -> bool:
    """Whether a target's code is x86 assembly (what models/asm_features.py reads)."""
    return target_kind == "llvm" and arch.startswith("x86")


@dataclass(frozen=True)
class HardwareProfile:
    """One measurable hardware target. Flows take its `name`, never a target string."""

    name: str
    target: dict[str, Any]  # TVM Target in JSON dict form
    description: str = ""
    host: str = "local"  # the machine whose worker measures it
    runner: dict[str, Any] = field(default_factory=lambda: {"kind": "local"})
    num_threads: int = 1  # TVM_NUM_THREADS for runs
    features: dict[str, float] = field(default_factory=dict)
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    arch: str = ""  # e.g. "x86_64", "sm_90a"

    @property
    def target_kind(self) -> str:
        return str(self.target["kind"])

    @property
    def x86_cpu(self) -> bool:
        return is_x86_cpu(self.target_kind, self.arch)

    @property
    def runner_kind(self) -> str:
        return str(self.runner.get("kind", "local"))

    def feature_vector(self) -> list[float]:
        return [float(self.features.get(n, 0.0)) for n in HARDWARE_FEATURE_NAMES]

    def tvm_target(self) -> Any:
        from tvm.target import Target

        return Target(self.target)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> HardwareProfile:
        """The profile a store's `hardware` row (as_row's, or a shard manifest's copy) holds.
        KeyError, ValueError or TypeError where the row lacks a field or holds bad JSON."""
        return cls(name=row["name"], target=json.loads(row["target_json"]),
                   description=row.get("description", ""), host=row.get("host", "local"),
                   runner=json.loads(row.get("runner_json") or '{"kind": "local"}'),
                   num_threads=int(row["num_threads"]),
                   features=json.loads(row["features_json"]), arch=row.get("arch", ""))

    def as_row(self) -> dict[str, Any]:
        """The profile as the store's `hardware` table row."""
        return {
            "name": self.name,
            "description": self.description,
            "target_json": json.dumps(self.target, sort_keys=True),
            "target_kind": self.target_kind,
            "arch": self.arch,
            "host": self.host,
            "runner_json": json.dumps(self.runner, sort_keys=True),
            "num_threads": self.num_threads,
            "features_json": json.dumps(self.features, sort_keys=True),
            "feature_vector": self.feature_vector(),
        }
