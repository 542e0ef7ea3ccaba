"""The main job end to end on a fresh store: seed loaded, local collect, small search, summary."""

import json

import pytest

from storage.seed import SEED_DIR, find_shards
from storage.store import Store
from tests.conftest import SMALL_SEED_PROFILE, run_cli


@pytest.mark.slow
def test_pipeline_on_a_fresh_store(db):
    # The README's job with CI-sized steps: one small network, two search trials, the smallest
    # calibration set, short retunes, and models that learn from one small seed profile (the
    # whole seed is loaded all the same).
    result = run_cli("pipeline", "--networks", "mlp", "--candidates", "2", "--search-trials",
                     "2", "--calibration", "48", "--retune-trials", "8", "--sources",
                     SMALL_SEED_PROFILE, "--db", db, ephemeral=True,  # as ./run pipeline
                     # 259 s alone and 339-446 s in CI on the 105 MiB Xeon, whose speed drifts
                     # 1.7x within an hour (sessions 81-82): the limit is for hangs (it saves
                     # their stacks), well under pytest's 900 s
                     timeout=780)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout + result.stderr
    with Store(db, read_only=True) as store:
        seeded = store.scalar("SELECT count(*) FROM runs WHERE summary_json LIKE "
                              "'%loaded_from_seed_shard%'")
        assert seeded == len(find_shards(SEED_DIR))
        flows = dict(store.query("SELECT flow, count(*) FROM runs WHERE status = 'completed' "
                                 "AND NOT summary_json LIKE '%loaded_from_seed_shard%' GROUP BY 1"))
        # this machine's profile is new to a fresh store (the seed holds 1-thread profiles):
        # the pipeline onboards it; had the seed held it, a plain transfer adapts the model
        adapt = "onboard" if "onboard done" in out else "transfer"
        assert flows == {"collect": 1, "search": 1, "pretrain": 1, adapt: 1, "retune": 3}
        local = store.scalar("SELECT count(*) FROM v_measurements WHERE hardware NOT IN "
                             "(SELECT DISTINCT hardware FROM runs WHERE summary_json LIKE "
                             "'%loaded_from_seed%')")
        assert local > 0
        kinds = store.query("SELECT model_id, parent_model_id, train_rows FROM models ORDER BY "
                            "created_at")
        assert len(kinds) == 3  # search winner, pre-trained on the seed, fine-tuned to local
        assert kinds[2][1] == kinds[1][0]
        # pre-trained on the chosen source alone; the search also saw the local data
        specs = [json.loads(spec)["hardware"] for (spec,) in store.query(
            "SELECT data_spec_json FROM models ORDER BY created_at")]
        assert specs[1] == [SMALL_SEED_PROFILE] and SMALL_SEED_PROFILE in specs[0]
        tuned = {(model, scheduler): functions for model, scheduler, functions in store.query(
            "SELECT cost_model, scheduler, tuned_functions FROM tuning_runs")}
        assert tuned.pop(("metaschedule-xgb", "gradient")) == 2  # the baseline
        # the learned model, searching and instantly: the fine-tuned one, or its parent where
        # onboarding measured the parent ranking this profile better
        assert len(tuned) == 2 and len({model for model, _ in tuned}) == 1
        (learned, _), = {key for key in tuned if key[1] == "gradient"}
        assert learned in (kinds[1][0], kinds[2][0]) and set(tuned.values()) == {2}
        assert (learned, "instant") in tuned
    assert "fastest_us" in out and "test peak1" in out and "tuned ms" in out  # the summaries
