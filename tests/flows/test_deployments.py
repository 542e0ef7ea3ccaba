"""Deployments fit the machine: prefect.yaml names no machine's hardware; the per-profile
templates expand once per profile this machine has (detected and declared), every entrypoint
loads and every parameter set validates, whatever CPU runs the tests."""

import re

import pytest
from prefect.flows import load_flow_from_entrypoint

from core.errors import TenforgeError
from tasks.hardware import detect_local_profiles, load_declared_profiles
from tenforge.deployments import (
    PREFECT_FILE,
    machine_deployments,
    machine_profiles,
    pools_of,
    read_spec,
)
from tests.conftest import ROOT

PER_PROFILE = ("collect", "retune", "transfer", "onboard")


def test_prefect_yaml_names_no_machines_hardware():
    text = PREFECT_FILE.read_text()
    assert not re.search(r"cpu-\w+-(avx512|avx2|avx|sse42)", text)
    assert all(d["work_pool"]["name"] == "train" for d in read_spec()["deployments"])


def test_every_deployment_of_this_machine_loads_and_validates(monkeypatch):
    monkeypatch.chdir(ROOT)
    profiles = machine_profiles()
    detected = [p.name for p in detect_local_profiles()]
    assert [p.name for p in profiles][:len(detected)] == detected
    spec = machine_deployments(profiles)
    names = {d["name"] for d in spec["deployments"]}
    for profile in profiles:
        assert {f"{kind}-{profile.name}" for kind in PER_PROFILE} <= names
    for deployment in spec["deployments"]:
        flow = load_flow_from_entrypoint(deployment["entrypoint"])
        flow.validate_parameters(deployment.get("parameters") or {})
        hardware = (deployment.get("parameters") or {}).get("hardware")
        if hardware is not None:  # one pool per profile, named after it
            assert deployment["work_pool"]["name"] == hardware
            assert "{" not in deployment["description"]
    assert set(pools_of(spec)) == {"train", *(p.name for p in profiles)}
    retunes = [d for d in spec["deployments"] if d["entrypoint"] == "flows/retune.py:retune"]
    assert len(retunes) == len(profiles) and all(d["schedules"][0]["cron"] for d in retunes)


def test_a_declared_profile_brings_its_own_deployments(tmp_path, monkeypatch):
    """Another CPU, simulated by a declaration: it gets its collect, retune, transfer and
    onboard; a profile this machine cannot run is left out, and refused when asked for."""
    declared = tmp_path / "hardware.toml"
    declared.write_text('[[profile]]\nname = "cpu-generic-1t"\n'
                        'target = { kind = "llvm", mcpu = "x86-64", num-cores = 1 }\n\n'
                        '[[profile]]\nname = "gpu-h100"\ntarget = "nvidia/nvidia-h100"\n')
    monkeypatch.setenv("TENFORGE_HARDWARE", str(declared))
    assert {p.name for p in load_declared_profiles()} == {"cpu-generic-1t", "gpu-h100"}
    skipped = []
    profiles = machine_profiles(report=skipped.append)
    names = [p.name for p in profiles]
    assert "cpu-generic-1t" in names
    import tvm

    if not tvm.cuda(0).exist:
        assert "gpu-h100" not in names and any("gpu-h100" in s for s in skipped)
        with pytest.raises(TenforgeError, match="cannot serve pool 'gpu-h100' on this machine"):
            machine_profiles(["gpu-h100"])
    spec = machine_deployments(machine_profiles(["cpu-generic-1t"]), shared=False)
    assert sorted(d["name"] for d in spec["deployments"]) == sorted(
        f"{kind}-cpu-generic-1t" for kind in PER_PROFILE)
    assert pools_of(spec) == ["cpu-generic-1t"]
