"""prefect.yaml: every deployment's entrypoint loads and its parameters validate."""

import yaml
from prefect.flows import load_flow_from_entrypoint

from tasks.hardware import resolve_profile

from tests.conftest import ROOT


def test_deployments_load_and_their_parameters_validate(monkeypatch):
    monkeypatch.chdir(ROOT)
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    assert spec["deployments"]
    for deployment in spec["deployments"]:
        flow = load_flow_from_entrypoint(deployment["entrypoint"])
        flow.validate_parameters(deployment.get("parameters") or {})
        if "hardware" in (deployment.get("parameters") or {}):
            profile = resolve_profile(deployment["parameters"]["hardware"])
            assert deployment["work_pool"]["name"] == profile.name  # one pool per hardware
