"""onboard through the real CLI on a copy of the seed: this machine's profile (new to the seed)
gets a calibration set chosen across operator kinds, a fine-tuned model whose parent is a
pre-trained one, and the three-way accuracy table; bad requests are refused in one line."""

import json
import shutil

import pytest

from storage.store import Store
from tasks.hardware import resolve_profile
from tasks.onboard import PER_TASK, choose_calibration, operator_kind
from tests.conftest import assert_refused, run_cli, run_cli_table


@pytest.fixture
def store(pretrained_store, tmp_path):
    """The shared pre-trained store (tests/conftest.py): onboard fine-tunes its model, the
    newest pre-trained one that never saw this machine's profile."""
    db = tmp_path / "store.duckdb"
    shutil.copy(pretrained_store[0], db)
    return str(db)


def test_operator_kinds():
    assert operator_kind("fused_conv2d_add_relu_3") == "conv2d_add_relu"
    assert operator_kind("fused_matmul") == "matmul"
    # TVM 0.27 numbers every operator of a fused chain
    assert operator_kind("fused_conv2d31_subtract13_divide13_expand_dims10_multiply26_"
                         "expand_dims10_add37") == \
        "conv2d_subtract_divide_expand_dims_multiply_expand_dims_add"
    assert operator_kind("fused_matmul4_add3") == operator_kind("fused_matmul_add") == \
        "matmul_add"
    assert operator_kind("conv3d2_add") == "conv3d_add" and operator_kind("matmul2") == "matmul"


def test_a_cpu_pretrains_on_the_stores_other_cpus_not_its_gpus(seed_store):
    from tasks.training import source_profiles_for

    with Store(seed_store, read_only=True) as store:
        kinds = dict(store.query("SELECT name, target_kind FROM hardware"))
    assert {"llvm", "cuda"} <= set(kinds.values())  # the seed holds a GPU's data too
    here = resolve_profile("local")
    sources = source_profiles_for(seed_store, here.name)
    assert sources and here.name not in sources
    assert {kinds[s] for s in sources} == {"llvm"}
    assert set(sources) == {n for n, k in kinds.items() if k == "llvm"} - {here.name}


def test_the_calibration_set_spans_operator_kinds_and_each_tasks_range(seed_store):
    target = resolve_profile("local")
    chosen = choose_calibration(seed_store, "never-measured", target.target_kind, 96)
    assert len(chosen) == 96 // PER_TASK
    with Store(seed_store, read_only=True) as store:
        names = {tid: name for tid, name in store.query("SELECT task_id, task_name FROM tasks")}
        for pick in chosen:
            latencies = sorted(lat for (lat,) in store.query(
                "SELECT m.mean_latency_s FROM measurements m JOIN candidates c USING "
                "(candidate_id) JOIN hardware h USING (hardware_id) WHERE c.task_id = ? AND "
                "h.name = ? AND m.error_kind IS NULL", [pick["task_id"], pick["source"]]))
            picked = sorted(lat for (lat,) in store.query(
                "SELECT mean_latency_s FROM measurements WHERE candidate_id IN "
                "(SELECT unnest(?)) AND error_kind IS NULL", [pick["candidate_ids"]]))
            assert len(picked) == PER_TASK
            assert picked[0] == latencies[0] and picked[-1] == latencies[-1]  # best and worst
    kinds = [operator_kind(names[p["task_id"]]) for p in chosen]
    assert len(set(kinds)) >= min(len(kinds), 4)  # round-robin over kinds, not 8 convs


@pytest.mark.slow
def test_onboard_prints_the_three_way_table(store, tmp_path):
    result = run_cli("onboard", "--hardware", "local", "--candidates", "48", "--db", store)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout + result.stderr
    for row in ("pre-trained, not fine-tuned", "fine-tuned (", "MetaSchedule XGB, same samples"):
        assert row in out
    name = resolve_profile("local").name
    with Store(store, read_only=True) as s:
        summary = json.loads(s.scalar("SELECT summary_json FROM runs WHERE flow = 'onboard' AND "
                                      "status = 'completed'"))
        child = s.model_row(summary["model_id"])
        calibrated = s.scalar("SELECT count(*) FROM measurements m JOIN candidates c USING "
                              "(candidate_id) JOIN hardware h USING (hardware_id) WHERE h.name = ? "
                              "AND c.source = 'calibration'", [name])
    assert calibrated == summary["measured"] == 48 and summary["calibration_tasks"] == 4
    assert child["parent_model_id"] == summary["parent"]
    assert child["kind"] == "residual"  # the default strategy
    with Store(store, read_only=True) as s:  # both measured here, on the same held-out tasks
        evaluated = dict(s.query("SELECT model_id, TRY_CAST(metrics_json->>'peak1' AS DOUBLE) "
                                 "FROM model_evaluations WHERE hardware = ?", [name]))
    assert set(evaluated) == {summary["parent"], summary["model_id"]}
    assert evaluated[summary["retune_uses"]] == max(evaluated.values())
    assert name in json.loads(child["data_spec_json"])["hardware"]
    for key in ("pretrained", "fine_tuned", "from_scratch"):
        assert 0 < summary[key]["peak1"] <= 1
    # the alias works wherever a profile is named
    models = run_cli("models", "--hardware", "local", "--db", store)
    assert models.returncode == 0 and summary["model_id"] in models.stdout
    assert name in models.stdout  # trained on
    report = run_cli("report", "--hardware", "local", "--db", store)
    assert report.returncode == 0 and f"(hardware {name})" in report.stdout
    with Store(store, read_only=True) as s:  # a profile of the seed's, not this machine's
        other = s.scalar("SELECT name FROM hardware WHERE name <> ? ORDER BY name LIMIT 1",
                         [name])
    assert other not in report.stdout.split("Model leaderboard")[0]
    exported = run_cli("export-ms", str(tmp_path / "ms"), "--hardware", "local", "--db", store)
    assert exported.returncode == 0 and "exported 48 records" in exported.stdout


BAD_REQUESTS = [
    (["--candidates", "10"], "candidates must be at least 48"),
    (["--parent", "nope"], "no model 'nope'"),
    (["--hardware", "tpu-v9"], "unknown hardware profile 'tpu-v9'"),
]


@pytest.fixture(scope="module")
def refused(seed_store, tmp_path_factory):
    """The whole table through the CLI's main() in one process (tests/conftest.py)."""
    db = tmp_path_factory.mktemp("refused") / "store.duckdb"
    shutil.copy(seed_store, db)
    return run_cli_table([["onboard", *args, "--db", str(db)] for args, _ in BAD_REQUESTS])


@pytest.mark.xdist_group("onboard-refusals")  # one batch, on one worker
@pytest.mark.parametrize("args, message", BAD_REQUESTS)
def test_bad_onboard_requests(refused, args, message):
    assert_refused(refused[BAD_REQUESTS.index((args, message))], message)
