"""The suite's own plumbing: under `make test` (xdist's --dist loadgroup) the tests that share a
module-scoped fixture form one group, so the fixture is built once, on one worker."""

import pytest


@pytest.fixture(scope="module")
def shared() -> object:
    return object()


def test_tests_that_share_a_module_fixture_are_one_xdist_group(shared: object, request) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("runs under xdist's --dist loadgroup (make test)")
    assert request.node.nodeid.endswith("@tests/test_xdist_groups.py"), request.node.nodeid
