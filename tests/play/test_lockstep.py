"""Headless play in lockstep (play/lockstep.py): play-policy's games N at once over the vector layer are the
runner's games one after another, input for input and row for row; resume, Ctrl+C and a killed worker
process behave as the runner's loop does; bad settings are refused.

Games are tiny: 320x180, a tiny policy, 2-3 game days (about 10-14 decisions)."""

from __future__ import annotations

import json
import os
import signal
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.play import lockstep as lockstep_module
from hoi4_arena.play.lockstep import Lockstep
from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
from hoi4_arena.play.policy_player import PolicyGames, PolicyPlayer
from hoi4_arena.play.vector_games import VectorGames
from hoi4_arena.screen.sim_worker import SimWorker

SMALL = dict(size=(180, 320), max_days=3, record=False, progress=False)


def config(checkpoint: str | Path, out: Path, **settings) -> PlayConfig:
    return PlayConfig(checkpoint=str(checkpoint), out=out, **{**SMALL, **settings})


def rows_of(out: Path) -> dict[int, dict]:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {row["game"]: row for row in rows}


@pytest.fixture
def inputs(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Every event applied to a game's worker, by the game (seed, side): what the policy played."""
    applied: dict = defaultdict(list)
    apply = SimWorker.apply

    def logged(self, events, timed=False):
        key = (self.game.seed, self.game.ui.player)
        applied[key].extend((e.kind, e.x, e.y, e.key, e.t_ns) for e in events)
        return apply(self, events, timed)

    monkeypatch.setattr(SimWorker, "apply", logged)
    return applied


@pytest.mark.parametrize(
    "decoding",
    [{}, {"point": True, "follow_through": True, "reset_memory": 4, "temperature": 0.7}],
    ids=["sample", "point"],
)
def test_lockstep_plays_the_runners_games_input_for_input(
    tiny_checkpoint: Path, tmp_path: Path, inputs: dict, decoding: dict
) -> None:
    """Five games on two maps, three at once: a slot that frees takes the next game, the last round
    plays fewer games than slots, and every game's inputs and row are the runner's."""
    settings = dict(games=5, arena="plains,ford:1-3", max_days=2, **decoding)
    runner = run_play_policy(config(tiny_checkpoint, tmp_path / "runner", lockstep=1, **settings))
    by_runner = dict(inputs)
    inputs.clear()
    lockstep = run_play_policy(config(tiny_checkpoint, tmp_path / "lockstep", lockstep=3, **settings))
    assert inputs == by_runner and len(by_runner) == 5  # every game's events, time stamps included
    assert rows_of(tmp_path / "lockstep") == rows_of(tmp_path / "runner")
    assert {r["arena"] for r in rows_of(tmp_path / "runner").values()} == {"plains", "ford"}
    for key in ("games", "valid", "wins", "draws", "decisions", "minutes", "setup", "win_rate"):
        assert lockstep[key] == runner[key], key
    assert lockstep["settings"] == runner["settings"]  # --lockstep is no setting of the games


def test_the_random_policy_plays_its_games_in_lockstep_reading_no_views(
    tmp_path: Path, inputs: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = []
    capture = SimWorker.capture
    monkeypatch.setattr(SimWorker, "capture", lambda self, r: requests.append(r.views) or capture(self, r))
    run_play_policy(config("random", tmp_path / "runner", games=3, lockstep=1, seed=4))
    by_runner, asked = dict(inputs), sorted(requests)
    inputs.clear(), requests.clear()
    run_play_policy(config("random", tmp_path / "lockstep", games=3, lockstep=2, seed=4))
    assert inputs == by_runner and rows_of(tmp_path / "lockstep") == rows_of(tmp_path / "runner")
    assert sorted(requests) == asked and not any(asked)  # its worker computes no views, as the runner's


def random_views(layout, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "global": rng.integers(0, 256, (*layout.global_size, 3), dtype=np.uint8),
        "quadrants": rng.integers(0, 256, (4, *layout.quadrant_size, 3), dtype=np.uint8),
        "fovea": rng.integers(0, 256, (layout.fovea, layout.fovea, 3), dtype=np.uint8),
    }


def test_a_batch_of_games_decides_what_each_game_alone_decides(make_checkpoint) -> None:
    """PolicyGames over three games (a clip encoder: each game its own clip) against three one-game
    players: the same tokens, the memories within float rounding; a round where one game acts alone."""
    checkpoint = make_checkpoint("clip", encoder="cnn_clip")
    decoding = dict(mode="point", follow_through=True, reset_memory=2)
    alone = [PolicyPlayer(checkpoint, **decoding) for _ in range(3)]
    games = PolicyGames(PolicyPlayer(checkpoint, **decoding))
    layout = games.layout
    for slot, player in enumerate(alone):
        player.reset(10 + slot)
        games.reset(slot, 10 + slot)
    for t in range(5):
        slots = [1] if t == 2 else [0, 1, 2]
        screens = {s: random_views(layout, 7 * t + s) for s in slots}
        pointers = {s: (100 * s, 900 - t) for s in slots}
        expected = np.stack([alone[s].decide(screens[s], 5, pointers[s]) for s in slots])
        got = games.decide(slots, [screens[s] for s in slots], 5, [pointers[s] for s in slots])
        np.testing.assert_array_equal(got, expected)
    for slot, player in enumerate(alone):
        memory = games.memories[slot]
        assert memory.decisions == player.memory.decisions == (4 if slot != 1 else 5)
        np.testing.assert_allclose(memory.state.hidden.numpy(), player.memory.state.hidden.numpy(), atol=1e-5)


def test_resume_and_ctrl_c_leave_the_runners_rows(
    tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    first = run_play_policy(config(tiny_checkpoint, out, games=2, lockstep=2, max_days=2))
    assert first["this_run"]["games"] == 2 and not first["interrupted"]
    step = VectorGames.step
    calls = {"n": 0}

    def interrupted_in_round_6(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt
        return step(self, *args, **kwargs)

    monkeypatch.setattr(VectorGames, "step", interrupted_in_round_6)
    stopped = run_play_policy(config(tiny_checkpoint, out, games=5, lockstep=2, max_days=2))
    assert stopped["interrupted"] and stopped["skipped"] == 2 and stopped["this_run"]["games"] == 0
    assert sorted(rows_of(out)) == [0, 1]  # the games under way left no row
    monkeypatch.setattr(VectorGames, "step", step)
    resumed = run_play_policy(config(tiny_checkpoint, out, games=5, lockstep=2, max_days=2))
    assert resumed["skipped"] == 2 and resumed["this_run"]["games"] == 3 and not resumed["interrupted"]
    run_play_policy(config(tiny_checkpoint, tmp_path / "runner", games=5, lockstep=1, max_days=2))
    assert rows_of(out) == rows_of(tmp_path / "runner")


@pytest.mark.slow
def test_a_killed_worker_process_leaves_its_games_invalid_and_the_run_completes(
    tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = VectorGames.step
    calls = {"n": 0}

    def kill_in_round_4(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            victim = self.workers[0]  # slots 0 and 2
            os.kill(victim.pid, signal.SIGKILL)
            victim.process.join(timeout=30)
        return step(self, *args, **kwargs)

    monkeypatch.setattr(VectorGames, "step", kill_in_round_4)
    out = tmp_path / "run"
    summary = run_play_policy(config(tiny_checkpoint, out, games=4, lockstep=3, workers=2, max_days=2))
    rows = rows_of(out)
    assert sorted(rows) == [0, 1, 2, 3] and not summary["interrupted"]
    dead = sorted(i for i, row in rows.items() if not row["valid"])
    assert dead == [0, 2]  # games 0 and 2 were on slots 0 and 2 when their process died
    assert all(rows[i]["reason"] == "worker process died" and rows[i]["decisions"] == 3 for i in dead)
    assert summary["invalid"] == 2 and summary["valid"] == 2
    monkeypatch.setattr(VectorGames, "step", step)
    run_play_policy(config(tiny_checkpoint, tmp_path / "runner", games=4, lockstep=1, max_days=2))
    runner = rows_of(tmp_path / "runner")
    assert all(rows[i] == runner[i] for i in (1, 3))  # game 3: slot 0's next game, on the fresh process


def test_what_plays_in_lockstep_and_bad_settings(tiny_checkpoint: Path, tmp_path: Path) -> None:
    assert config(tiny_checkpoint, tmp_path / "a", games=2).in_lockstep
    for recorded_or_placed in ({"record": True}, {"lockstep": 1}, {"game": "x11"}, {"ray": "local"}):
        assert not config(tiny_checkpoint, tmp_path / "a", games=2, **recorded_or_placed).in_lockstep
    for bad, message in (({"lockstep": 0}, "--lockstep"), ({"workers": -1}, "--workers")):
        with pytest.raises(UserError, match=message):
            config(tiny_checkpoint, tmp_path / "a", games=2, **bad)
    with pytest.raises(ValueError, match="not recorded"):
        from hoi4_arena.play.rollout_game import RolloutSettings

        Lockstep(None, RolloutSettings(record=str(tmp_path)), 0.5)
    assert (
        lockstep_module.record_of({"valid": False, "reason": "worker process died", "decisions": 3}).days == 0
    )
