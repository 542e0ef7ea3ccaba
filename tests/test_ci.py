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
