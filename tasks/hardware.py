"""Finding hardware profiles: probe this CPU, read declared ones, resolve a name once.

The value types (HardwareProfile, MeasureSettings) live on the ground floor, core/hardware.py.
Sources, in this order of precedence:
1. `hardware.toml` at the project root (or the file named by $TENFORGE_HARDWARE): declared
   profiles, e.g. a GPU by TVM tag or a board reached through TVM RPC.
2. Auto-detected profiles of the local CPU: the full ISA on all cores, and an honest second one
   on the same chip restricted to x86-64-v2 (SSE4.2, no AVX) and one thread, so cross-hardware
   work is possible on a machine without a GPU. `local` is an alias of the first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.errors import TenforgeError
from core.hardware import HardwareProfile, MeasureSettings, differing_features
from core.paths import PROJECT_ROOT

DEFAULT_PROFILE_FILE = PROJECT_ROOT / "hardware.toml"
# The shipped measurements (dataset/seed, dataset/extra, dataset/device): each shard's manifest
# holds the hardware row of the chip it was measured on.
SHIPPED_DATA = PROJECT_ROOT / "dataset"

# ISA extensions whose absence on the host makes a CPU target unrunnable (LLVM spelling): the
# vector and matrix extensions LLVM may emit for tensor programs. The rest of what an `mcpu`
# implies (movdiri, waitpkg, tuning flags) never appears in their code.
_CHECKED_ISA = ("sse4.2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vnni", "avx512bf16",
                "avx512fp16", "avxvnni", "amx-tile", "amx-int8", "amx-bf16", "amx-fp16")
# /proc/cpuinfo spells some flags differently from LLVM.
_CPUINFO_TO_LLVM = {"sse4_2": "sse4.2", "sse4_1": "sse4.1", "avx512_vnni": "avx512vnni",
                    "avx512_bf16": "avx512bf16", "avx512_fp16": "avx512fp16",
                    "avx_vnni": "avxvnni", "amx_tile": "amx-tile", "amx_int8": "amx-int8",
                    "amx_bf16": "amx-bf16", "amx_fp16": "amx-fp16",
                    "avx512_vbmi2": "avx512vbmi2", "avx512_bitalg": "avx512bitalg",
                    "avx512_vpopcntdq": "avx512vpopcntdq"}
# How a profile's name says which tensor extensions its chip has but this host hides.
_MASKED_TAG = {"amx-tile": "amx", "amx-int8": "amx", "amx-bf16": "amx", "amx-fp16": "amx",
               "avx512bf16": "bf16", "avx512fp16": "fp16", "avx512vnni": "vnni"}


# ----------------------------------------------------------------------------- local CPU


def _cpuinfo_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = line.split(":", 1)[1].split()
            return {_CPUINFO_TO_LLVM.get(f, f) for f in flags}
    return set()


def _cache_sizes() -> dict[str, int]:
    """L1d/L2/L3 sizes in bytes and the cache line size, from sysfs (0 where unknown)."""
    sizes = {"l1d_bytes": 0, "l2_bytes": 0, "l3_bytes": 0, "cache_line_bytes": 64}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(base.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
            line = int((index / "coherency_line_size").read_text().strip())
        except OSError:
            continue
        num = int(size[:-1]) * {"K": 1024, "M": 1024**2}.get(size[-1], 1) if size[-1] in "KM" \
            else int(size)
        if level == "1" and kind == "Data":
            sizes["l1d_bytes"] = num
        elif level in ("2", "3"):
            sizes[f"l{level}_bytes"] = num
        sizes["cache_line_bytes"] = line
    return sizes


def _isa_features(isa: set[str]) -> dict[str, float]:
    vector_bytes = 64 if "avx512f" in isa else 32 if "avx" in isa else 16
    return {
        "vector_unit_bytes": vector_bytes,
        "has_sse42": float("sse4.2" in isa),
        "has_avx": float("avx" in isa),
        "has_avx2": float("avx2" in isa),
        "has_fma": float("fma" in isa),
        "has_avx512f": float("avx512f" in isa),
        "has_avx512vnni": float("avx512vnni" in isa),
        "has_neon": float("neon" in isa),
    }


def llvm_target_isa(target: dict[str, Any]) -> set[str]:
    """The ISA extensions LLVM enables for a CPU target (mcpu + mattr)."""
    from tvm.target import Target, codegen

    return set(codegen.llvm_get_cpu_features(Target(target)))


def masked_extensions(target_isa: set[str], host_isa: set[str]) -> list[str]:
    """The checked extensions an LLVM CPU model implies that this host does not report (none
    when /proc/cpuinfo is unreadable). A hypervisor can hide some: a 2-vCPU Emerald Rapids VM
    of this machine kind reports no AVX512-BF16, AVX512-FP16, AVX-VNNI or AMX."""
    if not host_isa:
        return []
    return sorted((target_isa & set(_CHECKED_ISA)) - host_isa)


def masked_tag(masked: list[str]) -> str:
    """The part of a profile name that says which tensor extensions are hidden, e.g.
    "-no-amx-bf16-fp16" ("" when none that matter to a dtype is): two hosts of one chip that
    differ in them compile different code, so they must not share a profile name."""
    tags = sorted({_MASKED_TAG[f] for f in masked if f in _MASKED_TAG})
    return f"-no-{'-'.join(tags)}" if tags else ""


def shipped_hardware_rows() -> list[tuple[Path, dict[str, Any]]]:
    """(manifest, its hardware row) of every shipped shard, in path order."""
    rows = []
    for manifest in sorted(SHIPPED_DATA.rglob("*.json")):
        try:
            row = json.loads(manifest.read_text())["hardware"]
            json.loads(row["features_json"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a shard manifest (a model's config, a notes file)
        rows.append((manifest, row))
    return rows


@lru_cache(maxsize=1)
def shipped_profile_features() -> dict[str, dict[str, float]]:
    """The hardware features of every profile name in the shipped shards, as measured there."""
    claimed: dict[str, dict[str, float]] = {}
    for _, row in shipped_hardware_rows():
        claimed.setdefault(row["name"], json.loads(row["features_json"]))
    return claimed


def _size_tag(size: float) -> str:
    mib, kib = size / 1024**2, size / 1024
    return f"{mib:g}m" if mib >= 1 and mib == int(mib) else f"{kib:g}k"


def chip_tag(profiles: tuple[HardwareProfile, ...],
             claimed: dict[str, dict[str, float]]) -> str:
    """The part of this chip's profile names that tells it from a shipped chip LLVM names alike
    ("" when none is needed), e.g. "-l3-105m".

    LLVM names a CPU by the family and model numbers it reports, and a hypervisor may report
    one model for different chips: two Intel Xeon VMs of this machine kind, one with 480 MiB of
    L3 at 2.6 GHz and one with 105 MiB at 2.0 GHz, both report family 6 model 167, which LLVM
    calls rocketlake. A profile name must mean one chip, so where a shipped profile of the same
    name was measured on other features, this chip's names carry the cache size that differs
    (the largest level first), or a hash of its features where no cache size does."""
    for profile in profiles:
        differ = differing_features(profile.features, claimed.get(profile.name, profile.features))
        if not differ:
            continue
        for cache in ("l3_bytes", "l2_bytes", "l1d_bytes"):
            if cache in differ:
                return f"-{cache.removesuffix('_bytes')}-{_size_tag(profile.features[cache])}"
        blob = json.dumps(profile.features, sort_keys=True).encode()
        return f"-hw{hashlib.sha1(blob).hexdigest()[:6]}"
    return ""


def _tagged(profiles: tuple[HardwareProfile, ...], cpu: str,
            tag: str) -> tuple[HardwareProfile, ...]:
    """The same profiles, every name `cpu-<cpu><tag>-...` (one chip: all of them carry it)."""
    note = f"; another chip than the shipped data's {cpu} ({tag[1:]})"
    return tuple(dataclasses.replace(p, name=p.name.replace(f"cpu-{cpu}-", f"cpu-{cpu}{tag}-", 1),
                                     description=p.description + note) for p in profiles)


@lru_cache(maxsize=1)
def detect_local_profiles() -> tuple[HardwareProfile, ...]:
    """The local CPU as up to three profiles: full ISA on all cores, full ISA on one core, and
    x86-64-v2 on one core.

    The 1-thread profiles exist because a parallel kernel on a small VM is at the mercy of every
    other process on its cores (median CV ~7% on 2 vCPUs vs ~1-3% single-threaded, see
    docs/collection-performance.md): they give clean ranking labels, and leave a core free."""
    import psutil
    from tvm.target import codegen

    cpu = str(codegen.llvm_get_system_cpu())
    cores = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    caches = _cache_sizes()
    host_isa = _cpuinfo_flags()
    base = {**caches, "max_vthread_extent": 1, "warp_size": 1, "is_gpu": 0.0}
    best = "avx512" if "avx512f" in host_isa else "avx2" if "avx2" in host_isa else \
        "avx" if "avx" in host_isa else "sse42"
    full_target: dict[str, Any] = {"kind": "llvm", "mcpu": cpu, "num-cores": cores}
    full_isa = llvm_target_isa(full_target)
    masked = masked_extensions(full_isa, host_isa)
    isa_name, hidden = best, ""
    if masked:  # a VM may hide extensions its CPU model has: LLVM must not emit them
        full_target["mattr"] = [f"-{f}" for f in masked]
        full_isa = llvm_target_isa(full_target)
        isa_name = best + masked_tag(masked)
        hidden = f"; this host hides {', '.join(masked)}"
    if host_isa:  # trust what the kernel reports
        full_isa &= host_isa
    profiles = [HardwareProfile(
        name=f"cpu-{cpu}-{isa_name}-{cores}t",
        target=full_target,
        description=f"this machine's CPU ({cpu}{hidden}), native ISA ({best}), {cores} threads",
        num_threads=cores,
        features={**base, **_isa_features(full_isa), "num_cores": cores},
        arch="x86_64" if "sse2" in host_isa else cpu,
    )]
    if cores > 1:
        one_core_target = {**full_target, "num-cores": 1}
        profiles.append(HardwareProfile(
            name=f"cpu-{cpu}-{isa_name}-1t",
            target=one_core_target,
            description=f"this machine's CPU ({cpu}{hidden}), native ISA ({best}), 1 thread",
            num_threads=1,
            features={**base, **_isa_features(full_isa), "num_cores": 1},
            arch=profiles[0].arch,
        ))
    if "sse4.2" in host_isa:  # x86 only: the same chip as an older, narrower target
        v2_target = {"kind": "llvm", "mcpu": "x86-64-v2", "num-cores": 1}
        profiles.append(HardwareProfile(
            name=f"cpu-{cpu}-sse42-1t",
            target=v2_target,
            description=f"this machine's CPU ({cpu}) restricted to x86-64-v2 (SSE4.2, no AVX), "
                        "1 thread",
            num_threads=1,
            features={**base, **_isa_features(llvm_target_isa(v2_target)), "num_cores": 1},
            arch="x86_64",
        ))
    tag = chip_tag(tuple(profiles), shipped_profile_features())
    return _tagged(tuple(profiles), cpu, tag) if tag else tuple(profiles)


# ----------------------------------------------------------------------------- declared


def _gpu_features(target: dict[str, Any]) -> dict[str, float]:
    return {
        "is_gpu": 1.0,
        "num_cores": float(target.get("num_sm", 0) or 0),
        "max_shared_memory_per_block": float(target.get("max_shared_memory_per_block", 0)),
        "max_local_memory_per_block": float(target.get("max_local_memory_per_block", 2**31 - 1)),
        "max_threads_per_block": float(target.get("max_threads_per_block",
                                              target.get("max_num_threads", 0))),
        "max_vthread_extent": 8.0,
        "warp_size": float(target.get("thread_warp_size", 32)),
        "l2_bytes": float(target.get("l2_cache_size_bytes", 0)),
        "cache_line_bytes": 128.0,
        "vector_unit_bytes": 16.0,
    }


def _declared_profile(entry: dict[str, Any], source: Path) -> HardwareProfile:
    from tvm.target import Target

    from core.tvm_env import to_plain_json

    name = entry.get("name")
    if not name or "target" not in entry:
        raise TenforgeError(f"{source}: every [[profile]] needs `name` and `target` (got {entry})")
    try:
        target = Target(entry["target"]).export()
    except Exception as exc:  # TVM raises a variety of errors for bad targets
        raise TenforgeError(f"{source}: profile {name!r} has an invalid TVM target "
                            f"{entry['target']!r}: {str(exc).splitlines()[0]}") from None
    target = to_plain_json(target)  # TVM Map/Array -> dict/list
    kind = target["kind"]
    if kind == "llvm":
        isa = llvm_target_isa(target)
        features = {**_cache_sizes(), "max_vthread_extent": 1, "warp_size": 1, "is_gpu": 0.0,
                    **_isa_features(isa), "num_cores": float(target.get("num-cores", 1))}
    else:
        features = _gpu_features(target)
    features.update(entry.get("features", {}))
    settings = MeasureSettings(**entry.get("measure", {}))
    return HardwareProfile(
        name=name,
        target=target,
        description=entry.get("description", ""),
        host=entry.get("host", "local"),
        runner=entry.get("runner", {"kind": "local"}),
        num_threads=int(entry.get("num_threads", target.get("num-cores", 1))),
        features=features,
        measure=settings,
        arch=str(target.get("arch", entry.get("arch", ""))),
    )


def load_declared_profiles(path: Path | None = None) -> tuple[HardwareProfile, ...]:
    """Profiles from hardware.toml (missing file: none). Parsed once per process and file
    version: every later call is a dictionary lookup."""
    path = Path(path or os.environ.get("TENFORGE_HARDWARE", DEFAULT_PROFILE_FILE))
    if not path.exists():
        return ()
    return _parse_declared(str(path.resolve()), path.stat().st_mtime_ns)


@lru_cache(maxsize=8)
def _parse_declared(path_text: str, _mtime_ns: int) -> tuple[HardwareProfile, ...]:
    path = Path(path_text)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise TenforgeError(f"{path}: not valid TOML ({exc})") from None
    return tuple(_declared_profile(e, path) for e in data.get("profile", []))


def all_profiles() -> dict[str, HardwareProfile]:
    """Every known profile by name (declared ones win over detected ones of the same name)."""
    profiles = {p.name: p for p in detect_local_profiles()}
    profiles.update({p.name: p for p in load_declared_profiles()})
    return profiles


# Names that mean "this machine", whatever its CPU: tests, deployments and users write these
# instead of a CPU's profile name. local: native ISA, all cores; local-1t: native ISA, one
# thread (the first one-thread profile detected: the native one comes before x86-64-v2).
ALIASES = ("local", "local-1t")


def _aliased(name: str) -> HardwareProfile:
    detected = detect_local_profiles()
    if name == "local":
        return detected[0]
    return next(p for p in detected if p.num_threads == 1)


def profile_name(name: str) -> str:
    """An alias resolved to this machine's profile name; any other name as given (data in a
    store may come from machines this one has never seen)."""
    return _aliased(name).name if name in ALIASES else name


def profile_names(names: list[str] | None) -> list[str] | None:
    return None if names is None else [profile_name(n) for n in names]


def resolve_profile(name: str) -> HardwareProfile:
    """The profile called `name` (`local` = this machine's native CPU profile on all cores,
    `local-1t` = the same on one core)."""
    if name in ALIASES:
        return _aliased(name)
    profiles = all_profiles()
    if name not in profiles:
        raise TenforgeError(f"unknown hardware profile {name!r}; known here: "
                            f"{', '.join([*ALIASES, *sorted(profiles)])} "
                            f"(declare more in {DEFAULT_PROFILE_FILE.name})")
    return profiles[name]


def check_runnable_here(profile: HardwareProfile) -> None:
    """Refuse a profile this machine cannot measure with its local runner."""
    if profile.runner_kind == "rpc":
        return  # the remote device runs it; reachability is checked when connecting
    if profile.runner_kind != "local":
        raise TenforgeError(f"profile {profile.name!r}: runner kind {profile.runner_kind!r} "
                            "is not one of: local, rpc")
    if profile.target_kind == "cuda":
        import tvm

        if not tvm.cuda(0).exist:
            raise TenforgeError(f"profile {profile.name!r} targets CUDA but this machine has no "
                                "CUDA device; run it from a worker on the GPU machine, or pick a "
                                "CPU profile (`tenforge hardware list`)")
        return
    if profile.target_kind != "llvm":
        raise TenforgeError(f"profile {profile.name!r}: target kind {profile.target_kind!r} "
                            "cannot be measured locally; give it an rpc runner")
    host_isa = _cpuinfo_flags()
    missing = sorted((llvm_target_isa(profile.target) - host_isa) & set(_CHECKED_ISA))
    if host_isa and missing:
        raise TenforgeError(f"profile {profile.name!r} needs {', '.join(missing)}, which this "
                            f"machine's CPU lacks; runnable here: "
                            f"{', '.join(p.name for p in detect_local_profiles())}")


def this_host() -> str:
    return socket.gethostname()
