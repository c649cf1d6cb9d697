"""train-ppo --ladder: rollout games that start from make-ladder's rung saves (the schedule draws a save
per game, the slot's side where the ladder has it; a running save's match is not started again); the
Gymnasium env from the same saves, with the rollouts' rewards."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.play.rollout_game import GamePlan, RolloutGame, RolloutSettings
from hoi4_arena.rl.env import SimEnv
from hoi4_arena.rl.ppo_config import PPOConfig
from hoi4_arena.rl.rollout import Rollouts, Schedule, rung_starts
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.worker import CaptureRequest


def test_the_schedule_draws_rung_saves_keeping_each_slots_side(ladder: Path) -> None:
    starts = rung_starts(str(ladder), "S3,S2")
    assert {s.rung for s in starts} == {"S3", "S2"} and {s.side for s in starts} == {"BLU", "RED"}
    assert all(s.running and Path(s.path).is_file() and s.spec == "plains:3" for s in starts), starts
    assert not any(s.running for s in rung_starts(str(ladder), "S0"))  # S0: the match is yet to start
    schedule = Schedule(games=4, seed=7, saves=starts)
    plans = [schedule.plan(slot, number) for slot in range(4) for number in range(6)]
    assert all(p.side == ("BLU", "RED")[p.slot % 2] for p in plans)  # both sides always mixed
    assert all(p.save in {s.path for s in starts if s.side == p.side} for p in plans)
    assert len({p.save for p in plans}) == 4  # every save is drawn
    assert plans == [Schedule(games=4, seed=7, saves=starts).plan(s, n) for s in range(4) for n in range(6)]


@pytest.mark.slow
def test_rollout_games_go_on_from_the_saves(ladder: Path, tiny_policy, settings) -> None:
    import dataclasses

    starts = rung_starts(str(ladder), "S3")
    listing = json.loads((ladder / "ladder.json").read_text())
    s3_day = max(row["day"] for row in listing["rungs"] if row["rung"] == "S3")
    short = dataclasses.replace(settings, max_days=s3_day + 2)
    with Rollouts(short, Schedule(games=2, seed=1, saves=starts), workers=0) as engine:
        engine.start(tiny_policy)
        rollout = engine.collect(tiny_policy, 24)
    # The first observation is the restored game's screen as it was saved.
    for slot, start in enumerate(sorted(starts, key=lambda s: s.side)):  # slot 0 plays BLU, slot 1 RED
        with SimWorker(save=start.path, layout="cpu") as worker:
            worker.attach()
            saved = worker.capture(CaptureRequest(views=True)).views
        np.testing.assert_array_equal(rollout.views["global_view"][0, slot], saved["global"])
    finished = [g for g in rollout.finished if g["valid"]]
    assert finished, rollout.finished  # two days from S3 end in a draw or a winner within the steps
    assert all(
        g["save"] in {s.path for s in starts} and g["outcome"] in ("win", "draw", "loss") for g in finished
    )
    assert all(g["days"] <= s3_day + 2 for g in finished)


def test_ladder_options_are_checked(ladder: Path, tmp_path: Path) -> None:
    assert PPOConfig(out=str(tmp_path / "a"), ladder=str(ladder), rungs="S3").ladder == str(ladder)
    with pytest.raises(UserError, match="give --ladder too"):
        PPOConfig(out=str(tmp_path / "a"), rungs="S3")
    with pytest.raises(UserError, match="--opponent self"):
        PPOConfig(out=str(tmp_path / "a"), ladder=str(ladder), opponent="self")
    with pytest.raises(UserError, match="no ladder.json"):
        PPOConfig(out=str(tmp_path / "a"), ladder=str(tmp_path))
    with pytest.raises(UserError, match="--rungs"):
        PPOConfig(out=str(tmp_path / "a"), ladder=str(ladder), rungs="S9")


@pytest.mark.parametrize(("preset", "map_seed"), [("river", 3), ("plains", 1000)])
def test_a_ladder_on_the_benchmarks_maps_is_refused(
    ladder: Path, tmp_path: Path, preset: str, map_seed: int
) -> None:
    held_out = tmp_path / "ladder"
    shutil.copytree(ladder, held_out)
    text = (held_out / "ladder.json").read_text()
    (held_out / "ladder.json").write_text(
        text.replace('"preset": "plains"', f'"preset": "{preset}"').replace(
            '"map_seed": 3', f'"map_seed": {map_seed}'
        )
    )
    with pytest.raises(UserError, match=f"{preset}:{map_seed} is on the benchmark's maps"):
        PPOConfig(out=str(tmp_path / "a"), ladder=str(held_out))


def test_the_env_goes_on_from_a_rung_save_with_the_rollouts_rewards(ladder: Path) -> None:
    # The Gymnasium env from a save (reset options draw one per episode) and train-ppo's rollout game from
    # the same save, given the same tokens: the saved screen first, the save's side, equal reward terms.
    listing = json.loads((ladder / "ladder.json").read_text())
    s3_day = max(row["day"] for row in listing["rungs"] if row["rung"] == "S3")
    start = next(s for s in rung_starts(str(ladder), "S3") if s.side == "RED")
    env = SimEnv(max_days=s3_day + 2, layout="cpu", reward={"provinces": 1.0, "setup": 0.5})
    obs, info = env.reset(seed=0, options={"save": start.path})
    with SimWorker(save=start.path, layout="cpu") as worker:
        worker.attach()
        saved = worker.capture(CaptureRequest(views=True)).views
    np.testing.assert_array_equal(obs["global"], saved["global"])
    assert info["side"] == "RED" and info["arena"]["attacker"]  # the saved match runs: not started again
    game = RolloutGame(RolloutSettings(max_days=s3_day + 2))
    game.begin(GamePlan(0, 0, start.preset, start.spec, 5, "RED", 0.5, save=start.path, running=True))
    tokens, done = np.zeros((8, 3), dtype=np.int64), False
    while not done:
        _, reward, terminated, truncated, info = env.step(tokens)
        step = game.step(tokens, GamePlan(0, 1, "plains", "plains:0", 1, "RED", 0.5))
        assert info["terms"] == step.rewards and step.done == (terminated or truncated)
        done = terminated or truncated
    assert step.summary["valid"] and step.summary["days"] <= s3_day + 2
    game.shutdown()
    env.close()
    with pytest.raises(UserError, match="no file"):
        SimEnv(save=str(ladder / "none.simsave"))
