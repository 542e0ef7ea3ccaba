"""Hardware profiles: two honest local CPU profiles, declared ones from a file, clear refusals."""

import dataclasses

import pytest

from core.errors import TenforgeError
from core.hardware import HARDWARE_FEATURE_NAMES, MeasureSettings
from tasks import hardware
from tasks.hardware import (
    check_runnable_here,
    detect_local_profiles,
    load_declared_profiles,
    resolve_profile,
)

DECLARED = """
[[profile]]
name = "gpu-h100"
description = "NVIDIA H100 by TVM tag"
target = "nvidia/nvidia-h100"

[[profile]]
name = "board-rpc"
target = { kind = "llvm", mtriple = "aarch64-linux-gnu", mattr = ["+neon"], num-cores = 4 }
runner = { kind = "rpc", tracker = "127.0.0.1:9190", key = "board" }
measure = { run_timeout_s = 60.0 }

[[profile]]
name = "avx512-box"
target = { kind = "llvm", mcpu = "skylake-avx512", num-cores = 8 }
"""


def test_this_machine_offers_two_distinct_cpu_profiles():
    profiles = detect_local_profiles()
    assert len(profiles) >= 2
    full, narrow = profiles[0], profiles[-1]
    assert full.name != narrow.name
    assert full.target != narrow.target
    assert full.feature_vector() != narrow.feature_vector()
    assert narrow.num_threads == 1 and narrow.features["has_avx"] == 0.0
    assert len(full.feature_vector()) == len(HARDWARE_FEATURE_NAMES)
    assert len({p.name for p in profiles}) == len(profiles)
    assert len({tuple(p.feature_vector()) for p in profiles}) == len(profiles)
    for profile in profiles:
        check_runnable_here(profile)
    assert resolve_profile("local") == full


def test_unknown_profile_names_the_choices():
    with pytest.raises(TenforgeError,
                       match="unknown hardware profile .nope.; known here: local, local-1t"):
        resolve_profile("nope")


def test_aliases_name_this_machine_whatever_its_cpu():
    from tasks.hardware import profile_name, profile_names

    detected = detect_local_profiles()
    assert resolve_profile("local") == detected[0]
    assert resolve_profile("local-1t").num_threads == 1
    assert profile_name("local-1t") == resolve_profile("local-1t").name
    # a name of data from another machine stays as it is
    assert profile_names(["local", "cpu-other-avx2-1t"]) == [detected[0].name,
                                                             "cpu-other-avx2-1t"]


def test_declared_profiles(tmp_path, monkeypatch):
    path = tmp_path / "hardware.toml"
    path.write_text(DECLARED)
    monkeypatch.setenv("TENFORGE_HARDWARE", str(path))
    gpu, board, wide = load_declared_profiles()
    assert gpu.target_kind == "cuda" and gpu.features["is_gpu"] == 1.0
    assert gpu.features["max_shared_memory_per_block"] == 49152
    assert gpu.features["warp_size"] == 32 and gpu.arch.startswith("sm_90")
    assert board.runner_kind == "rpc" and board.measure.run_timeout_s == 60.0
    assert board.features["has_neon"] == 1.0
    check_runnable_here(board)  # an RPC device is checked when connecting, not here
    assert resolve_profile("gpu-h100") == gpu


def test_targets_this_machine_cannot_run_are_refused(tmp_path, monkeypatch):
    path = tmp_path / "hardware.toml"
    path.write_text(DECLARED)
    monkeypatch.setenv("TENFORGE_HARDWARE", str(path))
    import tvm

    if not tvm.cuda(0).exist:
        with pytest.raises(TenforgeError, match="no CUDA device"):
            check_runnable_here(resolve_profile("gpu-h100"))
    if "avx512f" not in hardware._cpuinfo_flags():
        with pytest.raises(TenforgeError, match="needs avx512"):
            check_runnable_here(resolve_profile("avx512-box"))


def test_a_bad_profile_file_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "hardware.toml"
    monkeypatch.setenv("TENFORGE_HARDWARE", str(path))
    path.write_text("[[profile]\nname=")
    with pytest.raises(TenforgeError, match="not valid TOML"):
        load_declared_profiles()
    path.write_text('[[profile]]\nname = "x"\ntarget = { kind = "no-such-kind" }\n')
    with pytest.raises(TenforgeError, match="invalid TVM target"):
        load_declared_profiles()


def test_repeats_follow_tenset_by_flops():
    settings = MeasureSettings()
    assert [settings.repeats_for(f) for f in (1e6, 1e8, 1e9, 3e9)] == [10, 8, 6, 4]
    assert MeasureSettings(repeat=3).repeats_for(1e6) == 3
    assert settings.key() == MeasureSettings().key() != MeasureSettings(repeat=3).key()


def test_extensions_a_vm_hides_are_masked_out_of_the_local_target(monkeypatch):
    """A hypervisor may hide extensions the CPU model has (a 2-vCPU Emerald Rapids VM reports no
    AVX512-BF16, AVX512-FP16 or AMX): the detected target must tell LLVM not to emit them, so the
    machine's own profiles stay runnable, and must not share a name with the full chip's."""
    real_flags = hardware._cpuinfo_flags()
    if "sse4.2" not in real_flags:
        pytest.skip("needs an x86 host (/proc/cpuinfo with sse4_2)")
    hide = "avx512vnni" if "avx512vnni" in real_flags else "fma"
    if hide not in hardware.llvm_target_isa(detect_local_profiles()[0].target):
        pytest.skip(f"this CPU's LLVM model does not imply {hide}")
    unmasked = detect_local_profiles()[0]
    monkeypatch.setattr(hardware, "_cpuinfo_flags", lambda: real_flags - {hide})
    detect_local_profiles.cache_clear()
    try:
        full = detect_local_profiles()[0]
        assert f"-{hide}" in full.target["mattr"]
        assert hide not in hardware.llvm_target_isa(full.target)
        assert f"hides {hide}" in full.description or hide in full.description
        for profile in detect_local_profiles():
            check_runnable_here(profile)
        chip = {k: v for k, v in unmasked.target.items() if k != "mattr"}  # all the mcpu has
        with pytest.raises(TenforgeError, match=f"needs .*{hide}"):
            check_runnable_here(dataclasses.replace(unmasked, target=chip))
        assert full.name != unmasked.name or hide not in hardware._MASKED_TAG
    finally:
        detect_local_profiles.cache_clear()


def test_the_name_says_which_tensor_extensions_are_hidden():
    assert hardware.masked_tag([]) == ""
    assert hardware.masked_tag(["amx-bf16", "amx-int8", "amx-tile", "avx512bf16",
                                "avx512fp16", "avxvnni"]) == "-no-amx-bf16-fp16"
    assert hardware.masked_tag(["avxvnni"]) == ""  # avx512vnni does the same and is there
    assert hardware.masked_extensions({"avx2", "avx512bf16", "movdiri"}, {"avx2"}) == [
        "avx512bf16"]  # only extensions tensor code may use
    assert hardware.masked_extensions({"avx512bf16"}, set()) == []  # no cpuinfo: nothing known


def _cpu(name: str, **features: float):
    from core.hardware import HardwareProfile

    base = {"l1d_bytes": 49152, "l2_bytes": 2 * 1024**2, "l3_bytes": 480 * 1024**2,
            "has_avx512f": 1.0, "num_cores": 1}
    return HardwareProfile(name=name, target={"kind": "llvm"}, features={**base, **features})


def test_a_chip_that_a_shipped_name_does_not_describe_is_tagged_by_the_cache_that_differs():
    """Two Xeon VMs (480 and 105 MiB of L3) both report model 167, which LLVM calls rocketlake:
    the second must not measure under the first one's name."""
    shipped = {"cpu-x-avx512-1t": _cpu("cpu-x-avx512-1t").features}
    assert hardware.chip_tag((_cpu("cpu-x-avx512-1t"),), shipped) == ""  # the same chip
    assert hardware.chip_tag((_cpu("cpu-new-avx512-1t", l3_bytes=1.0),), shipped) == ""  # new
    here = (_cpu("cpu-x-avx512-2t", num_cores=2), _cpu("cpu-x-avx512-1t", l3_bytes=105 * 1024**2))
    assert hardware.chip_tag(here, shipped) == "-l3-105m"
    assert hardware.chip_tag((_cpu("cpu-x-avx512-1t", l2_bytes=1280 * 1024),), shipped) == \
        "-l2-1280k"
    other = hardware.chip_tag((_cpu("cpu-x-avx512-1t", has_avx512f=0.0),), shipped)
    assert other.startswith("-hw") and len(other) == 9
    # a feature appended after the shipped row was written is not a difference
    assert hardware.chip_tag((_cpu("cpu-x-avx512-1t", has_neon=0.0),), shipped) == ""


def test_every_detected_profile_of_another_chip_carries_the_tag(monkeypatch):
    def detected_with(claims):
        monkeypatch.setattr(hardware, "shipped_profile_features", lambda: claims)
        detect_local_profiles.cache_clear()
        return detect_local_profiles()

    try:
        untagged = detected_with({})  # no shipped chip claims this CPU's names
        one_thread = untagged[1]
        bigger = {**one_thread.features, "l3_bytes": one_thread.features["l3_bytes"] * 2 + 1024**2}
        tagged = detected_with({one_thread.name: bigger})
        tag = f"-l3-{hardware._size_tag(one_thread.features['l3_bytes'])}"
        cpu = untagged[0].target["mcpu"]  # the native one (the last may be x86-64-v2)
        assert [p.name for p in tagged] == [p.name.replace(f"cpu-{cpu}-", f"cpu-{cpu}{tag}-")
                                            for p in untagged]
        assert all("another chip" in p.description for p in tagged)
        assert resolve_profile("local-1t") == tagged[1]
        assert detected_with({one_thread.name: dict(one_thread.features)}) == untagged  # same chip
    finally:
        detect_local_profiles.cache_clear()


def test_a_profile_name_means_one_chip_in_the_shipped_data():
    import json

    from core.hardware import differing_features

    first: dict[str, tuple[str, dict]] = {}
    for manifest, row in hardware.shipped_hardware_rows():
        features = json.loads(row["features_json"])
        where, seen = first.setdefault(row["name"], (str(manifest), features))
        assert not differing_features(seen, features), \
            f"{manifest} and {where} measure different chips as {row['name']}"
    assert len(first) >= 5
