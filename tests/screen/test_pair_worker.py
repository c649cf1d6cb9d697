"""The paired workers (`screen/pair_worker.py`): the cadence barrier, each side's input on its own screen, a
side that never comes, the one-screen case equal to `SimWorker`, and the same game twice."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hoi4_arena.play.random_policy import RandomPolicy
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.game import GameSettings, TokenPlayer, play_game
from hoi4_arena.screen.pair_worker import PairHub
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.tokens import DECISION_NS, SLOT_NS
from hoi4_arena.screen.worker import CaptureRequest, WorkerError

SIZE = (360, 640)
KINDS = {"BLU": "policy", "RED": "policy"}


def moves(t0: int, x: int, y: int) -> list[InputEvent]:
    return [InputEvent(t0 + i * SLOT_NS, "move", x + i, y, source="policy") for i in range(8)]


def test_the_world_waits_for_both_sides_and_takes_each_tick_input_before_passing_it() -> None:
    with PairHub("plains:1", 2, size=SIZE, layout="cpu", player_kinds=KINDS) as hub:
        blu, red = hub.worker("BLU"), hub.worker("RED")
        for w in (blu, red):
            w.attach()
            w.arm("match")
        seen: list[tuple[str, int, int]] = []  # (side, world time when its input was applied, its tick)
        game = hub.game

        def side(worker, x: int, slow_s: float) -> None:
            for tick in range(6):
                t0 = tick * DECISION_NS
                assert worker.now_ns() == t0
                time.sleep(slow_s)  # a slow player: the other side must wait for it, not run ahead
                seen.append((worker.side, game.now_ns, t0))
                worker.apply(moves(t0, x, 100 + tick), timed=True)
                worker.wait_until(t0 + DECISION_NS)

        threads = [
            threading.Thread(target=side, args=(blu, 100, 0.0)),
            threading.Thread(target=side, args=(red, 300, 0.02)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(seen) == 12
        # Neither side's tick-T input was applied after the world had stepped past T.
        assert all(now == t0 for _, now, t0 in seen)
        assert game.now_ns == 6 * DECISION_NS
        for w in (blu, red):
            fed = [f for f in w.fed_log if f.kind == "move"]
            assert len(fed) == 48
            assert all(f.fed_ns == f.planned_ns for f in fed)  # each slot at its own virtual time
        # Each side's moves went to its own screen only.
        assert game.screens["BLU"].ui.pointer == (107, 105)
        assert game.screens["RED"].ui.pointer == (307, 105)


def test_a_side_that_never_comes_is_a_disconnect_and_a_side_that_leaves_frees_the_other() -> None:
    with PairHub("plains:1", 2, size=SIZE, layout="cpu", barrier_timeout_s=0.3, player_kinds=KINDS) as hub:
        blu = hub.worker("BLU")
        with pytest.raises(WorkerError, match="disconnect.*RED"):
            blu.wait_until(DECISION_NS)
        assert hub.game.now_ns == 0  # the world did not run ahead of RED
        hub.worker("RED").leave("its game ended")
        blu.wait_until(DECISION_NS)
        assert hub.game.now_ns == DECISION_NS


def _one_game(worker, side: str, decisions: int):
    player = TokenPlayer(RandomPolicy(), seed=3, side=side, speed=5)
    record = play_game(worker, player, GameSettings(side=side, speed=5, max_decisions=decisions))
    frame = worker.capture(CaptureRequest(views=False, full=True)).frame
    lines, _ = worker.game_log(0)
    return record, frame, lines, [tuple(f) for f in worker.fed_log]


def test_one_side_against_the_ai_plays_as_the_one_player_worker() -> None:
    with SimWorker(
        "plains:1", 3, size=SIZE, layout="cpu", player="RED", max_days=10, player_kind="policy"
    ) as w:
        solo = _one_game(w, "RED", 60)
    with PairHub(
        "plains:1",
        3,
        size=SIZE,
        layout="cpu",
        sides=("RED",),
        ai={"BLU": 0.5},
        max_days=10,
        player_kinds={"RED": "policy"},
    ) as hub:
        paired = _one_game(hub.worker("RED"), "RED", 60)
    assert solo[0] == paired[0]
    assert np.array_equal(solo[1], paired[1])
    assert solo[2] == paired[2]
    assert solo[3] == paired[3]


def _pair_game(seed: int):
    from hoi4_arena.play.pair import play_pair_game

    with PairHub("plains:1", seed, size=SIZE, layout="cpu", max_days=10, player_kinds=KINDS) as hub:
        players = {s: TokenPlayer(RandomPolicy(), seed=seed, side=s, speed=5) for s in hub.game.sides}
        settings = {s: GameSettings(side=s, speed=5, max_decisions=80) for s in hub.game.sides}
        sides = play_pair_game(hub, players, settings)
        lines, _ = hub.game.log(0)
        fed = {s: [tuple(f) for f in hub.worker(s).fed_log] for s in hub.game.sides}
        frames = {s: hub.game.frame(s) for s in hub.game.sides}
    return sides, lines, fed, frames


def test_the_same_pair_game_twice_is_the_same_game() -> None:
    first, second = _pair_game(4), _pair_game(4)
    for side in ("BLU", "RED"):
        assert first[0][side]["error"] is None
        assert first[0][side]["record"] == second[0][side]["record"]
        assert first[0][side]["record"].reason == "draw: timeout"  # 10 days: the time limit
        assert np.array_equal(first[3][side], second[3][side])
    assert first[1] == second[1]
    assert first[2] == second[2]
    assert any(f[0] == "move" for f in first[2]["BLU"]) and any(f[0] == "move" for f in first[2]["RED"])
