"""collect-pair (`play/pair.py`, `play/pair_config.py`): whole runs of two players in one world, the gates
(a paused or desynced game is kept but invalid), frozen checkpoints refused when changed, bad configs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.play.pair import (
    DATE_BOX,
    GateProbe,
    TimedPlayer,
    check_gates,
    freeze_players,
    play_pair_game,
    run_collect_pair,
)
from hoi4_arena.play.pair_config import CollectPairConfig, PairConfig, game_seed, plan_game
from hoi4_arena.play.random_policy import RandomPolicy
from hoi4_arena.results import GameResult, read_results
from hoi4_arena.screen.game import GameSettings, TokenPlayer
from hoi4_arena.screen.pair_worker import PairHub
from hoi4_arena.sim.ui_layout import Layout

SIZE = (360, 640)
KINDS = {"BLU": "policy", "RED": "policy"}
BOX = tuple(Layout(SIZE)["date_box"])


def pair_config(tmp_path: Path, **changes) -> Path:
    data = {
        "pair_id": "test",
        "players": [
            {"player": "random", "side": "BLU", "name": "r1"},
            {"player": "random", "side": "RED", "name": "r2"},
        ],
        "budget": {"games": 2},
        "size": [640, 360],
        "max_days": 4,
        "record": False,
    }
    data.update(changes)
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.slow
def test_a_run_of_two_random_players_writes_gated_games(tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = run_collect_pair(CollectPairConfig(pair_config(tmp_path, record=True), out, progress=False))
    assert summary["games"] == 2 and summary["valid"] == 2 and not summary["failed_outside_players"]
    rows = read_results(out / "results.jsonl")
    assert len(rows) == 4  # one row per player per game
    assert {(r.player, r.side, r.extra["game"]) for r in rows} == {
        ("r1", "BLU", 0),
        ("r2", "RED", 0),
        ("r2", "BLU", 1),
        ("r1", "RED", 1),
    }  # the sides swap in the second game of the pair, on the same seed
    assert len({r.seed for r in rows}) == 1 and rows[0].seed == game_seed("test", 0)
    assert all(r.valid and r.reason == "draw: timeout" and r.opponent in ("r1", "r2") for r in rows)
    manifest = json.loads((out / "g0000" / "manifest.json").read_text())
    assert manifest["valid"] and all(manifest["gates"].values()), manifest["gate_reasons"]
    for side in ("BLU", "RED"):
        data = manifest["sides"][side]
        assert len(data["late_ms"]) == data["decisions"] > 15
        assert data["deadline_miss"] == sum(v >= 200 for v in data["late_ms"])
        assert (out / "g0000" / f"worker-{side}.jsonl").stat().st_size > 0
        from hoi4_arena.sessions.check import check_session

        session = out / "g0000" / side
        assert json.loads((session / "manifest.json").read_text())["side"] == side
        assert check_session(session)["verdict"] == "ok"
    assert summary["deadline_miss"] >= 0 and summary["late_ms"]["p99"] is not None
    # Resume: nothing left to play; another config in the same OUT is refused.
    again = run_collect_pair(CollectPairConfig(pair_config(tmp_path, record=True), out, progress=False))
    assert again["this_run"]["games"] == 0 and again["games"] == 2
    with pytest.raises(UserError, match="another pair config.*max_days"):
        run_collect_pair(
            CollectPairConfig(pair_config(tmp_path, record=True, max_days=5), out, progress=False)
        )


def test_the_games_ai_on_one_side_is_the_one_player_game(tmp_path: Path) -> None:
    players = [{"player": "random", "side": "RED", "name": "r"}, {"player": "ai", "side": "BLU"}]
    summary = run_collect_pair(
        CollectPairConfig(
            pair_config(tmp_path, players=players, budget={"games": 1}), tmp_path / "o", progress=False
        )
    )
    assert summary["valid"] == 1
    rows = read_results(tmp_path / "o" / "results.jsonl")
    assert [(r.player, r.side, r.opponent) for r in rows] == [("r", "RED", "ai")]
    manifest = json.loads((tmp_path / "o" / "g0000" / "manifest.json").read_text())
    assert manifest["sides"]["BLU"]["ai"] is True and manifest["valid"]


class _Pausing:
    """A player whose 10th decision holds the shared world paused (a fault no match-mode input can make)."""

    setup_keys = False

    def __init__(self, hub: PairHub, side: str) -> None:
        self.inner = TokenPlayer(RandomPolicy(), seed=1, side=side, speed=5)
        self.hub, self.side, self.n = hub, side, 0

    def request(self):
        return self.inner.request()

    def decide(self, capture):
        self.n += 1
        if self.n == 10:
            self.hub.game.screens[self.side].clock.held = True
        return self.inner.decide(capture)


class _Lagging(GateProbe):
    """A screen that shows the date box one sample late (a stale capture), as a lagging remote screen would."""

    def __init__(self, worker) -> None:
        super().__init__(worker, (0, 0, 1, 1), every=1 << 30)
        self._last = None

    def capture(self, request=None):
        capture = self.worker.capture(request)
        crop = capture.regions.get(DATE_BOX)
        if crop is not None:
            previous, self._last = self._last, crop
            if previous is not None:
                capture.regions[DATE_BOX] = previous
        return capture


def _gated_game(make_player, wrap=lambda side, worker: worker, decisions: int = 40):
    with PairHub("plains:1", 3, size=SIZE, layout="cpu", max_days=30, player_kinds=KINDS) as hub:
        probes = {s: GateProbe(wrap(s, hub.worker(s)), BOX, 5) for s in hub.game.sides}
        players = {s: TimedPlayer(make_player(hub, s)) for s in hub.game.sides}
        settings = {s: GameSettings(side=s, speed=5, max_decisions=decisions) for s in hub.game.sides}
        sides = play_pair_game(hub, players, settings, probes=probes)
        for side, data in sides.items():
            data.update(
                samples=probes[side].samples, hours=probes[side].hours, match_ns=probes[side].match_ns
            )
        return check_gates(sides, speed=5, box=BOX, left=dict(hub.left)), sides


def random_player(hub, side):
    return TokenPlayer(RandomPolicy(), seed=2, side=side, speed=5)


def test_a_healthy_game_passes_the_screen_gates_a_paused_one_does_not() -> None:
    gates, sides = _gated_game(random_player)
    assert {g: why for g, why in gates.items() if why} == {"winner": gates["winner"]}  # cut by max_decisions
    assert "max_decisions" in gates["winner"]
    assert all(len(d["samples"]) >= 8 for d in sides.values())
    # A world at half its speed is refused on the simulator's clock; on the wall clock (--game x11's
    # windows, where a loaded machine slows it) only a faster one is.
    for factor, lockstep, wall in ((0.5, True, False), (2.0, True, True)):
        scaled = {
            s: {**d, "hours": [(t, int(h * factor), o) for t, h, o in d["hours"]]} for s, d in sides.items()
        }
        for wall_clock, refused in ((False, lockstep), (True, wall)):
            speed = check_gates(scaled, speed=5, box=BOX, left={}, wall_clock=wall_clock)["speed"]
            assert (speed is not None) == refused, (factor, wall_clock, speed)
    # On the wall clock two workers never read their logs at one instant: each hour is compared with the
    # other side's reads just before and after it. RED's reads 100 ms later pass; a day ahead they do not.
    for ahead, desync in ((0, False), (48, True)):
        shifted = {
            s: {**d, "hours": [(t + 100_000_000, h + ahead, o) for t, h, o in d["hours"]]}
            if s == "RED"
            else d
            for s, d in sides.items()
        }
        found = check_gates(shifted, speed=5, box=BOX, left={}, wall_clock=True)["desync"]
        assert (found is not None) == desync, (ahead, found)
        assert found is None or "other days" in found
    gates, _ = _gated_game(
        lambda hub, side: _Pausing(hub, side) if side == "RED" else random_player(hub, side)
    )
    assert gates["paused"] is not None and "did not move" in gates["paused"]
    assert gates["desync"] is None and gates["ready"] is None


def test_two_screens_that_disagree_about_the_date_are_a_desync() -> None:
    gates, _ = _gated_game(random_player, wrap=lambda side, w: _Lagging(w) if side == "RED" else w)
    assert gates["desync"] is not None and "other dates" in gates["desync"]
    assert gates["paused"] is None


def test_a_player_that_raises_makes_its_game_invalid_and_the_run_goes_on(tmp_path: Path, monkeypatch) -> None:
    from hoi4_arena.play import pair

    real = pair._Players.make

    def make(self, i, side, plan, worker):
        player = real(self, i, side, plan, worker)
        if plan.index == 0 and side == "RED":

            class Broken(TokenPlayer):
                def decide(self, capture):
                    raise RuntimeError("the policy process died")

            return Broken(player.policy, seed=plan.seed, side=side, speed=5)
        return player

    monkeypatch.setattr(pair._Players, "make", make)
    summary = run_collect_pair(CollectPairConfig(pair_config(tmp_path), tmp_path / "o", progress=False))
    assert summary["games"] == 2 and summary["valid"] == 1
    assert not summary["failed_outside_players"]  # the player's failure, not the harness's
    assert summary["invalid"] == {"player": 1}
    rows = read_results(tmp_path / "o" / "results.jsonl")
    first = [r for r in rows if r.extra["game"] == 0]
    assert all(not r.valid and "the policy process died" in r.reason for r in first)
    assert all(r.valid for r in rows if r.extra["game"] == 1)


def test_a_changed_checkpoint_is_refused_by_its_hash(tmp_path: Path) -> None:
    ckpt = tmp_path / "policy.pt"
    ckpt.write_bytes(b"weights v1")
    out = tmp_path / "out"
    players = [{"player": str(ckpt), "side": "BLU"}, {"player": "random", "side": "RED"}]
    config = PairConfig.from_dict({"pair_id": "h", "players": players})
    identities = freeze_players(config, out, None)
    frozen = out / identities[0]["frozen"]
    assert frozen.read_bytes() == b"weights v1" and frozen.name == f"{identities[0]['sha256']}.pt"
    ckpt.write_bytes(b"weights v2")
    with pytest.raises(UserError, match="has changed"):
        freeze_players(config, out, identities)
    wrong = [{"player": str(ckpt), "side": "BLU", "sha256": "0" * 64}, {"player": "random", "side": "RED"}]
    with pytest.raises(UserError, match="has changed.*expects 0000"):
        freeze_players(PairConfig.from_dict({"pair_id": "h", "players": wrong}), out, None)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"players": [{"player": "alphago", "side": "BLU"}, {"player": "random", "side": "RED"}]},
            "unknown player 'alphago'",
        ),
        (
            {
                "players": [
                    {"player": "random", "side": "BLU", "name": "a"},
                    {"player": "scripted", "side": "BLU"},
                ]
            },
            "both players are on one side",
        ),
        ({"budget": {"games": 0}}, "budget.games must be a whole number >= 1"),
        ({"budget": {"games": 2, "minutes": 0}}, "budget.minutes must be a number > 0"),
        (
            {"players": [{"player": "ai", "side": "BLU"}, {"player": "ai", "side": "RED", "name": "b"}]},
            "both players are the game's AI",
        ),
        ({"players": [{"player": "random", "side": "BLU"}]}, "players must be a list of two"),
        ({"speeed": 5}, "unknown key.*speeed"),
        ({"size": [640, 480]}, "16:9"),
        ({"schedule": {"arenas": ["atlantis"]}}, "atlantis"),
    ],
)
def test_bad_pair_configs_are_refused_with_one_clear_message(tmp_path: Path, change, message) -> None:
    with pytest.raises(UserError, match=message):
        PairConfig.load(pair_config(tmp_path, **change))


def test_plans_swap_sides_on_one_salted_seed() -> None:
    config = PairConfig.from_dict(
        {
            "pair_id": "p",
            "players": [
                {"player": "random", "side": "RED", "name": "a"},
                {"player": "random", "side": "BLU", "name": "b"},
            ],
            "schedule": {"arenas": ["plains", "river:2"]},
        }
    )
    plans = [plan_game(config, i) for i in range(4)]
    assert [p.sides for p in plans] == [{"BLU": 1, "RED": 0}, {"BLU": 0, "RED": 1}] * 2
    assert plans[0].seed == plans[1].seed != plans[2].seed == plans[3].seed
    assert [p.spec for p in plans] == ["plains:0", "plains:0", "river:2", "river:2"]
    assert game_seed("p", 0) != game_seed("q", 0) and math.isfinite(game_seed("p", 0))


def test_the_command_line_refuses_a_bad_config_with_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = pair_config(tmp_path, budget={"games": 0})
    done = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "collect-pair", str(bad), str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "budget.games" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "o").exists()


def _row(player: str, side: str, seed: int, winner: str | None) -> GameResult:
    return GameResult(player=player, side=side, winner=winner, seed=seed, extra={"game": 0})


def test_head_to_head_pairs_each_seed_once_and_scores_a() -> None:
    from hoi4_arena.play.pair import head_to_head_report

    rows = [  # seed 1: A wins from both sides; seed 2: each wins as BLU; seed 3: A wins from both sides
        _row("A", "BLU", 1, "BLU"),
        _row("B", "RED", 1, "BLU"),
        _row("B", "BLU", 1, "RED"),
        _row("A", "RED", 1, "RED"),
        _row("A", "BLU", 2, "BLU"),
        _row("B", "RED", 2, "BLU"),
        _row("B", "BLU", 2, "BLU"),
        _row("A", "RED", 2, "BLU"),
        _row("A", "BLU", 3, "BLU"),
        _row("B", "RED", 3, "BLU"),
        _row("B", "BLU", 3, "RED"),
        _row("A", "RED", 3, "RED"),
    ]
    report = head_to_head_report(rows, [(1, "BLU"), (2, "BLU"), (3, "BLU")], ("A", "B"))
    assert report["paired_games"] == 3
    assert report["table"] == {"both_won": 1, "only_a_won": 2, "only_b_won": 0, "neither_won": 0}
    h2h = report["head_to_head"]
    assert h2h["a_score"] == pytest.approx(5 / 6)  # 5 of A's 6 games won
    assert h2h["a_score_low"] < h2h["a_score"] < h2h["a_score_high"] <= 1
    assert h2h["p_value"] == pytest.approx(0.5)  # two discordant seeds, both A's: 2 * (1/2)^2


@pytest.mark.slow
def test_evaluate_head_to_head_plays_a_checkpoint_against_random_in_one_world(
    tmp_path: Path, tiny_checkpoint: Path
) -> None:
    from hoi4_arena.play.evaluate import EvaluateConfig, run_evaluate

    config = EvaluateConfig(
        a=str(tiny_checkpoint),
        b="random",
        out=tmp_path / "h2h",
        pairs=2,
        size=SIZE,
        max_days=3,
        record=False,
        head_to_head=True,
        progress=False,
        deterministic=True,
    )
    report = run_evaluate(config)
    assert report["complete"] and report["planned_games"] == 2 and report["paired_games"] == 2
    assert report["collect_pair"]["games"] == 4 and not report["failed_outside_players"]
    rows = read_results(tmp_path / "h2h" / "head-to-head" / "results.jsonl")
    assert sorted((r.player, r.side) for r in rows) == sorted(
        [("ckpt/tiny", "BLU"), ("ckpt/tiny", "RED"), ("random", "BLU"), ("random", "RED")] * 2
    )
    frozen = list((tmp_path / "h2h" / "head-to-head" / "players").glob("*.pt"))
    assert len(frozen) == 1 and frozen[0].read_bytes() == tiny_checkpoint.read_bytes()
    assert json.loads((tmp_path / "h2h" / "evaluate.json").read_text())["head_to_head"]["a_score"] is not None


def test_head_to_head_decodes_a_checkpoint_as_evaluate_is_told(
    tmp_path: Path, tiny_checkpoint: Path, monkeypatch
) -> None:
    """--reset-memory, --follow-through and --max-hold reach the checkpoint's player in the pair's world
    (they did not before 2026-12-06); the pair config names them only when asked for."""
    from hoi4_arena.play import policy_player
    from hoi4_arena.play.evaluate import EvaluateConfig, run_evaluate

    made: list[policy_player.PolicyPlayer] = []
    original = policy_player.PolicyPlayer.__init__

    def spy(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(policy_player.PolicyPlayer, "__init__", spy)
    common = dict(a=str(tiny_checkpoint), b="random", pairs=1, size=SIZE, max_days=2, record=False)
    common.update(head_to_head=True, progress=False, point=True)
    run_evaluate(
        EvaluateConfig(out=tmp_path / "h", reset_memory=4, follow_through=True, max_hold=2, **common)
    )
    assert {(p.mode, p.reset_memory, p.follow_through, p.max_hold) for p in made} == {("point", 4, True, 2)}
    entry = json.loads((tmp_path / "h" / "head-to-head.json").read_text())["players"][0]
    assert (entry["reset_memory"], entry["follow_through"], entry["max_hold"]) == (4, True, 2)
    made.clear()
    run_evaluate(EvaluateConfig(out=tmp_path / "plain", **common))
    assert {(p.reset_memory, p.follow_through, p.max_hold) for p in made} == {(0, False, 0)}
    entry = json.loads((tmp_path / "plain" / "head-to-head.json").read_text())["players"][0]
    assert not {"reset_memory", "follow_through", "max_hold"} & entry.keys()
    with pytest.raises(UserError, match="max_hold must be a whole number"):
        PairConfig.load(
            pair_config(
                tmp_path,
                players=[
                    {"player": str(tiny_checkpoint), "side": "BLU", "max_hold": -1},
                    {"player": "random", "side": "RED"},
                ],
            )
        )
    with pytest.raises(UserError, match="decoding are for a checkpoint"):
        PairConfig.load(
            pair_config(
                tmp_path,
                players=[
                    {"player": "random", "side": "BLU", "max_hold": 2},
                    {"player": "scripted", "side": "RED"},
                ],
            )
        )


def test_a_game_held_paused_is_kept_invalid_and_fails_the_run(tmp_path: Path, monkeypatch) -> None:
    from hoi4_arena.play import pair

    real = pair._Players.make

    def make(self, i, side, plan, worker):
        player = real(self, i, side, plan, worker)
        if plan.index == 0 and side == "RED":
            pausing = _Pausing(worker.hub, side)  # holds the world paused at its 10th decision
            pausing.inner = player
            return pausing
        return player

    monkeypatch.setattr(pair._Players, "make", make)
    config = pair_config(tmp_path, max_decisions=60)
    summary = run_collect_pair(CollectPairConfig(config, tmp_path / "o", progress=False))
    assert summary["games"] == 2 and summary["valid"] == 1 and summary["invalid"] == {"paused": 1}
    assert len(summary["failed_outside_players"]) == 1 and "paused" in summary["failed_outside_players"][0]
    manifest = json.loads((tmp_path / "o" / "g0000" / "manifest.json").read_text())
    assert (
        not manifest["valid"]
        and manifest["gates"]["paused"] is False
        and manifest["reason"].startswith("paused")
    )
    rows = read_results(tmp_path / "o" / "results.jsonl")
    assert [r.valid for r in rows if r.extra["game"] == 0] == [False, False]


def _game(a: str, b: str, winner: str | None, k: int) -> list[GameResult]:
    """One head-to-head game of `a` (BLU) against `b` (RED): a row from either side; `winner` a name or None."""
    tag = {a: "BLU", b: "RED"}.get(winner) if winner else None
    return [
        GameResult(player=a, side="BLU", winner=tag, seed=k, opponent=b, extra={"game": k}),
        GameResult(player=b, side="RED", winner=tag, seed=k, opponent=a, extra={"game": k}),
    ]


def test_the_elo_table_orders_players_by_their_head_to_head_record() -> None:
    from hoi4_arena.play.pair import elo_table

    rows = []
    for k, winner in enumerate(["a", "a", "a", "b"]):
        rows += _game("a", "b", winner, k)
    for k, winner in enumerate(["b", "b", "b", "c"]):
        rows += _game("b", "c", winner, 10 + k)
    rows += _game("c", "a", None, 20)  # a draw counts half to each
    table = elo_table(rows, ["c", "b", "a"])
    assert [r["player"] for r in table] == ["a", "b", "c"]
    assert [r["games"] for r in table] == [5, 8, 5]
    assert table[0]["score"] == pytest.approx(3.5 / 5)
    even = elo_table(_game("x", "y", "x", 0) + _game("y", "x", "y", 1), ["x", "y"])
    assert even[0]["elo"] == pytest.approx(even[1]["elo"]) == pytest.approx(1500)
    unbeaten = elo_table(_game("x", "y", "x", 0) + _game("x", "y", "x", 1), ["x", "y"])
    assert 1500 < unbeaten[0]["elo"] < 2500 and unbeaten[0]["elo"] - 1500 == pytest.approx(
        1500 - unbeaten[1]["elo"]
    )


@pytest.mark.slow
def test_evaluate_league_plays_every_pair_and_fits_elo(tmp_path: Path, make_checkpoint) -> None:
    from hoi4_arena.play.evaluate import EvaluateConfig, run_evaluate

    league = tmp_path / "league"
    league.mkdir()
    make_checkpoint("c1").replace(league / "c1.pt")
    config = EvaluateConfig(
        a="random",
        b="random",
        out=tmp_path / "ev",
        pairs=1,
        size=SIZE,
        max_days=2,
        record=False,
        head_to_head=True,
        league=league,
        progress=False,
    )
    report = run_evaluate(config)
    assert sorted(r["player"] for r in report["league"]) == ["league/c1", "random-a", "random-b"]
    assert all(r["games"] == 4 for r in report["league"])  # 3 pairs of players, 2 games each
    assert (tmp_path / "ev" / "league" / "00-vs-02" / "results.jsonl").exists()
    assert (tmp_path / "ev" / "league" / "01-vs-02" / "results.jsonl").exists()
    with pytest.raises(UserError, match="give --head-to-head"):
        EvaluateConfig(a="random", b="random", out=tmp_path / "x", pairs=1, league=league)


@pytest.mark.slow
def test_the_scripted_player_plays_its_setup_through_its_own_screen_against_random(tmp_path: Path) -> None:
    players = [{"player": "scripted", "side": "BLU"}, {"player": "random", "side": "RED"}]
    config = pair_config(tmp_path, players=players, budget={"games": 1}, size=[960, 540], max_days=60)
    summary = run_collect_pair(CollectPairConfig(config, tmp_path / "o", progress=False))
    assert summary["valid"] == 1 and not summary["failed_outside_players"]
    rows = {r.player: r for r in read_results(tmp_path / "o" / "results.jsonl")}
    assert rows["scripted"].extra["setup"]["complete"]  # army, front, offensive, executed: seen in the log
    assert not rows["random"].extra["setup"]["army"]
    assert rows["scripted"].extra["decisions"] == rows["random"].extra["decisions"] > 0
