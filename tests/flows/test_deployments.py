"""prefect.yaml: every deployment's entrypoint loads and its parameters validate."""

import re

import yaml
from prefect.flows import load_flow_from_entrypoint

from tasks.hardware import all_profiles

from tests.conftest import ROOT


def test_deployments_load_and_their_parameters_validate(monkeypatch):
    monkeypatch.chdir(ROOT)
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    assert spec["deployments"]
    for deployment in spec["deployments"]:
        flow = load_flow_from_entrypoint(deployment["entrypoint"])
        flow.validate_parameters(deployment.get("parameters") or {})
        hardware = (deployment.get("parameters") or {}).get("hardware")
        measures = deployment["entrypoint"].startswith(("flows/collect", "flows/retune"))
        if isinstance(hardware, str) and measures:
            assert deployment["work_pool"]["name"] == hardware  # one pool per hardware
            # This machine's profile, or (on a machine with another CPU) a detected-CPU name.
            assert hardware in all_profiles() or re.fullmatch(
                r"cpu-[\w.]+-(avx512|avx2|avx|sse42)-\d+t", hardware), hardware


def test_every_profile_has_a_scheduled_retune():
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    retunes = {d["parameters"]["hardware"]: d for d in spec["deployments"]
               if d["entrypoint"] == "flows/retune.py:retune"}
    collects = {d["parameters"]["hardware"] for d in spec["deployments"]
                if d["entrypoint"] == "flows/collect.py:collect"}
    assert set(retunes) == collects
    assert all(d["schedules"][0]["cron"] for d in retunes.values())
