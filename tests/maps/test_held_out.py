"""The guard that keeps training off the benchmark's maps (maps/held_out.py), for map ranges (maps/specs.py);
the suites and the single maps are tested in tests/evaluation/test_benchmark.py."""

from __future__ import annotations

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.maps.held_out import on_suite_maps, refuse_suite_maps


def test_a_range_below_the_suites_maps_is_allowed() -> None:
    refuse_suite_maps(["plains:0-999", "passes:0-999", "ford:10-20", "plains"], "--arena")
    assert not on_suite_maps("bay:0-999") and not on_suite_maps("salient:999-999")


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("plains:0-1000", "--arena plains:0-1000 reaches"),
        ("ford:1000-1039", "--arena ford:1000-1039 reaches"),
        ("river:0-5", "--arena river:0-5 reaches"),  # the river preset at any seed
        ("all:0-999", "--arena all:0-999 reaches"),  # all holds the river preset
    ],
)
def test_a_range_reaching_the_suites_maps_is_refused_in_one_line(spec: str, shown: str) -> None:
    assert on_suite_maps(spec)
    with pytest.raises(UserError, match=f"{shown} the benchmark's maps") as refused:
        refuse_suite_maps(["plains:3", spec], "--arena")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("spec", ["plains:5-2", "plains:a-b", "plains:-3"])
def test_a_malformed_range_is_refused_not_passed(spec: str) -> None:
    with pytest.raises(UserError, match=f"map '{spec}'") as refused:
        refuse_suite_maps([spec], "--arena")
    assert "\n" not in str(refused.value)
