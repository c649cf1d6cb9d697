"""collect-pair --game x11 (`screen/pair_windows.py`): a pair game through two real windows, each side's on
its own private Xvfb and driven by its own X11 worker, gated and recorded as the headless game is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.play.pair import run_collect_pair
from hoi4_arena.play.pair_config import CollectPairConfig
from hoi4_arena.results import read_results
from hoi4_arena.sessions.check import check_session


def pair_config(tmp_path: Path, **changes) -> Path:
    data = {
        "pair_id": "x11",
        "players": [
            {"player": "random", "side": "BLU", "name": "r1"},
            {"player": "random", "side": "RED", "name": "r2"},
        ],
        "budget": {"games": 1},
        "size": [640, 360],
        "speed": 5,
        "max_days": 6,
        "record": True,
    }
    data.update(changes)
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.x11
def test_two_random_players_play_one_gated_game_through_two_windows(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # Real time: on a loaded machine the windows' six game days took longer than the default cap of 136
    # decisions (27 s) once; the cap is a runaway guard, so the test gives it room to end on its own.
    config = pair_config(tmp_path, max_decisions=600)
    summary = run_collect_pair(CollectPairConfig(config, out, progress=False, game="x11"))
    manifest = json.loads((out / "g0000" / "manifest.json").read_text())
    assert summary["games"] == 1 and not summary["failed_outside_players"], manifest["gate_reasons"]
    assert manifest["valid"], manifest["reason"]
    rows = read_results(out / "results.jsonl")
    assert {(r.player, r.side) for r in rows} == {("r1", "BLU"), ("r2", "RED")}
    assert all(r.valid and r.reason == "draw: timeout" for r in rows)
    assert len({r.extra["declarer"] for r in rows}) == 1  # both harnesses read the one coin of the one world
    for side in ("BLU", "RED"):
        data = manifest["sides"][side]
        # Six game days are six wall seconds: about 30 decisions on a quiet machine, 4 were seen at load 5.
        assert data["decisions"] >= 3 and len(data["late_ms"]) == data["decisions"]
        session = out / "g0000" / side
        assert json.loads((session / "manifest.json").read_text())["side"] == side
        assert check_session(session)["verdict"] == "ok"
        status = json.loads((out / "g0000" / f"worker-{side}.jsonl").read_text())["status"]
        assert status["held"] == [] and not status["stopped"]  # nothing left held, no emergency stop


@pytest.mark.x11
def test_a_player_that_raises_disconnects_the_other_window(tmp_path: Path, monkeypatch) -> None:
    from hoi4_arena.play import pair
    from hoi4_arena.screen.game import TokenPlayer

    real = pair._Players.make

    def make(self, i, side, plan, worker):
        player = real(self, i, side, plan, worker)
        if side != "RED":
            return player

        class Broken(TokenPlayer):
            def decide(self, capture):
                raise RuntimeError("the policy process died")

        return Broken(player.policy, seed=plan.seed, side=side, speed=5)

    monkeypatch.setattr(pair._Players, "make", make)
    config = pair_config(tmp_path, max_days=60, record=False)
    summary = run_collect_pair(CollectPairConfig(config, tmp_path / "o", progress=False, game="x11"))
    assert summary["invalid"] == {"player": 1} and not summary["failed_outside_players"]
    manifest = json.loads((tmp_path / "o" / "g0000" / "manifest.json").read_text())
    blu = manifest["sides"]["BLU"]
    assert blu["reason"].startswith("worker: disconnect") and "RED left the game" in blu["reason"]
    assert blu["days"] < 60  # BLU stopped with RED, not at the time limit


def test_the_games_ai_has_no_window(tmp_path: Path) -> None:
    players = [{"player": "random", "side": "BLU"}, {"player": "ai", "side": "RED"}]
    with pytest.raises(UserError, match="has no window"):
        run_collect_pair(
            CollectPairConfig(
                pair_config(tmp_path, players=players), tmp_path / "o", progress=False, game="x11"
            )
        )
    with pytest.raises(UserError, match="--game must be sim or x11"):
        CollectPairConfig(pair_config(tmp_path), tmp_path / "o", game="window")
