"""`hoi4-arena ratings`: Bradley-Terry ratings recover known strengths, the AI stays at its anchor, a
player that never scored is finite and last, a draw is half a win, head-to-head games move ratings and
count once, the bootstrap keeps a map's games together and repeats with its seed, bad input is one line."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.evaluation.ratings import (
    ANCHOR_RATING,
    RatingsConfig,
    benchmark_games,
    fit,
    rate,
    refresh_ratings,
    run_ratings,
    score_matrix,
)
from hoi4_arena.maps.held_out import suite_games
from hoi4_arena.results import GameResult

runner = CliRunner()


def _outcome_winner(side: str, outcome: str) -> str | None:
    other = "RED" if side == "BLU" else "BLU"
    return {"win": side, "draw": None, "loss": other}[outcome]


def _write_player(bench: Path, suite: str, player: str, outcomes: list[str], kind: str = "scripted") -> None:
    """A benchmark player's folder: its outcomes against the AI on the suite's games, in plan order."""
    folder = bench / suite / player
    folder.mkdir(parents=True)
    (folder / "player.json").write_text(json.dumps({"player": player, "kind": kind, "checkpoint": None}))
    rows = [
        GameResult(
            player, g.side, _outcome_winner(g.side, o), arena=g.map, seed=g.seed, extra={"game": g.index}
        )
        for g, o in zip(suite_games(suite), outcomes, strict=False)
    ]
    (folder / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows))


def _elo(score: float, games: int, prior: float = 1.0) -> float:
    """The closed form for a player that met only the anchor."""
    return ANCHOR_RATING + 400 * math.log10((score + prior / 2) / (games - score + prior / 2))


def _by_player(table: dict) -> dict[str, dict]:
    return {row["player"]: row for row in table["players"]}


def _simulate(rating: float, games: int, rng: np.random.Generator) -> list[str]:
    p = 1 / (1 + 10 ** ((ANCHOR_RATING - rating) / 400))
    return ["win" if rng.random() < p else "loss" for _ in range(games)]


def test_ratings_recover_known_strengths_with_the_ai_fixed(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    truth = {"strong": 1300.0, "middling": 1100.0, "weak": 850.0}
    for suite in ("presets", "river"):
        for name, rating in truth.items():
            _write_player(tmp_path, suite, name, _simulate(rating, 80, rng))
        _write_player(tmp_path, suite, "ai", ["draw"] * 80, kind="ai")  # the AI against itself: not read
    result = run_ratings(RatingsConfig(tmp_path, resamples=50, out=tmp_path / "r"))
    overall = result["tables"]["overall"]
    assert [row["player"] for row in overall["players"]] == ["strong", "middling", "ai", "weak"]
    rows = _by_player(overall)
    assert rows["ai"]["rating"] == ANCHOR_RATING and rows["ai"]["anchor"]
    assert rows["ai"]["games"] == 480  # three players' 160 games each; its own games left out
    for name, rating in truth.items():
        assert abs(rows[name]["rating"] - rating) < 100, (name, rows[name])
        assert rows[name]["low"] < rows[name]["rating"] < rows[name]["high"]
    for suite in ("presets", "river"):
        assert _by_player(result["tables"][suite])["ai"]["rating"] == ANCHOR_RATING
    # Each player met only the AI: its rating is the closed form of its score and one virtual draw.
    games = benchmark_games(tmp_path)
    for name in truth:
        score = sum(g.score for g in games if g.a == name)
        assert rows[name]["rating"] == pytest.approx(_elo(score, 160), abs=0.05)
    for name in ("ratings.json", "ratings.md", "ratings.png"):
        assert (tmp_path / "r" / name).stat().st_size > 100


def test_a_player_that_never_scored_is_finite_and_last(tmp_path: Path) -> None:
    _write_player(tmp_path, "river", "scripted", ["win", "loss", "draw", "loss"] * 20)
    _write_player(tmp_path, "river", "random", ["loss"] * 80, kind="random")
    rows = _by_player(run_ratings(RatingsConfig(tmp_path, resamples=20))["tables"]["river"])
    assert math.isfinite(rows["random"]["rating"]) and rows["random"]["rating"] < rows["ai"]["rating"]
    assert rows["random"]["rating"] == pytest.approx(_elo(0, 80), abs=0.05)  # 118: the prior's bound
    assert rows["random"]["prior_bound"] == "never scored" and rows["scripted"]["prior_bound"] is None
    assert (tmp_path / "ratings.md").read_text().count("(never scored") == 2  # river and overall


def test_a_draw_counts_half_a_win(tmp_path: Path) -> None:
    _write_player(tmp_path, "presets", "drawer", ["draw"] * 80)
    _write_player(tmp_path, "presets", "even", ["win", "loss"] * 40)
    _write_player(tmp_path, "presets", "mixed", ["win", "draw", "draw", "draw"] * 20)  # 20 + 30 of 80
    rows = _by_player(run_ratings(RatingsConfig(tmp_path, resamples=0))["tables"]["presets"])
    assert rows["drawer"]["rating"] == rows["even"]["rating"] == ANCHOR_RATING
    assert rows["mixed"]["rating"] == pytest.approx(_elo(50, 80), abs=0.05)
    assert rows["mixed"]["score"] == 0.625


def _head_to_head_file(path: Path, a: str, b: str, a_wins: int, pairs: int) -> Path:
    """collect-pair's rows: each game once from either side, A as BLU on game 2k and RED on 2k + 1."""
    lines = []
    for game in range(2 * pairs):
        a_side = "BLU" if game % 2 == 0 else "RED"
        b_side = "RED" if a_side == "BLU" else "BLU"
        winner = a_side if game < a_wins else b_side
        for player, opponent, side in ((a, b, a_side), (b, a, b_side)):
            row = GameResult(player, side, winner, arena="river:1000", seed=game // 2, opponent=opponent)
            lines.append(json.dumps({**row.to_dict(), "game": game}) + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines))
    return path


def test_head_to_head_games_move_the_ratings_and_count_once(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    for name in ("alpha", "beta"):
        _write_player(bench, "river", name, ["win", "loss"] * 40)  # both even against the AI
    alone = _by_player(
        run_ratings(RatingsConfig(bench, resamples=0, out=tmp_path / "a"))["tables"]["overall"]
    )
    assert alone["alpha"]["rating"] == alone["beta"]["rating"] == ANCHOR_RATING
    h2h = _head_to_head_file(tmp_path / "h2h" / "head-to-head" / "results.jsonl", "alpha", "beta", 30, 20)
    config = RatingsConfig(bench, head_to_head=(tmp_path / "h2h",), resamples=0, out=tmp_path / "b")
    rows = _by_player(run_ratings(config)["tables"]["overall"])
    assert rows["alpha"]["rating"] > ANCHOR_RATING > rows["beta"]["rating"]
    assert rows["alpha"]["games"] == 80 + 40 and rows["beta"]["games"] == 80 + 40  # one game, two rows
    assert rows["alpha"]["rating"] - ANCHOR_RATING == pytest.approx(ANCHOR_RATING - rows["beta"]["rating"])
    # The file given by name is read the same as its folder.
    same = RatingsConfig(bench, head_to_head=(h2h,), resamples=0, out=tmp_path / "c")
    assert _by_player(run_ratings(same)["tables"]["overall"])["alpha"]["rating"] == rows["alpha"]["rating"]


def test_a_benchmark_folders_league_table_is_made_again_as_it_was_made(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    assert refresh_ratings(bench) is None  # no league table yet: nothing to refresh
    _write_player(bench, "river", "alpha", ["win", "loss"] * 40)
    _write_player(bench, "river", "beta", ["win", "loss"] * 40)
    h2h = _head_to_head_file(tmp_path / "h2h" / "results.jsonl", "alpha", "beta", 30, 20)
    made = run_ratings(RatingsConfig(bench, head_to_head=(h2h,), resamples=12, seed=5, prior_draws=2.0))
    _write_player(bench, "presets", "gamma", ["win"] * 80)  # a later benchmark run adds a player
    again = refresh_ratings(bench)
    assert again is not None and again["left_out"] == []
    assert again["method"] == made["method"] and again["sources"] == made["sources"]
    rows = _by_player(again["tables"]["overall"])
    assert rows["alpha"]["rating"] == pytest.approx(_by_player(made["tables"]["overall"])["alpha"]["rating"])
    assert rows["gamma"]["games"] == 80
    assert json.loads((bench / "ratings.json").read_text())["tables"] == again["tables"]
    # A head-to-head file gone since is left out and named; the benchmark's games still count.
    h2h.unlink()
    gone = refresh_ratings(bench)
    assert gone is not None and gone["left_out"] == [str(h2h)] and gone["sources"]["head_to_head"] == []
    assert _by_player(gone["tables"]["overall"])["alpha"]["games"] == 80
    (bench / "ratings.json").write_text("[1, 2]")
    with pytest.raises(UserError, match="not a ratings file"):
        refresh_ratings(bench)


def test_the_fit_is_bradley_terry_by_hand() -> None:
    # Three players around the anchor; at the maximum the expected scores equal the observed ones.
    wins = np.array([[0.0, 5.0, 9.0], [7.0, 0.0, 6.0], [3.0, 4.0, 0.0]])
    ratings = fit(wins, prior_draws=1.0)
    assert ratings[0] == ANCHOR_RATING
    augmented = wins.copy()
    augmented[1:, 0] += 0.5
    augmented[0, 1:] += 0.5
    games = augmented + augmented.T
    p = 1 / (1 + 10 ** ((ratings[None, :] - ratings[:, None]) / 400))
    assert np.allclose((games * p).sum(axis=1)[1:], augmented.sum(axis=1)[1:], atol=1e-8)


def test_the_bootstrap_keeps_a_maps_games_together_and_repeats_with_its_seed(tmp_path: Path) -> None:
    # "paired" wins one side of every map and loses the other: every resample of maps gives it the
    # same 0.5, so its interval has no width; resampling single games would spread it.
    _write_player(tmp_path, "presets", "paired", ["win", "loss"] * 40)
    rng = np.random.default_rng(3)
    _write_player(tmp_path, "presets", "noisy", _simulate(1050, 80, rng))
    games = benchmark_games(tmp_path)
    first = _by_player({"players": rate(games, 200, 5, 1.0)})
    assert first["paired"]["low"] == first["paired"]["high"] == ANCHOR_RATING
    assert first["noisy"]["low"] < first["noisy"]["rating"] < first["noisy"]["high"]
    again = _by_player({"players": rate(games, 200, 5, 1.0)})
    other = _by_player({"players": rate(games, 200, 6, 1.0)})
    assert again == first
    assert (other["noisy"]["low"], other["noisy"]["high"]) != (first["noisy"]["low"], first["noisy"]["high"])


def test_invalid_games_are_left_out(tmp_path: Path) -> None:
    _write_player(tmp_path, "river", "scripted", ["win"] * 10 + ["loss"] * 10)
    path = tmp_path / "river" / "scripted" / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows[:10]:
        row["valid"] = False  # its wins were harness faults
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    games = benchmark_games(tmp_path)
    assert len(games) == 10 and all(g.score == 0 for g in games)
    assert score_matrix(["ai", "scripted"], games)[0, 1] == 10


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="no benchmark games"):
        run_ratings(RatingsConfig(empty))
    _write_player(tmp_path / "bench", "river", "scripted", ["win"] * 4)
    foreign = tmp_path / "notes.jsonl"
    foreign.write_text('{"loss": 3}\n')
    with pytest.raises(UserError, match="notes.jsonl:1: not a result row"):
        run_ratings(RatingsConfig(tmp_path / "bench", head_to_head=(foreign,)))
    with pytest.raises(UserError, match="no results.jsonl"):
        run_ratings(RatingsConfig(tmp_path / "bench", head_to_head=(empty,)))
    with pytest.raises(UserError, match="--prior-draws"):
        RatingsConfig(tmp_path / "bench", prior_draws=0)
    # Through the real entry point: a folder that is no benchmark, a file that is not results.
    for args in ([str(empty)], [str(tmp_path / "bench"), "--head-to-head", str(foreign)]):
        bad = subprocess.run(
            [sys.executable, "-m", "hoi4_arena.cli", "ratings", *args], capture_output=True, text=True
        )
        assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1


def test_the_command_prints_the_table_and_json(tmp_path: Path) -> None:
    _write_player(tmp_path, "river", "scripted", ["win", "loss", "loss", "win"] * 20)
    result = runner.invoke(app, ["ratings", str(tmp_path), "--resamples", "30", "--seed", "2"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout[result.stdout.index("{") :])
    assert data["method"]["resamples"] == 30 and data["method"]["seed"] == 2
    assert [row["player"] for row in data["tables"]["river"]["players"]] == ["ai", "scripted"]
    assert "| 1 | ai | 1000 anchor |" in (tmp_path / "ratings.md").read_text()
