"""A tuned network as a library to deploy (`tenforge compile`, `retune --out`).

The network is imported again, compiled with the schedules of one retune's MetaSchedule
database (tasks/measure/network.py: the path that does apply them), and written to a folder:

    model.so        the compiled network (`export_library`), loadable with the TVM runtime alone
    params.bin      its weights (TVM's parameter format: plain tensors, no code, no pickle)
    manifest.json   input and output signature, hardware, TVM version, tuning id, latencies
    run_model.py    ten lines that load and run it

The folder is written beside its destination and renamed into place last: a failure leaves
nothing behind. Before the rename the library runs once on this machine's runner, as it will
run deployed, and that latency goes into the manifest beside the one measured at tuning time.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from core.errors import TenforgeError
from core.spec import Spec
from storage import queries
from storage.ms_database import MS_DATABASE_FILES
from storage.store import Store
from tasks.hardware import check_runnable_here, resolve_profile
from tasks.sources import Workload, resolve_workload

LIBRARY, WEIGHTS, MANIFEST, EXAMPLE = "model.so", "params.bin", "manifest.json", "run_model.py"

RUN_EXAMPLE = '''"""Run the compiled network with the TVM runtime alone: python run_model.py"""
import json, pathlib
import numpy as np
import tvm
from tvm.runtime.vm import VirtualMachine
here = pathlib.Path(__file__).resolve().parent
manifest = json.loads((here / "manifest.json").read_text())
vm = VirtualMachine(tvm.runtime.load_module(str(here / manifest["library"])), tvm.cpu())
weights = tvm.runtime.load_param_dict_from_file(str(here / manifest["weights"]["file"]))
inputs = [tvm.runtime.tensor(np.random.rand(*i["shape"]).astype(i["dtype"]))
          for i in manifest["inputs"]]
out = vm["main"](*inputs, *[weights[name] for name in manifest["weights"]["names"]])
print([o.numpy().shape for o in ([out] if hasattr(out, "shape") else out)])
'''


@dataclass(frozen=True)
class CompileSpec(Spec):
    """A validated compile request: which tuning run's schedules, and where the result goes."""

    network: str  # the store's name for it
    workload: Workload  # where it comes from (tasks/sources.py)
    hardware: str
    tuning_id: str
    out: str
    batch_size: int
    input_size: int
    network_hash: str
    graph: str
    database_dir: str
    cost_model: str
    tuned_latency_s: float


def check_out_dir(out: str) -> Path:
    """The destination: a new folder (or an empty one) whose parent exists."""
    path = Path(out).expanduser().resolve()
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise TenforgeError(f"--out {out} already exists and is not an empty folder; name a "
                            "new folder (nothing is overwritten)")
    if not path.parent.is_dir():
        raise TenforgeError(f"--out {out}: its parent folder {path.parent} does not exist")
    return path


def validate_compile(db: str | None, network: str, hardware: str, tuning_id: str | None,
                     out: str) -> CompileSpec:
    """Check the request before any work: the network reference, the store, the profile, the
    tuning run (given, or the fastest of `network` on `hardware`), its database and the
    destination."""
    from tasks.validation import check_db_path

    profile = resolve_profile(hardware)
    check_runnable_here(profile)  # the library is timed here before it is handed over
    path = check_db_path(db)
    destination = check_out_dir(out)
    workload = resolve_workload(network, path)
    network = workload.name
    if not Path(path).exists():
        raise TenforgeError(f"store {path} does not exist; retune {network} into it first "
                            f"(`tenforge retune {network} --hardware {hardware}`)")
    with Store(path, read_only=True) as store:
        chosen = tuning_id or queries.fastest_tuning_id(store, network, profile.name)
        row = queries.tuning_run(store, chosen) if chosen else None
    if tuning_id and row is None:
        raise TenforgeError(f"no tuning run {tuning_id!r} in {path}; `tenforge report` lists "
                            "them (or leave --tuning-id out for the fastest)")
    if row is None:
        raise TenforgeError(f"no retune of {network} on {profile.name} in {path}; run "
                            f"`tenforge retune {network} --hardware {hardware}` first")
    if (row["network"], row["hardware"]) != (network, profile.name):
        raise TenforgeError(f"tuning run {chosen} tuned {row['network']} on {row['hardware']}, "
                            f"not {network} on {profile.name}; pick one of {network} on "
                            f"{profile.name} or leave --tuning-id out")
    missing = [name for name in MS_DATABASE_FILES
               if not (Path(row["database_dir"]) / name).is_file()]
    if missing:
        raise TenforgeError(f"tuning run {chosen}'s database {row['database_dir']} lacks "
                            f"{', '.join(missing)}; retune {network} again")
    return CompileSpec(db=path, network=network, workload=workload, hardware=profile.name,
                       tuning_id=chosen,
                       out=str(destination), batch_size=row["batch_size"],
                       input_size=row["input_size"], network_hash=row["network_hash"],
                       graph=row.get("graph") or "exported",
                       database_dir=row["database_dir"], cost_model=row["cost_model"],
                       tuned_latency_s=row["tuned_latency_s"])


def _signature(shapes_and_dtypes: list[tuple[Any, Any]]) -> list[dict[str, Any]]:
    return [{"shape": [int(d) for d in shape], "dtype": str(dtype)}
            for shape, dtype in shapes_and_dtypes]


def compile_deployable(spec: CompileSpec, report: Callable[[str], None] = print
                       ) -> dict[str, Any]:
    """Compile `spec.network` with its tuning run's schedules into `spec.out`; returns the
    manifest."""
    from core.tvm_env import load_tvm, structural_hash_hex, tvm_version
    from tasks.measure import Measurer, WorkerFailure
    from tasks.measure.network import compile_network
    from tasks.workloads import import_with_weights

    profile = resolve_profile(spec.hardware)
    tvm = load_tvm(profile.target)
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    fused, weights, inputs = import_with_weights(spec.workload, spec.batch_size, spec.input_size,
                                                 spec.graph)
    if structural_hash_hex(fused) != spec.network_hash:
        raise TenforgeError(f"{spec.network} imports differently from when tuning run "
                            f"{spec.tuning_id} tuned it (its code or TVM changed); retune it")
    database = ms.database.JSONDatabase(work_dir=spec.database_dir, allow_missing=False)
    executable, applied = compile_network(tvm, fused, database, Target(profile.target))
    scheduled = sum(1 for f in applied.functions.values()
                    if f.attrs is not None and bool(f.attrs.get("tirx.is_scheduled", False)))
    report(f"compiled {spec.network} with tuning run {spec.tuning_id}'s schedules "
           f"({scheduled} scheduled functions)")

    out = Path(spec.out)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        executable.export_library(str(staging / LIBRARY))
        names = [f"p{i}" for i in range(len(weights))]
        tvm.runtime.save_param_dict_to_file(
            {name: tvm.runtime.tensor(w) for name, w in zip(names, weights)},
            str(staging / WEIGHTS))
        input_signature = _signature(inputs)
        with Measurer(profile, build_workers=0) as measurer:
            try:
                timed = measurer.run_library(str(staging / LIBRARY), str(staging / WEIGHTS),
                                             input_signature, names)
            except (WorkerFailure, RuntimeError) as error:
                raise TenforgeError(f"the compiled {spec.network} failed to run here "
                                    f"({error}); nothing was written") from None
        here_s = sorted(timed["run_secs"])[len(timed["run_secs"]) // 2]
        manifest = {
            "network": spec.network, "source": spec.workload.kind,
            "content_hash": spec.workload.content_hash or None,
            "batch_size": spec.batch_size,
            "input_size": spec.input_size, "graph": spec.graph,
            "inputs": [{"name": f"input{i}", **sig} for i, sig in enumerate(input_signature)],
            "outputs": timed["outputs"],
            "library": LIBRARY, "weights": {"file": WEIGHTS, "names": names},
            "hardware": profile.name, "target": profile.target,
            "threads": profile.num_threads, "tvm_version": tvm_version(),
            "tuning_id": spec.tuning_id, "cost_model": spec.cost_model,
            "scheduled_functions": scheduled,
            "tuned_latency_ms": round(spec.tuned_latency_s * 1e3, 4),
            "latency_here_ms": round(here_s * 1e3, 4),
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        (staging / EXAMPLE).write_text(RUN_EXAMPLE)
        if out.exists():
            out.rmdir()  # checked empty; a non-empty one is never replaced
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    report(f"wrote {out}: {LIBRARY}, {WEIGHTS}, {MANIFEST}, {EXAMPLE}; latency here "
           f"{manifest['latency_here_ms']} ms (tuning run measured "
           f"{manifest['tuned_latency_ms']} ms)")
    return manifest
