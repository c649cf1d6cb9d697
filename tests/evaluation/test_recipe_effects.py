"""scripts/recipe_effects.py: each recipe change's paired differences (score, setups, offensives) with
intervals and p-values, and their picture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoi4_arena.maps.held_out import suite_games
from hoi4_arena.results import GameResult, append_result
from project_scripts import load_script

effects_script = load_script("recipe_effects")

PAIRS = 10


def _player(bench: Path, name: str, wins: int, offensives: int) -> None:
    """NAME's 20 presets games: its side wins the first `wins` of them (setting up there), loses the
    rest; `offensives` drawn in every game."""
    folder = bench / "presets" / name
    folder.mkdir(parents=True)
    (folder / "player.json").write_text(json.dumps({"player": name, "checkpoint": f"/runs/{name}.pt"}))
    for k, game in enumerate(suite_games("presets", PAIRS)):
        winner = game.side if k < wins else ("RED" if game.side == "BLU" else "BLU")
        extra = {
            "setup": {"complete": k < wins},
            "war": {"offensives": offensives, "executing_days": 1},
            "days": 9,
        }
        append_result(
            folder / "results.jsonl",
            GameResult(name, game.side, winner, arena=game.map, seed=game.seed, extra=extra),
        )


def test_each_change_gets_its_paired_differences_and_a_picture(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    _player(bench, "strong", 20, 5)
    _player(bench, "weak", 0, 1)
    _player(bench, "twin", 0, 1)
    (bench / "leaderboard.json").write_text(json.dumps({"suites": {"presets": {"pairs": PAIRS}}}))
    comparisons = [
        effects_script.parse_comparison("better=strong:weak"),
        effects_script.parse_comparison("nothing=twin:/runs/weak.pt"),
    ]
    result = effects_script.effects(bench, comparisons, None)
    better, nothing = result["better"], result["nothing"]
    # Every one of the 20 games won against lost, set up against not, 5 offensives against 1.
    assert better["score"]["games"] == 20 and better["score"]["mean"] == 1.0
    assert better["score"]["low"] == better["score"]["high"] == 1.0
    assert better["setup"]["mean"] == 1.0 and better["setup"]["p_value"] == pytest.approx(2 / 2**20)
    assert better["offensives"]["mean"] == 4.0 and better["offensives"]["p_value"] < 1e-5
    assert all(nothing[m]["mean"] == 0.0 and nothing[m]["p_value"] == 1.0 for m in effects_script.MEASURES)
    text = effects_script.format_table(result)
    assert "| better | 20 | +1.000 [+1.000, +1.000]" in text and "| nothing | 20 | +0.000" in text
    out = tmp_path / "pictures" / "effects.png"
    effects_script.draw(result, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_comparison_that_cannot_be_read_is_one_line() -> None:
    for bad in ("strong:weak", "label=strong", "=a:b", "label=a1,a2:b1"):
        with pytest.raises(SystemExit, match="error: "):
            effects_script.parse_comparison(bad)
