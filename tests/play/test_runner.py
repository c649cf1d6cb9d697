"""The one game runner: a crashed game is kept invalid and the run goes on, the capture is shared, sizes, and
the one rule every command plans its maps by (maps/specs.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
from hoi4_arena.play.random_policy import RandomPolicy
from hoi4_arena.play.record_ai import RecordAIConfig
from hoi4_arena.play.runner import GamePlan, RunLimits, _Progress, check_size, map_list, side_swapped
from hoi4_arena.screen.game import GameSettings, TokenPlayer, play_game
from hoi4_arena.screen.shared_capture import SharedCapture, covers
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.worker import CaptureRequest

SIZE = (360, 640)


def test_a_crashing_player_makes_its_game_invalid_and_the_run_goes_on(tmp_path: Path, monkeypatch) -> None:
    calls = {"n": 0}
    decide = RandomPolicy.decide

    def flaky(self, views, speed, pointer):
        calls["n"] += 1
        if calls["n"] == 7:  # the first game's fifth decision (after the warm-up)
            raise ZeroDivisionError("the test's player fell over")
        return decide(self, views, speed, pointer)

    monkeypatch.setattr(RandomPolicy, "decide", flaky)
    out = tmp_path / "run"
    summary = run_play_policy(
        PlayConfig(checkpoint="random", out=out, games=2, max_days=3, size=SIZE, progress=False)
    )
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["valid"] for r in rows] == [False, True]
    assert rows[0]["reason"] == "crash: ZeroDivisionError: the test's player fell over"
    manifest = json.loads((out / rows[0]["session"] / "manifest.json").read_text())
    assert manifest["ended"]["reason"].startswith("error: ZeroDivisionError")
    assert summary["invalid"] == 1 and summary["this_run"]["games"] == 2


def test_the_players_capture_is_the_recorders_frame() -> None:
    with SimWorker("plains", 0, size=SIZE, layout="cpu") as worker:
        shared = SharedCapture(worker)
        first = shared.capture(CaptureRequest(views=True, full=True))
        assert shared.capture(CaptureRequest(views=False, full=True)) is first
        assert shared.capture(CaptureRequest(views=True)) is first
        wanting_a_region = CaptureRequest(views=False, regions={"corner": (0, 0, 8, 8)})
        assert not covers(first, wanting_a_region)
        assert shared.capture(wanting_a_region) is not first
        shared.wait_until(worker.now_ns() + 1)
        assert shared.capture(CaptureRequest(views=False, full=True)) is not first


def test_a_game_with_a_budget_is_cut_and_invalid() -> None:
    with SimWorker("plains", 0, size=SIZE, layout="cpu", player_kind="policy") as worker:
        player = TokenPlayer(RandomPolicy(), seed=0, side="BLU", speed=5)
        record = play_game(worker, player, GameSettings(side="BLU", budget_ns=1_000_000_000))
    assert not record.valid and record.reason.startswith("cut")
    assert record.decisions == 5 and record.play_ns == 1_000_000_000


class LatePlayer(TokenPlayer):
    """The random policy's decisions, timed as a player that took `late_ns` past each capture would
    find them: that long behind the worker's clock."""

    late_ns = 2_000_000_000

    def decide(self, capture):
        return [dataclasses.replace(e, t_ns=e.t_ns - self.late_ns) for e in super().decide(capture)]


def test_a_decision_late_for_its_capture_is_played_from_now() -> None:
    with SimWorker("plains", 0, size=SIZE, layout="cpu", player_kind="policy") as worker:
        player = LatePlayer(RandomPolicy(), seed=0, side="BLU", speed=5)
        record = play_game(worker, player, GameSettings(side="BLU", speed=5, max_decisions=40))
    # Not refused as mistimed (bad_time: 2 s behind, the watchdog allows 0.75): the game ran to its limit.
    assert record.reason.startswith("max_decisions"), record.reason
    assert record.decisions == 40


def test_side_swapped_pairs() -> None:
    assert [side_swapped(i, 10) for i in range(4)] == [(10, "BLU"), (10, "RED"), (11, "BLU"), (11, "RED")]


@pytest.mark.parametrize("size", [(360, 360), (100, 178), (9000, 16000)])
def test_screens_that_are_not_16_9_or_out_of_range_are_refused(size) -> None:
    with pytest.raises(UserError, match="16:9"):
        check_size(size)
    check_size((540, 960))


@pytest.mark.parametrize(
    ("arena", "pairs"),
    [
        ("plains", ["plains:0"] * 4),  # a bare preset is its map of seed 0, whatever the game seed
        ("plains:0-999,passes:0-999", ["plains:3", "passes:4", "plains:5", "passes:6"]),
        ("bay:4-5,river:9,ford", ["bay:5", "river:9", "ford:0", "bay:4"]),  # 4 + (6 - 4) mod 2
        ("all:0-1", ["plains:1", "river:0", "passes:1", "marsh:0"]),
    ],
)
def test_every_command_plans_the_same_maps_from_one_arena(
    tmp_path: Path, arena: str, pairs: list[str]
) -> None:
    """record-ai, play-policy, evaluate (both players) and collect-pair read --arena by the one rule; the
    two games of a pair play the same map; nothing is played."""
    from hoi4_arena.play.evaluate import EvaluateConfig
    from hoi4_arena.play.pair_config import PairConfig, plan_game

    games = 2 * len(pairs)
    record = RecordAIConfig(out=tmp_path / "r", games=games, arena=arena, seed=3)
    play = PlayConfig(checkpoint="random", out=tmp_path / "p", games=games, arena=arena, seed=3)
    maps = [record.plan(i).spec for i in range(games)]
    assert maps == [spec for spec in pairs for _ in range(2)]
    assert maps == [play.game_map(i)[1] for i in range(games)]
    assert [record.plan(i).arena for i in range(games)] == [play.game_map(i)[0].name for i in range(games)]
    evaluate = EvaluateConfig(
        a="random", b="scripted", out=tmp_path / "e", pairs=len(pairs), arena=arena, seed=3
    )
    a, b = evaluate.configs
    assert [a.game_map(i)[1] for i in range(games)] == [b.plan(i).spec for i in range(games)] == maps
    pair = PairConfig.from_dict(
        {
            "pair_id": "t",
            "players": [{"player": "random", "side": "BLU"}, {"player": "scripted", "side": "RED"}],
            "schedule": {"arenas": arena.split(",")},
        }
    )
    specs = [plan_game(pair, i).spec for i in range(games)]
    assert specs[0::2] == specs[1::2]  # collect-pair's seeds are salted: a range draws other maps, same rule
    if arena == "plains":
        assert specs == maps and map_list(arena) == ["plains:0"]


def test_a_map_played_on_one_side_per_game_takes_the_entries_game_by_game(tmp_path: Path) -> None:
    play = PlayConfig(
        checkpoint="random", out=tmp_path / "p", games=4, arena="plains:0-9,ford", side="RED", seed=8
    )
    assert [play.game_map(i)[1] for i in range(4)] == ["plains:8", "ford:0", "plains:0", "ford:0"]


def test_the_progress_lines_of_games_played_at_once_or_elsewhere_count_without_a_total() -> None:
    # To a log file the bars are plain lines, and a bar whose count reached its total is left out: the
    # second bar must drop the one game's total when it counts every game's decisions (lockstep) or names
    # the game a Ray run waits for.
    with _Progress("policy", RunLimits(games=16, decisions_per_game=25), 0, True) as bar:
        bar.lockstep(8)
        bar.decisions_made(1000)
        assert any(line.startswith("decisions, 8 games at once: 1000,") for line in bar.bar.plain_lines())
        plan = GamePlan(1, "plains", "plains:0", 20, "RED", 5)
        bar.waiting(plan, 2)
        lines = bar.bar.plain_lines()
        assert any(line.startswith("waiting for game 1 (plains:0 s20 RED); 2 on Ray: 0,") for line in lines)
        assert not any("decisions" in line for line in lines)
