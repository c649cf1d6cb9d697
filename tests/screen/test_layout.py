"""View layouts: the named layouts, validation, versions, and template regions."""

from __future__ import annotations

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.screen.layout import LAYOUTS, ViewLayout


def test_full_layout_is_the_design() -> None:
    full = ViewLayout.named("full")
    assert (full.global_size, full.clip, full.quadrant_size, full.fovea) == ((256, 448), 8, (320, 576), 224)
    assert full.version == "views1-g256x448x8-q320x576-f224"


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_named_layouts_round_trip_and_fit_the_default_screen(name: str) -> None:
    layout = ViewLayout.named(name)
    assert ViewLayout.from_dict(layout.to_dict()) == layout
    layout.check_screen((1080, 1920))
    assert layout.fovea <= min(layout.quadrant_size)


def test_cpu_layout_is_small_and_divides_the_screen() -> None:
    cpu = ViewLayout.named("cpu")
    assert cpu.global_size == (72, 128) and cpu.quadrant_size == (90, 160) and cpu.fovea == 64
    assert 1080 % cpu.global_size[0] == 0 and 1920 % cpu.global_size[1] == 0
    assert 540 % cpu.quadrant_size[0] == 0 and 960 % cpu.quadrant_size[1] == 0
    assert cpu.version != ViewLayout.named("full").version


def test_unknown_name_is_a_user_error() -> None:
    with pytest.raises(UserError, match="known layouts: full, cpu"):
        ViewLayout.named("huge")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"global_size": (0, 448)}, "global_size"),
        ({"quadrant_size": (320,)}, "quadrant_size"),
        ({"global_size": (256.0, 448)}, "two ints"),
        ({"fovea": 0}, "fovea"),
        ({"clip": -1}, "clip"),
        ({"name": "Full Layout"}, "name"),
        ({"regions": {"date": (1900, 0, 40, 10)}}, "not inside"),
        ({"regions": {"Date": (0, 0, 4, 4)}}, "region names"),
        ({"regions": [("date", (0, 0, 4))]}, "name -> "),
    ],
)
def test_invalid_layouts_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ViewLayout(**kwargs)


def test_version_mismatch_says_what_differs() -> None:
    full, cpu = ViewLayout.named("full"), ViewLayout.named("cpu")
    full.require_version(full.version)
    with pytest.raises(UserError) as info:
        full.require_version(cpu.version)
    message = str(info.value)
    assert "global height 72 (this run: 256)" in message and "fovea size 64 (this run: 224)" in message
    assert "clip" not in message
    with pytest.raises(UserError, match="unreadable"):
        full.require_version("whatever")


def test_regions_change_the_version_and_scale_with_the_screen() -> None:
    full = ViewLayout.named("full")
    with_regions = full.with_regions({"date": (1700, 0, 220, 40), "speed": (1600, 0, 100, 40)})
    assert with_regions.version.startswith(full.version + "-r")
    assert with_regions.regions[0][0] == "date"  # sorted by name
    assert with_regions.regions_at((1080, 1920)) == {"date": (1700, 0, 220, 40), "speed": (1600, 0, 100, 40)}
    half = with_regions.regions_at((540, 960))
    assert half == {"date": (850, 0, 110, 20), "speed": (800, 0, 50, 20)}
    # Adjacent regions stay adjacent after scaling to an awkward size.
    odd = with_regions.regions_at((721, 1283))
    assert odd["speed"][0] + odd["speed"][2] == odd["date"][0]
    assert ViewLayout.from_dict(with_regions.to_dict()) == with_regions
    other = full.with_regions({"date": (1700, 0, 220, 41)})
    with pytest.raises(UserError, match="template regions"):
        other.require_version(with_regions.version)


def test_from_dict_refuses_a_version_that_contradicts_the_sizes() -> None:
    data = ViewLayout.named("cpu").to_dict()
    data["fovea"] = 96
    with pytest.raises(UserError, match="fovea size 64"):
        ViewLayout.from_dict(data)
    with pytest.raises(UserError, match="not a valid view layout"):
        ViewLayout.from_dict({"name": "x"})


def test_screen_too_small_for_the_fovea() -> None:
    with pytest.raises(ValueError, match="smaller than the 224-pixel fovea"):
        ViewLayout.named("full").check_screen((200, 400))
