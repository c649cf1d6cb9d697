"""make-ladder: the scripted player's rung saves on one preset hold what they claim; a rung checked
against a claim it does not hold is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import setup_milestones
from hoi4_arena.play.ladder import RUNGS, check_rung
from hoi4_arena.sim.save import load_game

SIDE = "BLU"


def _rungs(made: dict, side: str = SIDE) -> list[dict]:
    return [row for row in made["rungs"] if row["side"] == side]


def test_every_rung_is_made_and_listed(made_ladder: tuple[Path, dict]) -> None:
    out, made = made_ladder  # tests/conftest.py: plains:3, both sides
    assert made["made"] == 2 * len(RUNGS) and made["missing"] == 0
    assert json.loads((out / "ladder.json").read_text()) == made
    for side in ("BLU", "RED"):
        rows = _rungs(made, side)
        assert [row["rung"] for row in rows] == list(RUNGS)
        assert {(row["preset"], row["map_seed"], row["game_seed"], row["side"]) for row in rows} == {
            ("plains", 3, 3, side)
        }
        remaining = {row["rung"]: row["remaining"] for row in rows}
        assert remaining == {
            "S0": ["declare", "army", "front", "offensive", "executed"],
            "S1": ["army", "front", "offensive", "executed"],
            "S2": ["front", "offensive", "executed"],
            "S3": ["offensive", "executed"],
        }
        days = [row["day"] for row in rows]
        assert days == sorted(days)
        for row in rows:
            assert json.loads((out / row["save"]).with_suffix(".json").read_text()) == row


def test_a_restored_rung_s3_shows_army_and_front_but_no_offensive(made_ladder: tuple[Path, dict]) -> None:
    out, made = made_ladder
    row = _rungs(made)[3]
    with load_game(out / row["save"]) as game:
        assert not game.clock.paused  # the match runs: the restored game goes on by itself
        start = game.world.hour
        while game.world.hour < start + 48:
            game.advance(200)
        setup = setup_milestones(game.world.log_lines, SIDE)
        assert setup["army"] is not None and setup["front"] is not None
        assert setup["offensive"] is None and setup["executed"] is None
    with load_game(out / _rungs(made)[0]["save"]) as game:
        assert game.clock.paused and not game.world.at_war and game.ui.popups  # the news is open


def test_a_rung_that_does_not_hold_its_claim_is_refused(made_ladder: tuple[Path, dict]) -> None:
    out, made = made_ladder
    s2 = out / _rungs(made)[2]["save"]
    assert check_rung(s2, "S2", SIDE)["done"] == ["declare", "army"]
    with pytest.raises(UserError, match="claims declare, army, front done, but"):
        check_rung(s2, "S3", SIDE)
    with pytest.raises(UserError, match="claims nothing done"):
        check_rung(out / _rungs(made)[1]["save"], "S0", SIDE)


def test_the_command_makes_a_ladder_and_saves_restore_through_the_worker(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hoi4_arena.cli import app
    from hoi4_arena.screen.sim_worker import SimWorker

    out = tmp_path / "ladder"
    args = ["make-ladder", str(out), "--arena", "plains", "--seeds", "1", "--sides", "RED"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "rungs of plains:0 as RED made" in result.output
    assert json.loads(result.output[result.output.index("{") :])["made"] == len(RUNGS)
    s2 = json.loads((out / "plains-m0-g0-RED" / "S2.json").read_text())
    assert s2["side"] == "RED" and s2["remaining"] == ["front", "offensive", "executed"]
    with SimWorker(save=out / s2["save"], layout="cpu") as worker:
        assert worker.attach()["player"] == "RED" and worker.game.world.armies_of("RED")
    bad = CliRunner().invoke(app, ["make-ladder", str(out), "--arena", "atlantis"])
    assert isinstance(bad.exception, UserError) and "--arena takes presets" in str(bad.exception)
