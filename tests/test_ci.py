"""What keeps CI fast relies on pytest-xdist's grouping: a silently ignored group would start
the service (and each bad-input batch) once per test process."""

import os

import pytest


@pytest.mark.xdist_group("grouping-check")
def test_xdist_groups_are_honoured(request):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("not running under pytest-xdist (-n 0)")
    assert request.node.nodeid.endswith("@grouping-check"), request.node.nodeid
