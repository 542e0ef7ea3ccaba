"""What keeps CI fast relies on pytest-xdist's grouping: a silently ignored group would start
the service (and each bad-input batch) once per test process."""

import os

import pytest


@pytest.mark.xdist_group("grouping-check")
def test_xdist_groups_are_honoured(request):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("not running under pytest-xdist (-n 0)")
    assert request.node.nodeid.endswith("@grouping-check"), request.node.nodeid


def test_a_command_past_its_time_is_ended_with_its_stacks_written_down():
    """A stalled command in CI must say where it stalled, not only that it timed out."""
    from tests.conftest import run_cli

    with pytest.raises(AssertionError) as raised:
        run_cli("hardware", timeout=0.3, ephemeral=True)  # its imports alone take longer
    said = str(raised.value)
    assert "`tenforge hardware` ran past 0 s" in said and "tenforge.cli hardware" in said


def test_a_passing_test_leaves_no_tmp_path_behind(pytestconfig):
    """Kept tmp_paths (each test's copied seed store is ~0.5 GB) once filled the disk CI runs on."""
    assert pytestconfig.getini("tmp_path_retention_policy") == "failed"


@pytest.mark.parametrize("keep", ["", "1"])
def test_a_bench_scratch_folder_goes_when_the_bench_ends_unless_kept(keep):
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys; sys.path.insert(0, '.'); from bench._data import scratch_dir; "
            "folder = scratch_dir('scratch-check'); (folder / 'store.duckdb').write_text('x'); "
            "print(folder)")
    env = {**os.environ, "TENFORGE_KEEP_SCRATCH": keep}
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=Path(__file__).resolve().parents[1], check=True)
    folder = Path(ran.stdout.strip())
    try:
        assert folder.name.startswith("tenforge-scratch-check-")
        assert folder.exists() == bool(keep)
    finally:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
