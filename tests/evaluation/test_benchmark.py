"""`hoi4-arena benchmark`: the suites are held_out_pairs' games, a tiny run makes the leaderboard and the
pair comparisons, a resumed run plays nothing twice, players are compared on the games both have, bad
input is one line; and the guard that keeps training off the suites' maps (maps/held_out.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.evaluation.benchmark import leaderboard
from hoi4_arena.maps.held_out import on_suite_maps, refuse_suite_maps, session_map, suite_games, suite_maps
from hoi4_arena.play.benchmark import HANDS, BenchmarkConfig
from hoi4_arena.results import GameResult, append_result
from project_scripts import load_script

runner = CliRunner()
RESULTS = "results.jsonl"


def _held_out_pairs():
    return load_script("held_out_pairs")


@pytest.mark.parametrize(("suite", "old_set"), [("presets", "train-presets"), ("river", "river")])
def test_the_suites_are_the_games_held_out_pairs_fixed(suite: str, old_set: str) -> None:
    old = _held_out_pairs()
    # The script's two parts of 20 pairs each: part p plays seed 3000 + 20p + k on its k-th map.
    maps = [m for part in range(old.PARTS) for m in old.maps(old_set, part).split(",")]
    seeds = [old.SEED + k for k in range(old.PARTS * old.PART_PAIRS)]
    assert suite_maps(suite) == maps and len(maps) == 40
    games = suite_games(suite)
    assert [(g.map, g.seed, g.side) for g in games[::2]] == [
        (m, s, "BLU") for m, s in zip(maps, seeds, strict=True)
    ]
    assert [(g.map, g.seed, g.side) for g in games[1::2]] == [
        (m, s, "RED") for m, s in zip(maps, seeds, strict=True)
    ]
    assert [g.index for g in games] == list(range(80))
    assert all(on_suite_maps(m) for m in maps)


def test_a_checkpoints_default_decoding_is_the_quickstarts() -> None:
    from hoi4_arena.quickstart import PLAY_SETTINGS

    config = BenchmarkConfig(players=["random"], out=Path("unused"))
    decoding = {
        "point": config.mode == "point",
        "reset_memory": config.reset_memory,
        "follow_through": config.follow_through,
        "temperature": config.temperature,
    }
    assert decoding == PLAY_SETTINGS


def test_the_demo_hand_is_the_quickstarts() -> None:
    from hoi4_arena.quickstart import DEMO_HAND

    assert HANDS["demo"] == DEMO_HAND


def test_a_hand_makes_another_player_whose_games_take_it(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    report = _run(
        "scripted", "scripted:quick", str(out), "--pairs", "1", "--suite", "river", "--max-days", "4"
    )
    assert set(report["suites"]["river"]["players"]) == {"scripted", "scripted-quick"}
    folder = out / "river" / "scripted-quick"
    identity = json.loads((folder / "player.json").read_text())
    assert identity["kind"] == "scripted" and identity["hand"] == "quick"
    settings = json.loads((folder / "record-ai.json").read_text())["settings"]
    assert settings["think_s"] == [0.0, 0.0] and settings["press_delay_s"] == [0.0, 0.0]
    default = json.loads((out / "river" / "scripted" / "record-ai.json").read_text())["settings"]
    assert "think_s" not in default  # the person-like default, as every earlier benchmark played it
    # The same games from both sides; the quick hand's orders come sooner in each.
    quick, slow = (
        {(r["seed"], r["side"]): r for r in _lines(out / "river" / name / "results.jsonl")}
        for name in ("scripted-quick", "scripted")
    )
    assert set(quick) == set(slow) and len(quick) == 2
    for key in quick:  # the quick hand forms the army a day sooner; in four days only it draws a front
        assert quick[key]["setup"]["army"] < slow[key]["setup"]["army"]
        assert quick[key]["setup"]["front"] is not None and slow[key]["setup"]["front"] is None


def _run(*args: str) -> dict:
    result = runner.invoke(app, ["benchmark", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("{") :])


def _by_player(table: dict) -> dict[str, dict]:
    return {row["player"]: row for row in table["players"]}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_tiny_run_makes_the_leaderboard_and_resumes_without_playing_twice(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    quick = ["--suite", "river", "--max-days", "3"]
    report = _run("random", "ai", str(out), "--pairs", "1", *quick)
    board = report["suites"]["river"]
    assert sorted(row["player"] for row in board["table"]) == ["ai", "random"]
    assert all(row["valid"] == 2 and row["planned"] == 2 for row in board["table"])
    (pair,) = board["compared"]
    assert (
        pair["paired_games"] == 2
        and pair["complete"]
        and {pair["players"]["a"], pair["players"]["b"]} == {"ai", "random"}
    )
    rows = _lines(out / "river" / "random" / "results.jsonl")
    assert [(r["arena"], r["seed"], r["side"]) for r in rows] == [
        ("river:1000", 3000, "BLU"),
        ("river:1000", 3000, "RED"),
    ]
    assert not (out / "presets").exists()
    for player, settings in (("random", "play.json"), ("ai", "record-ai.json")):  # not recorded: no sessions
        assert sorted(p.name for p in (out / "river" / player).iterdir()) == sorted(
            [RESULTS, settings, "player.json"]
        )
    text = (out / "leaderboard.md").read_text()
    first, second = pair["players"]["a"], pair["players"]["b"]
    assert "## river: 1 map" in text and "| random | 2 |" in text and f"| {first} | {second} | 2 |" in text
    assert json.loads((out / "leaderboard.json").read_text())["suites"]["river"]["games"] == 2

    again = _run("random", "ai", str(out), "--pairs", "1", *quick)
    assert again["runs"] == {f"river/{p}": {"played": 0, "already": 2} for p in ("random", "ai")}
    assert _lines(out / "river" / "random" / "results.jsonl") == rows
    assert not (out / "ratings.json").exists()  # the leaderboard has its ratings; no league file unasked
    made = runner.invoke(app, ["ratings", str(out), "--resamples", "20", "--seed", "3"])
    assert made.exit_code == 0, made.output

    # --pairs grows: only the new pair's games are played; ai, not named now, stays on the board with its 2.
    grown = _run("random", str(out), "--pairs", "2", *quick)
    assert grown["runs"] == {"river/random": {"played": 2, "already": 2}}
    more = _lines(out / "river" / "random" / "results.jsonl")
    assert more[:2] == rows and [(r["arena"], r["seed"]) for r in more[2:]] == [("river:1001", 3001)] * 2
    table = {row["player"]: row for row in grown["suites"]["river"]["table"]}
    assert table["random"]["valid"] == 4 and table["ai"]["valid"] == 2 and table["ai"]["planned"] == 4
    (pair,) = grown["suites"]["river"]["compared"]
    assert pair["paired_games"] == 2  # compared on the games both have
    # The league table `ratings` left in the folder is made again with its settings, the new games in it.
    league = json.loads((out / "ratings.json").read_text())
    assert _by_player(league["tables"]["river"])["random"]["games"] == 4
    assert (league["method"]["resamples"], league["method"]["seed"]) == (20, 3)


def test_two_decodings_of_one_checkpoint_are_two_players(tmp_path: Path) -> None:
    import hashlib

    import torch

    from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint
    from hoi4_arena.models.checkpoint import Provenance
    from tiny import TINY

    torch.set_num_threads(1)
    checkpoint = save_checkpoint(
        tmp_path / "tiny.pt",
        Policy(PolicyConfig(layout="cpu", **TINY)),
        provenance=Provenance(data="none", seed=0),
    )
    out = tmp_path / "bench"
    quick = ["--suite", "river", "--pairs", "1", "--max-days", "1"]
    first = _run(str(checkpoint), str(out), *quick)
    second = _run(
        str(checkpoint), str(out), *quick, "--mode", "sample", "--no-follow-through", "--temperature", "1"
    )
    third = _run(str(checkpoint), str(out), *quick, "--max-hold", "2")
    prefix = hashlib.sha256(checkpoint.read_bytes()).hexdigest()[:12]
    played = {**first["runs"], **second["runs"], **third["runs"]}
    assert set(played) == {
        f"river/{prefix}-point-t0.7-m8-ft",
        f"river/{prefix}-sample-t1-m8",
        f"river/{prefix}-point-t0.7-m8-ft-h2",  # a decoding added later: a new player, the others kept
    }
    assert all(run["played"] == 2 for run in played.values())
    held = third["suites"]["river"]["players"][f"{prefix}-point-t0.7-m8-ft-h2"]
    assert held["max_hold"] == 2
    players = second["suites"]["river"]["players"]
    assert {p["mode"] for p in players.values()} == {"point", "sample"}
    assert all(
        p["sha256"].startswith(prefix) and p["checkpoint"] == str(checkpoint) for p in players.values()
    )
    assert second["suites"]["river"]["compared"][0]["paired_games"] == 2
    text = (out / "leaderboard.md").read_text()
    assert f"- {prefix}-sample-t1-m8: {checkpoint}" in text  # which file a folder's name stands for


def test_players_are_compared_on_the_games_both_have(tmp_path: Path) -> None:
    """Synthetic rows: A won both pairs' BLU games and drew the last; B drew the first and lacks the second
    pair."""
    (tmp_path / "benchmark.json").write_text("{}")
    games = suite_games("presets", 2)
    outcomes = {"a": ["BLU", "BLU", "BLU", None], "b": [None, "BLU"]}
    for name, winners in outcomes.items():
        folder = tmp_path / "presets" / name
        folder.mkdir(parents=True)
        (folder / "player.json").write_text(json.dumps({"player": name}))
        for game, winner in zip(games, winners, strict=False):
            setup = {"complete": name == "a" or game.side == "BLU"}
            # a's rows say how it fought (b's, as rows from before war_summary, do not).
            war = {"offensives": 2 if game.side == "BLU" else 1, "executing_days": 5} if name == "a" else None
            row = GameResult(
                name,
                game.side,
                winner,
                arena=game.map,
                seed=game.seed,
                extra={"game": game.index, "setup": setup, "days": 10, **({"war": war} if war else {})},
            )
            append_result(folder / "results.jsonl", row)
    settings = {"max_days": 365, "size": "960x540", "speed": 5, "ai_strength": 0.5}
    board = leaderboard(tmp_path, ("presets",), 2, settings)["suites"]["presets"]
    rows = {row["player"]: row for row in board["table"]}
    assert (rows["a"]["wins"], rows["a"]["draws"], rows["a"]["losses"]) == (2, 1, 1)
    assert rows["a"]["mean_score"] == pytest.approx(2.5 / 4) and rows["a"]["setup_complete"] == 4
    assert (rows["b"]["wins"], rows["b"]["draws"], rows["b"]["losses"], rows["b"]["valid"]) == (0, 1, 1, 2)
    assert [row["player"] for row in board["table"]] == ["a", "b"]  # best mean score first
    assert rows["a"]["offensives"] == 1.5 and rows["a"]["executing_share"] == 0.5  # 20 of 40 days
    assert math.isnan(rows["b"]["offensives"]) and math.isnan(rows["b"]["executing_share"])
    (pair,) = board["compared"]
    assert pair["paired_games"] == 2 and pair["planned_games"] == 2
    assert pair["table"] == {"both_won": 0, "only_a_won": 1, "only_b_won": 0, "neither_won": 1}
    assert pair["setup_complete"]["only_a"] == 1 and pair["setup_complete"]["only_b"] == 0
    text = (tmp_path / "leaderboard.md").read_text()
    assert "| b | 2 of 4 |" in text and "| a | b | 2 |" in text
    assert "| offensives a game | days executing |" in text and "| 0.625 | 1.5 | 50.0% |" in text
    assert "| 0.250 | - | - |" in text
    # The league table: a scored 2.5 of 4 against the AI, b 0.5 of 2 (evaluation/ratings.py).
    ratings = json.loads((tmp_path / "leaderboard.json").read_text())["ratings"]["tables"]["presets"]
    assert [row["player"] for row in ratings["players"]] == ["a", "ai", "b"]
    assert "## Ratings" in text and "| 1 | a |" in text
    # A run of the other suite alone keeps this suite's table.
    both = leaderboard(tmp_path, ("river",), 2, settings)["suites"]
    kept = [(row["player"], row["wins"], row["valid"]) for row in both["presets"]["table"]]
    assert set(both) == {"presets", "river"} and kept == [("a", 2, 4), ("b", 0, 2)]
    assert both["river"]["table"] == [] and "## presets" in (tmp_path / "leaderboard.md").read_text()


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    def refused(args: list[str], message: str) -> None:
        result = runner.invoke(app, ["benchmark", *args])
        assert isinstance(result.exception, UserError), result.output
        assert message in str(result.exception) and "\n" not in str(result.exception), str(result.exception)

    out = str(tmp_path / "bench")
    refused(["random", "nothing.pt", out], "neither a checkpoint file nor scripted")
    refused(["random", out, "--pairs", "41"], "--pairs must be")
    refused(["random", out, "--suite", "lakes"], "--suite must be")
    refused(["random", out, "--mode", "sample"], "--follow-through")
    refused(["random", "random", out], "given twice")
    refused(["scripted:slow", out], "the hand must be one of quick, demo")
    refused(["ai:quick", out], "neither a checkpoint file nor scripted")
    refused(["scripted:quick", "scripted:quick", out], "given twice")
    assert not (tmp_path / "bench").exists()
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "notes.txt").write_text("x")
    refused(["random", out, "--pairs", "1", "--max-days", "1"], "not empty")


# --- the guard ------------------------------------------------------------------------------------


def test_the_guard_knows_the_suites_maps(tmp_path: Path) -> None:
    assert on_suite_maps("river") and on_suite_maps("river:3") and on_suite_maps("plains:1000")
    assert not on_suite_maps("plains") and not on_suite_maps("plains:999") and not on_suite_maps("ford:0")
    assert on_suite_maps("plains", map_seeds=(0, 1000)) and not on_suite_maps("plains", map_seeds=(0, 999))
    from hoi4_arena.maps import load_arena

    load_arena("river:2").save(tmp_path / "saved")  # a saved map folder says which preset it was made from
    assert on_suite_maps(str(tmp_path / "saved"))
    assert session_map("plains", {"record_ai": {"map": "plains:1003"}}) == "plains:1003"
    assert session_map("plains", {"play": {"map": "bay:7"}}) == "bay:7" and session_map("ford", {}) == "ford"
    with pytest.raises(UserError, match="river:5 is on the benchmark's maps"):
        refuse_suite_maps(["plains:3", None, "river:5"], "--arena")
    refuse_suite_maps(["plains:3", None], "--arena")


@pytest.mark.parametrize(
    ("settings", "shown"),
    [
        ({"arena": ("river",)}, "--arena river"),
        ({"arena": ("plains", "ford:1000")}, "--arena ford:1000"),
        ({"arena": ("plains",), "map_seeds": (0, 1000)}, "--arena plains with map seeds 0-1000"),
    ],
)
def test_train_ppo_refuses_the_suites_maps(tmp_path: Path, settings: dict, shown: str) -> None:
    from hoi4_arena.rl.ppo_config import PPOConfig

    with pytest.raises(UserError, match=f"{shown} is on the benchmark's maps"):
        PPOConfig(out=str(tmp_path / "ppo"), **settings)
    assert PPOConfig(out=str(tmp_path / "ppo"), arena=("plains", "ford:999"), map_seeds=(0, 999)).arena
