"""scripts/recipe_pairs.py: two recipes' policies paired seed by seed on a benchmark's games, pooled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoi4_arena.maps.held_out import suite_games
from hoi4_arena.results import GameResult, append_result
from project_scripts import load_script

pairs_script = load_script("recipe_pairs")


def _player(bench: Path, name: str, checkpoint: str, winners: list[str | None], offensives: int) -> None:
    """NAME's games of the presets suite's first two pairs: the winners in plan order; a setup wherever
    NAME's side won."""
    folder = bench / "presets" / name
    folder.mkdir(parents=True)
    (folder / "player.json").write_text(json.dumps({"player": name, "checkpoint": checkpoint}))
    for game, winner in zip(suite_games("presets", 2), winners, strict=True):
        extra = {
            "game": game.index,
            "setup": {"complete": winner == game.side},
            "war": {"offensives": offensives, "executing_days": 3},
            "days": 10,
        }
        append_result(
            folder / "results.jsonl",
            GameResult(name, game.side, winner, arena=game.map, seed=game.seed, extra=extra),
        )


def test_seeds_pair_with_their_own_and_pool(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    # The plan's sides are BLU, RED, BLU, RED: a1 wins games 0, 2, 3; b1 0, 1; a2 0 (and draws 1); b2 0, 1, 2.
    _player(bench, "a1", "/runs/a/bc/last.pt", ["BLU", "BLU", "BLU", "RED"], 4)
    _player(bench, "b1", "/runs/b/bc/last.pt", ["BLU", "RED", "RED", "BLU"], 1)
    _player(bench, "a2", "/runs/a/bc-2/last.pt", ["BLU", None, "RED", "BLU"], 2)
    _player(bench, "b2", "/runs/b/bc-2/last.pt", ["BLU", "RED", "BLU", "BLU"], 1)
    (bench / "leaderboard.json").write_text(json.dumps({"suites": {"presets": {"pairs": 2}}}))
    # By folder name and by checkpoint path alike.
    result = pairs_script.report(bench, ["a1", "/runs/a/bc-2/last.pt"], ["/runs/b/bc/last.pt", "b2"])
    assert result["pairs"] == 2 and result["seeds"] == 2 and set(result["suites"]) == {"presets", "all"}
    entry = result["suites"]["presets"]
    assert entry["games"] == 8 and (entry["a"]["wins"], entry["b"]["wins"]) == (4, 5)
    # Seed by seed, never across: a1 alone won games 2 and 3 (b1 alone 1), b2 alone 1 and 2.
    assert entry["wins"] == {"only_a": 2, "only_b": 3, "p_value": 1.0}
    assert entry["setups"] == entry["wins"]  # a setup wherever the side won
    assert entry["a"]["offensives"] == 3.0 and entry["b"]["offensives"] == 1.0
    # scores: seed 1 0 - 1 + 1 + 1, seed 2 0 - 0.5 - 1 + 0
    assert entry["score_difference"]["estimate"] == pytest.approx(-0.5 / 8)
    assert result["suites"]["all"] == entry
    text = pairs_script.format_report(result)
    assert "| presets | 8 | 4 / 5 | 2 / 3, p = 1 |" in text and "| 3.0/1.0 |" in text


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    _player(bench, "a1", "/runs/a/bc/last.pt", ["BLU", None, None, None], 1)
    with pytest.raises(SystemExit, match="same number of policies"):
        pairs_script.report(bench, ["a1"], ["a1", "a1"], 2)
    with pytest.raises(SystemExit, match="no player of that name or checkpoint"):
        pairs_script.report(bench, ["a1"], ["/runs/nowhere.pt"], 2)
    with pytest.raises(SystemExit, match="no leaderboard.json"):
        pairs_script.report(bench, ["a1"], ["a1"])
