"""The deployments a machine serves, made from prefect.yaml for the hardware it really has.

prefect.yaml holds the deployments that need no particular hardware (`deployments:`, on the
`train` pool) and templates for those that must run where the hardware is
(`definitions.per_profile`). `machine_deployments` expands each template once per profile of
this machine, on a pool named after the profile, so no file in the repository names one
machine's CPU, and a machine that joins the fleet brings its own profiles' deployments.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Sequence

from core.errors import TenforgeError

PROJECT_ROOT = Path(__file__).resolve().parents[1]
PREFECT_FILE = PROJECT_ROOT / "prefect.yaml"


def read_spec(path: Path = PREFECT_FILE) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text())


def machine_profiles(names: list[str] | None = None, report=print) -> list[Any]:
    """The profiles this machine serves: every detected one and every declared one it can run
    (an rpc profile counts: the device is reached from here). `names` picks some of them; a
    name this machine cannot run is refused in one line."""
    from tasks.hardware import all_profiles, check_runnable_here, resolve_profile

    if names:
        chosen = [resolve_profile(n) for n in names]  # an unknown name fails here
        for profile in chosen:
            try:
                check_runnable_here(profile)
            except TenforgeError as exc:
                raise TenforgeError(f"cannot serve pool {profile.name!r} on this machine: "
                                    f"{exc}") from None
        return chosen
    served = []
    for profile in all_profiles().values():
        try:
            check_runnable_here(profile)
        except TenforgeError as exc:
            report(f"not serving {profile.name}: {exc}")
            continue
        served.append(profile)
    return served


def _fill(value: Any, fields: dict[str, str]) -> Any:
    """Replace {profile} and {description} in every string of a template."""
    if isinstance(value, str):
        for key, text in fields.items():
            value = value.replace("{" + key + "}", text)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, fields) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, fields) for v in value]
    return value


RETUNE_TEMPLATE = "retune-{profile}"


def profile_deployments(spec: dict[str, Any], profiles: list[Any],
                        networks: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every per-profile template, once per profile, on the profile's pool; and the retune
    template once more per registered user network (`tenforge networks add`)."""
    templates = (spec.get("definitions") or {}).get("per_profile") or []
    retune = [t for t in templates if t.get("name") == RETUNE_TEMPLATE]
    out = []
    for profile in profiles:
        fields = {"profile": profile.name,
                  "description": profile.description or f"hardware profile {profile.name}"}
        per_network = []
        for network, template in ((n, t) for n in networks for t in retune):
            deployment = copy.deepcopy(template)
            deployment["name"] = f"retune-{network}-{{profile}}"
            deployment["parameters"] = {**deployment.get("parameters", {}), "network": network}
            per_network.append(deployment)
        for template in [*templates, *per_network]:
            deployment = _fill(copy.deepcopy(template), fields)
            deployment["work_pool"] = {"name": profile.name, "work_queue_name": "default"}
            out.append(deployment)
    return out


def registered_networks(db: str | None = None, report=print) -> list[str]:
    """The user networks registered in the service's store (none if it cannot be read now)."""
    from storage import queries
    from storage.store import Store
    from tasks.validation import check_db_path

    path = check_db_path(db)
    if not Path(path).exists():
        return []
    try:
        with Store(path, read_only=True) as store:
            return [row[0] for row in queries.registered_workloads(store)]
    except Exception as exc:  # noqa: BLE001 - a store another process holds: say so, go on
        report(f"registered networks not read from {path} ({type(exc).__name__}); their "
               "retune deployments are left out")
        return []


def machine_deployments(profiles: list[Any], shared: bool = True,
                        spec: dict[str, Any] | None = None,
                        networks: Sequence[str] | None = None) -> dict[str, Any]:
    """A prefect.yaml for this machine: the per-profile deployments of `profiles` (with a
    retune per registered network: `networks`, default those of the default store), plus the
    hardware-independent ones when `shared` (the server's machine)."""
    spec = copy.deepcopy(spec or read_spec())
    networks = registered_networks() if networks is None else networks
    spec["deployments"] = [*(spec.get("deployments") or [] if shared else []),
                           *profile_deployments(spec, profiles, networks)]
    return spec


def pools_of(spec: dict[str, Any]) -> list[str]:
    return sorted({d["work_pool"]["name"] for d in spec["deployments"]})


def write_prefect_file(spec: dict[str, Any], path: Path) -> Path:
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    header = ("# Generated by `tenforge service` from prefect.yaml for this machine's hardware "
              "profiles; do not edit (edit prefect.yaml).\n")
    class _NoAliases(yaml.SafeDumper):  # every deployment written out in full, no anchors
        def ignore_aliases(self, data: Any) -> bool:
            return True

    path.write_text(header + yaml.dump(spec, Dumper=_NoAliases, sort_keys=False))
    return path
