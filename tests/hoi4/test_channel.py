"""The state channel: the lines the mod's effects print, filled in as HOI4 would, parse with gamelog's
parser and fold into the same state the simulator's lines give; upgrade-channel rewrites an old mod."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from hoi4_arena import gamelog
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import ArenaState, parse_line
from hoi4_arena.hoi4 import channel
from hoi4_arena.hoi4.channel import (
    CHANNEL_VERSION,
    FILES,
    UpgradeChannelConfig,
    line_text,
    logged_texts,
    render_effects,
    render_files,
    sample_lines,
    upgrade_channel,
)
from hoi4_arena.maps import ArenaMap

N_LAND, N_STATES = 192, 16


@pytest.fixture(scope="module")
def effects() -> str:
    return render_effects("bay", 1, N_LAND, N_STATES)


def test_every_logged_line_parses_with_the_gamelog_parser(effects: str) -> None:
    masks = {"BLU": (1 << 96) - 1, "RED": ((1 << 192) - 1) ^ ((1 << 96) - 1)}
    lines = list(sample_lines(effects, N_LAND, day=40, masks=masks))
    parsed = [parse_line(line) for line in lines]
    assert all(p is not None for p in parsed)
    kinds = {p.kind for p in parsed}
    assert kinds == {"start", "day", "control", "draw", "capitulated", "declare"}
    assert sum(1 for p in parsed if p.kind == "control") == 2 * N_LAND
    for p in parsed:
        assert list(p.fields) == [k for k, _ in gamelog.SCHEMA[p.kind]]
        assert p["date"] == "1936.02.10.00" and p["h"] == 40 * 24
    start = next(p for p in parsed if p.kind == "start")
    assert (start["arena"], start["seed"], start["tags"], start["version"]) == (
        "bay",
        1,
        ["BLU", "RED"],
        gamelog.SCHEMA_VERSION,
    )


@pytest.mark.parametrize("seed", range(5))
def test_the_province_mask_round_trips(effects: str, seed: int) -> None:
    rng = random.Random(seed)
    blu = {p for p in range(1, N_LAND + 1) if rng.random() < 0.5}
    masks = {
        "BLU": sum(1 << (p - 1) for p in blu),
        "RED": sum(1 << (p - 1) for p in range(1, N_LAND + 1) if p not in blu),
    }
    days = [parse_line(line) for line in sample_lines(effects, N_LAND, day=3, masks=masks)]
    for day in (d for d in days if d.kind == "day"):
        assert day["provinces"] == masks[day["tag"]]
        assert day["controlled"] == bin(masks[day["tag"]]).count("1")
        assert len(day["by_state"]) == N_STATES
    state = ArenaState.from_lines(
        [line for line in sample_lines(effects, N_LAND, 3, masks) if " day " in line or " start " in line]
    )
    assert {pid for pid, tag in state.control.items() if tag == "BLU"} == blu


def test_each_day_line_matches_the_simulators_template(effects: str) -> None:
    for tag in ("BLU", "RED"):
        text = line_text("day", tag, N_LAND, N_STATES)
        assert text in logged_texts(effects)
        assert [w.split("=")[0] for w in text.split()[2:]] == [k for k, _ in gamelog.SCHEMA["day"]]


def test_a_schema_field_without_a_source_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(gamelog.SCHEMA, "day", (*gamelog.SCHEMA["day"], ("morale", gamelog.FLOAT)))
    with pytest.raises(ValueError, match="morale"):
        line_text("day", "BLU", N_LAND, N_STATES)


def test_the_mod_holds_the_rendered_channel(good_mod: Path, arena: ArenaMap) -> None:
    for rel, text in render_files(arena.preset, arena.seed, len(arena.provinces), len(arena.states)).items():
        assert (good_mod / rel).read_text(encoding="utf-8-sig") == text
    on_actions = (good_mod / FILES[0]).read_text()
    assert "on_daily_BLU" in on_actions and "arena_channel_day = yes" in on_actions


def test_upgrade_channel_rewrites_an_older_mod(mod_copy: Path) -> None:
    effects_path = mod_copy / FILES[1]
    old = (
        effects_path.read_text()
        .replace(f"version {CHANNEL_VERSION} ", "version 0 ")
        .replace(" surrender=", " old_surrender=")
    )
    effects_path.write_text(old)
    manifest = json.loads((mod_copy / "arena.json").read_text())
    manifest["channel_version"] = 0
    (mod_copy / "arena.json").write_text(json.dumps(manifest))
    result = upgrade_channel(UpgradeChannelConfig(mod=mod_copy))
    assert result["upgraded"] and result["from_channel_version"] == 0
    fresh = channel.render_effects(
        manifest["preset"], manifest["seed"], manifest["land_provinces"], manifest["states"]
    )
    assert effects_path.read_text() == fresh
    assert json.loads((mod_copy / "arena.json").read_text())["channel_version"] == CHANNEL_VERSION
    assert upgrade_channel(UpgradeChannelConfig(mod=mod_copy))["upgraded"] is False


def test_upgrade_channel_refuses_a_folder_it_did_not_write(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="arena.json"):
        upgrade_channel(UpgradeChannelConfig(mod=tmp_path))
