"""The suite's own plumbing: under `make test` with CAP_SYS_NICE (root here), the tests that wait (X11
windows, clusters) form the waiting lane's groups and run at normal priority; every other test runs at
nice 10 (tests/conftest.py)."""

import os

import pytest


def lanes_on(request: pytest.FixtureRequest) -> bool:
    return bool(getattr(request.config, "workerinput", {}).get("waiting_lane"))


@pytest.mark.x11
def test_a_waiting_test_is_in_the_waiting_lane_at_normal_priority(request: pytest.FixtureRequest) -> None:
    if not lanes_on(request):
        pytest.skip("the lanes are on where a test may raise its priority again (root with CAP_SYS_NICE)")
    assert request.node.nodeid.endswith("@waits:tests/test_xdist_lanes.py"), request.node.nodeid
    assert os.getpriority(os.PRIO_PROCESS, 0) == 0


def test_a_computing_test_runs_at_nice_10(request: pytest.FixtureRequest) -> None:
    if not lanes_on(request):
        pytest.skip("the lanes are on where a test may raise its priority again (root with CAP_SYS_NICE)")
    assert "@" not in request.node.nodeid
    assert os.getpriority(os.PRIO_PROCESS, 0) == 10
    # What the test starts inherits it.
    child = os.fork()
    if child == 0:
        os._exit(0 if os.getpriority(os.PRIO_PROCESS, 0) == 10 else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0
