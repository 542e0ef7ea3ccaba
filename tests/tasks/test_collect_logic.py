"""collect's measurement bookkeeping with a fake measurer (tests/tasks/fake_measurer.py):
batches commit one by one, a run that dies keeps its committed batches, the next run measures
only what is missing, and failures are rows too. Real import and sampling; nothing compiled."""

import pytest

from storage.store import Store
from tasks.collect import measure_pending, register_network, sample_task
from tasks.hardware import resolve_profile
from tests.tasks.fake_measurer import FakeMeasurer


class Dies(FakeMeasurer):
    """Measures `batches_before_death` batches, then the process 'dies'."""

    batches_before_death = 1

    def measure(self, jobs, on_result=None):
        if len(self.batches) == self.batches_before_death:
            raise KeyboardInterrupt("killed")
        return super().measure(jobs, on_result)


@pytest.fixture
def collected(db):
    profile = resolve_profile("local-1t")
    task_ids = register_network(db, profile, "matmul", 1)
    for task_id in task_ids:
        sample_task(db, profile, task_id, 6, seed=0)
    return db, profile, task_ids


def _measured(db):
    with Store(db, read_only=True) as store:
        return store.query("SELECT candidate_id, error_kind FROM measurements "
                           "ORDER BY candidate_id")


def test_a_dead_run_keeps_its_batches_and_the_next_measures_only_the_rest(collected):
    db, profile, task_ids = collected
    with pytest.raises(KeyboardInterrupt):
        measure_pending(db, profile, task_ids, 2, None, report=lambda _: None,
                        measurer_factory=Dies)
    first = _measured(db)
    assert len(first) == 2  # the one committed batch
    made = []

    def factory(*args, **kwargs):
        made.append(FakeMeasurer(*args, **kwargs, fail_every=3))
        return made[-1]

    summary = measure_pending(db, profile, task_ids, 2, None, report=lambda _: None,
                              measurer_factory=factory)
    everything = _measured(db)
    with Store(db, read_only=True) as store:
        candidates = store.scalar("SELECT count(*) FROM candidates")
    assert len(everything) == candidates == len({c for c, _ in everything})  # each once
    assert set(first) <= set(everything)
    assert summary["measured"] == candidates - 2 and all(len(b) <= 2 for b in made[0].batches)
    failed = [c for c, kind in everything if kind == "run_error"]
    assert failed and all(c % 3 == 0 for c in failed)  # failures are stored rows
    again = measure_pending(db, profile, task_ids, 2, None, report=lambda _: None,
                            measurer_factory=FakeMeasurer)
    assert again["measured"] == 0  # nothing pending: nothing measured twice


def test_a_collect_keeping_asm_stores_each_build_s_columns_with_its_batch(collected):
    from models.asm_features import ASM_DIM
    from storage.feature_rows import ASM_EXTRACTOR

    db, profile, task_ids = collected
    if not profile.x86_cpu:
        pytest.skip(f"the asm columns read x86 code; this machine is {profile.arch}")

    def factory(*args, **kwargs):
        return FakeMeasurer(*args, **kwargs, fail_every=3)

    measure_pending(db, profile, task_ids, 2, None, report=lambda _: None,
                    measurer_factory=factory, keep_asm=True)
    with Store(db, read_only=True) as store:
        rows = store.query("SELECT f.candidate_id, f.dim, f.\"values\"[1], m.error_kind FROM "
                           "measurements m LEFT JOIN features f ON f.candidate_id = "
                           "m.candidate_id AND f.extractor = ? ORDER BY 1", [ASM_EXTRACTOR])
    built = [(c, dim, first) for c, dim, first, error in rows if error is None]
    assert built and all(dim == ASM_DIM and first == c for c, dim, first in built)
    # a failed measurement of the fake has no build to read: no row
    assert all(c is None for c, _, _, error in rows if error is not None)


def test_a_task_without_a_design_space_is_skipped_or_sampled_in_its_simt_space(db, monkeypatch,
                                                                               capsys):
    # TVM 0.27's tensor-core rules fail on the H200's float16 squeeze-excite convolutions
    # ("Back optional access"); that ended a 329-task presample (session 51)
    import dataclasses

    import tasks.sampling
    from tasks.sampling import NoDesignSpace, sample_candidates

    cpu = resolve_profile("local-1t")

    def no_default_space(mod_json, target, *args, rules=None, **kwargs):
        if rules is None:
            raise NoDesignSpace("MetaSchedule could not build this task's design space (x)")
        assert rules == "cuda"  # the CPU's own space stands in for the SIMT one
        return sample_candidates(mod_json, cpu.target, *args, **kwargs)

    monkeypatch.setattr(tasks.sampling, "sample_candidates", no_default_space)
    [task_id] = register_network(db, cpu, "matmul", 1)
    assert sample_task(db, cpu, task_id, 3, seed=0) == {"new": 0, "invalid": 0}
    assert "no candidates for it" in capsys.readouterr().out
    sample_task(db, cpu, task_id, 3, seed=0)
    assert capsys.readouterr().out == ""  # on record as sampled out: not tried again
    gpu = dataclasses.replace(cpu, target={**cpu.target, "kind": "cuda"})
    got = sample_task(db, gpu, task_id, 3, seed=1)
    assert got["new"] == 3 and "sampling its SIMT space" in capsys.readouterr().out


def test_a_task_sampled_out_for_a_seed_is_not_sampled_again_for_as_many(db, monkeypatch):
    """Seeded sampling draws the same samples again: a task whose space gave 2 of the 5 asked
    for is skipped when asked again for up to 5 with that seed (a lease spent ~100 s of 7
    minutes re-drawing a presampled store's exhausted tasks), sampled for more or another."""
    import tasks.sampling
    from tasks.sampling import sample_candidates

    calls: list[tuple[int, int]] = []

    def small_space(mod_json, target, count, seed, known=(), **kwargs):
        calls.append((count, seed))
        return sample_candidates(mod_json, target, min(count, 2), seed, known, **kwargs)

    monkeypatch.setattr(tasks.sampling, "sample_candidates", small_space)
    cpu = resolve_profile("local-1t")
    [task_id] = register_network(db, cpu, "matmul", 1)
    assert sample_task(db, cpu, task_id, 5, seed=0)["new"] == 2
    assert sample_task(db, cpu, task_id, 5, seed=0) == {"new": 0, "invalid": 0}
    assert sample_task(db, cpu, task_id, 4, seed=0) == {"new": 0, "invalid": 0}
    assert calls == [(5, 0)]  # neither asked the sampler again
    sample_task(db, cpu, task_id, 6, seed=0)  # more than on record: sampled
    sample_task(db, cpu, task_id, 5, seed=1)  # another seed: sampled
    assert calls == [(5, 0), (6, 0), (5, 1)]
    with Store(db, read_only=True) as store:
        assert store.query("SELECT seed, space, asked, found FROM sampled_out ORDER BY seed") \
            == [(0, "default", 6, 2), (1, "default", 5, 2)]


def test_reused_tasks_skip_the_import_only_where_the_store_lists_the_network(db, monkeypatch):
    """--reuse-tasks: a lease's collect on a presampled store spent ~70 s of 7 minutes importing
    networks the store already listed. A listed zoo network returns its stored tasks without
    TVM; one the store does not list (another batch) is imported as always."""
    import tasks.workloads

    cpu = resolve_profile("local-1t")
    imported = register_network(db, cpu, "matmul", 1)
    real_extract = tasks.workloads.extract_network_tasks
    extracted = []

    def counting_extract(*args, **kwargs):
        extracted.append(args[1])  # the batch
        return real_extract(*args, **kwargs)

    monkeypatch.setattr(tasks.workloads, "extract_network_tasks", counting_extract)
    assert register_network(db, cpu, "matmul", 1, reuse_stored=True) == imported
    assert extracted == []
    other_batch = register_network(db, cpu, "matmul", 2, reuse_stored=True)
    assert extracted == [2] and other_batch  # (a matmul task may be the same at any batch)
    register_network(db, cpu, "matmul", 1)  # without it: imported again
    assert extracted == [2, 1]
