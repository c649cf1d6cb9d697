"""Calibration files: what the template, clock and speed commands write, what they refuse, and that a
missing calibration fails closed with the command that makes it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hoi4_arena.errors import UserError
from hoi4_arena.players.templates import (
    Calibration,
    add_clock,
    add_speed,
    add_template,
    mean_abs_diff,
    sim_rules,
    sim_rules_path,
)


def screenshot(path: Path, seed: int = 0, size: tuple[int, int] = (90, 160)) -> Path:
    """A PNG of random blocks (8x8 pixels each): any region of it has detail, any two regions differ."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (size[0] // 8 + 1, size[1] // 8 + 1, 3), dtype=np.uint8)
    image = np.kron(blocks, np.ones((8, 8, 1), dtype=np.uint8))[: size[0], : size[1]]
    Image.fromarray(image).save(path)
    return path


def test_a_template_is_stored_as_json_and_png_and_matches_its_own_region(tmp_path: Path) -> None:
    shot = screenshot(tmp_path / "shot.png")
    rules_path = tmp_path / "cal" / "rules.json"
    result = add_template(shot, rules_path, "win", (10, 20, 40, 16), threshold=6.0, offsets=((0, 30),))
    assert result["templates"] == ["win"] and not result["replaced"]
    doc = json.loads(rules_path.read_text())
    assert doc["size"] == [160, 90] and doc["templates"]["win"]["rect"] == [10, 20, 40, 16]
    assert (tmp_path / "cal" / "win.png").is_file()
    rules = Calibration.load(rules_path)
    frame = np.asarray(Image.open(shot))
    crops = {name: frame[y : y + h, x : x + w] for name, (x, y, w, h) in rules.regions(["win"]).items()}
    assert set(crops) == {"win", "win@1"}
    assert rules.match("win", crops) and rules.find("win", crops) == (30, 28)
    other = np.asarray(Image.open(screenshot(tmp_path / "other.png", seed=1)))
    assert not rules.match("win", {"win": other[20:36, 10:50]})
    # The same element at its second place (a stacked window) is found there, topmost first.
    crops["win@1"] = crops["win"].copy()
    assert rules.find("win", crops) == (30, 58)


def test_replacing_a_template_says_so_and_keeps_the_others(tmp_path: Path) -> None:
    shot = screenshot(tmp_path / "shot.png")
    rules_path = tmp_path / "rules.json"
    add_template(shot, rules_path, "ready", (0, 0, 20, 10))
    add_template(shot, rules_path, "loss", (30, 30, 20, 10))
    again = add_template(shot, rules_path, "ready", (2, 2, 20, 10))
    assert again["replaced"] and again["templates"] == ["loss", "ready"]
    assert Calibration.load(rules_path).templates["ready"].rect == (2, 2, 20, 10)


def test_clock_and_speed_levels(tmp_path: Path) -> None:
    rules_path = tmp_path / "rules.json"
    shots = [screenshot(tmp_path / f"s{i}.png", seed=i) for i in range(3)]
    add_clock(shots[0], rules_path, (40, 40, 30, 12))
    for level, shot in zip((1, 3), shots[1:], strict=True):
        add_speed(shot, rules_path, (100, 8, 40, 16), level)
    rules = Calibration.load(rules_path)
    assert sorted(rules.speed.levels) == [1, 3]
    frames = [np.asarray(Image.open(s)) for s in shots]
    assert rules.speed_level({"speed": frames[2][8:24, 100:140]}) == 3
    assert rules.speed_level({"speed": frames[1][8:24, 100:140]}) == 1
    assert rules.speed_level({"speed": frames[0][8:24, 100:140]}) is None
    clock = rules.clock
    assert clock.changed(frames[0][40:52, 40:70], frames[1][40:52, 40:70])
    assert not clock.changed(frames[0][40:52, 40:70], frames[0][40:52, 40:70].copy())


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s, r: add_template(s, r, "Win!", (0, 0, 4, 4)), "lowercase"),
        (lambda s, r: add_template(s, r, "clock", (0, 0, 4, 4)), "own command"),
        (lambda s, r: add_template(s, r, "win", (150, 80, 20, 20)), "not inside the 160x90 screen"),
        (lambda s, r: add_template(s, r, "win", (0, 0, 0, 5)), "empty"),
        (lambda s, r: add_template(s, r, "win", (0, 0, 5, 5), threshold=300), "0..255"),
        (lambda s, r: add_template(s.with_name("nope.png"), r, "win", (0, 0, 5, 5)), "no such screenshot"),
        (lambda s, r: add_speed(s, r, (0, 0, 5, 5), 6), "--level"),
        (lambda s, r: add_speed(s, r, (10, 10, 5, 5), 2), "same --rect"),
        (lambda s, r: add_speed(s, r, (0, 0, 8, 8), 2), "looks like level 1"),
    ],
)
def test_bad_input_is_refused_and_leaves_the_calibration_as_it_was(
    tmp_path: Path, call, message: str
) -> None:
    shot = screenshot(tmp_path / "shot.png")
    rules_path = tmp_path / "rules.json"
    add_speed(shot, rules_path, (0, 0, 8, 8), 1)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(UserError, match=message):
        call(shot, rules_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_calibration_holds_one_size_and_one_format(tmp_path: Path) -> None:
    rules_path = tmp_path / "rules.json"
    add_template(screenshot(tmp_path / "a.png"), rules_path, "win", (0, 0, 8, 8))
    with pytest.raises(UserError, match="calibration for 160x90, but the screenshot is 320x180"):
        add_template(screenshot(tmp_path / "b.png", size=(180, 320)), rules_path, "loss", (0, 0, 8, 8))
    jpeg = tmp_path / "c.jpg"
    Image.open(tmp_path / "a.png").save(jpeg)
    with pytest.raises(UserError, match="PNG"):
        add_template(jpeg, rules_path, "loss", (0, 0, 8, 8))
    with pytest.raises(UserError, match="flat colour"):
        Image.fromarray(np.full((90, 160, 3), 40, np.uint8)).save(tmp_path / "flat.png")
        add_clock(tmp_path / "flat.png", rules_path, (0, 0, 30, 10))


def test_missing_or_broken_calibration_fails_closed_naming_the_command(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="hoi4-arena template SCREEN.png .*rules.json NAME --rect"):
        Calibration.load(tmp_path / "rules.json")
    (tmp_path / "rules.json").write_text("{not json")
    with pytest.raises(UserError, match="not a readable calibration"):
        Calibration.load(tmp_path / "rules.json")
    (tmp_path / "rules.json").write_text(
        json.dumps({"format": "hoi4-arena-rules", "version": 99, "size": [1, 1]})
    )
    with pytest.raises(UserError, match="version 99"):
        Calibration.load(tmp_path / "rules.json")
    rules_path = tmp_path / "cal" / "rules.json"
    add_template(screenshot(tmp_path / "a.png"), rules_path, "ready", (0, 0, 8, 8))
    rules = Calibration.load(rules_path)
    with pytest.raises(
        UserError, match=r"lacks template 'win' \(make it with `hoi4-arena template .* win --rect"
    ):
        rules.require("ready", "win")
    with pytest.raises(UserError, match="the clock .*hoi4-arena clock"):
        rules.require(clock=True)
    (rules_path.parent / "ready.png").unlink()
    with pytest.raises(UserError, match="ready.png: no such picture"):
        Calibration.load(rules_path)


def test_the_simulator_ships_its_calibration_for_two_sizes_only() -> None:
    for size in ((540, 960), (1080, 1920)):
        rules = sim_rules(size)
        assert rules.game == "sim" and rules.size == size and rules.map is not None
        assert sim_rules_path(size).parent.name == f"sim-{size[1]}x{size[0]}"
    with pytest.raises(
        UserError, match=r"1280x720 .*python -m hoi4_arena.players.sim_calibration --size 1280x720"
    ):
        sim_rules((720, 1280))


def test_the_pointer_can_be_left_out_of_a_comparison() -> None:
    a = np.zeros((10, 20, 3), np.uint8)
    b = a.copy()
    b[0:4, 0:4] = 255  # where the pointer sprite covers the region
    assert mean_abs_diff(a, b) > 10
    assert mean_abs_diff(a, b, hide=(0, 0, 4, 4)) == 0.0
    assert mean_abs_diff(a, b, hide=(-10, -10, 40, 40)) == float("inf")  # hidden wholly: no match


def test_the_module_prints_a_calibration() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.players.templates", str(sim_rules_path((540, 960)))],
        capture_output=True,
        text=True,
        check=True,
    )
    shown = json.loads(out.stdout)
    assert shown["size"] == [960, 540] and "win" in shown["templates"]
    assert shown["speed"]["levels"] == [1, 2, 3, 4, 5]
