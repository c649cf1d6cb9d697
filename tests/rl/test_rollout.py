"""The rollout engine (rl/rollout.py): the same games as play-policy's one-game loop, the same numbers in
the serial and the process mode, a killed worker process replaced."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest
import torch

from hoi4_arena.maps.model import other_tag
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.play.policy_player import PolicyPlayer
from hoi4_arena.rl.rollout import Rollouts, Schedule
from hoi4_arena.screen.game import GameSettings, TokenPlayer, play_game
from hoi4_arena.screen.sim_worker import SimWorker

STEPS = 26  # past the end of every slot's first game (about 20 decisions in 4 days)


def _one_game_loop(
    checkpoint, plan, settings, reset_memory=0
) -> tuple[list[np.ndarray], list[float], list[float]]:
    """Play-policy's loop on one planned game: PolicyPlayer through play_game; its tokens, values, log p."""
    player = PolicyPlayer(checkpoint, reset_memory=reset_memory)
    values, logps = [], []
    step = player.policy.step

    def recording(*args, **kwargs):
        decision = step(*args, **kwargs)
        values.append(float(decision.value[0]))
        logps.append(float(decision.logp[0]))
        return decision

    player.policy.step = recording
    tokens: list[np.ndarray] = []
    decide = player.decide
    player.decide = lambda *a: tokens.append(decide(*a)) or tokens[-1]
    with SimWorker(
        plan.spec,
        plan.seed,
        size=settings.size,
        layout=settings.layout,
        player=plan.side,
        ai={other_tag(plan.side): plan.ai_strength},
        max_days=settings.max_days,
        player_kind="policy",
    ) as worker:
        record = play_game(
            worker,
            TokenPlayer(player, seed=plan.seed, side=plan.side, speed=settings.speed),
            GameSettings(side=plan.side, speed=settings.speed),
        )
    # The warm-up decision (thrown away) comes first.
    assert record.valid and record.decisions == len(tokens) - 1
    return tokens[1:], values[1:], logps[1:]


@pytest.mark.slow
@pytest.mark.parametrize("reset_memory", [0, 6])
def test_the_batched_engine_plays_play_policys_games(make_checkpoint, settings, reset_memory) -> None:
    # With reset_memory 6 the policy also sees the buttons and keys its inputs hold down (held_inputs):
    # the engine follows them over each slot's tokens as PolicyPlayer does over what it sent.
    checkpoint = make_checkpoint(held_inputs=int(reset_memory > 0))
    policy = load_checkpoint(checkpoint).policy
    schedule = Schedule(games=3, arenas=("plains", "river"), map_seeds=(0, 5), ai_strength=(0.2, 0.8), seed=7)
    with Rollouts(settings, schedule, workers=0, reset_memory=reset_memory) as engine:
        engine.start(policy)
        rollout = engine.collect(policy, STEPS)
    assert {schedule.plan(s, 0).side for s in range(3)} == {"BLU", "RED"}
    for slot in range(3):
        plan = schedule.plan(slot, 0)
        tokens, values, logps = _one_game_loop(checkpoint, plan, settings, reset_memory)
        length = len(tokens)
        assert 0 < length < STEPS
        assert rollout.done[length - 1, slot] and not rollout.done[: length - 1, slot].any()
        assert rollout.first[length, slot] and rollout.first[0, slot]
        np.testing.assert_array_equal(rollout.tokens[:length, slot].numpy(), np.stack(tokens))
        np.testing.assert_allclose(rollout.value[:length, slot].numpy(), values, atol=1e-5)
        np.testing.assert_allclose(rollout.logp[:length, slot].numpy(), logps, rtol=1e-5, atol=1e-4)
        summary = next(g for g in rollout.finished if g["slot"] == slot)
        assert summary["valid"] and summary["decisions"] == length
        assert (
            rollout.terms["outcome"][length - 1, slot]
            == {"win": 1.0, "draw": 0.5, "loss": 0.0}[summary["outcome"]]
        )
    assert rollout.first.sum() == 6  # each slot's first and second games' first decisions
    if reset_memory:
        assert rollout.fresh.sum() > rollout.first.sum() and (rollout.hidden[rollout.fresh] == 0).all()
        assert rollout.held is not None and rollout.held.any() and not rollout.held[rollout.first].any()
        assert rollout.observation(slice(0, 2), 0).held.shape == (2, rollout.held.shape[-1])
    else:
        assert (rollout.fresh == rollout.first).all() and rollout.held is None


@pytest.mark.slow
def test_process_mode_gives_the_serial_numbers_and_survives_a_killed_worker(tiny_policy, settings) -> None:
    schedule = Schedule(games=3, seed=3)
    with Rollouts(settings, schedule, workers=0, weights={"provinces": 1.0}) as serial:
        serial.start(tiny_policy)
        expected = serial.collect(tiny_policy, 8)
    with Rollouts(settings, schedule, workers=2, weights={"provinces": 1.0}) as engine:
        engine.start(tiny_policy)
        got = engine.collect(tiny_policy, 8)
        assert torch.equal(got.tokens, expected.tokens)
        assert torch.equal(got.value, expected.value)
        np.testing.assert_array_equal(got.reward, expected.reward)

        # Kill the process of slots 0 and 2: their games are invalid, fresh games take their place.
        victim = engine.workers[0]
        assert any(Path(victim.scratch).iterdir())  # its games' user folders live in its scratch folder
        os.kill(victim.pid, signal.SIGKILL)
        victim.process.join(timeout=30)
        after = engine.collect(tiny_policy, 4)
        assert not Path(victim.scratch).exists()  # removed for it when it was replaced
        scratches = [Path(w.scratch) for w in engine.workers]
    assert engine.replaced == 1
    assert not any(s.exists() for s in scratches)
    dead = [g for g in after.finished if g["reason"] == "worker process died"]
    assert sorted(g["slot"] for g in dead) == [0, 2]
    assert not after.valid[0, [0, 2]].any() and after.valid[1:, [0, 2]].all() and after.valid[:, 1].all()
    assert after.done[0, [0, 2]].all() and after.first[1, [0, 2]].all()
    assert {g["number"] for g in dead} == {0}


@pytest.mark.slow
def test_record_keeps_every_game_as_a_policy_session(tiny_policy, settings, tmp_path) -> None:
    import dataclasses
    import json

    recorded = dataclasses.replace(settings, record=str(tmp_path / "sessions"), codec="ffv1")
    with Rollouts(recorded, Schedule(games=1), workers=0) as engine:
        engine.start(tiny_policy)
        rollout = engine.collect(tiny_policy, STEPS)
    game = rollout.finished[0]
    folder = tmp_path / "sessions" / engine.schedule.plan(0, 0).session_id
    assert game["session"] == str(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["complete"] and manifest["source"] == "policy" and manifest["frames"] >= game["decisions"]
    inputs = (folder / "inputs.jsonl").read_text().splitlines()
    assert all(json.loads(line)["source"] in ("policy", "harness") for line in inputs)


def test_a_range_draws_each_games_map_from_it_and_map_seeds_is_the_range_on_a_bare_preset() -> None:
    """train-ppo's games are drawn, not planned in pairs: a range's map seed is drawn game by game; a bare
    preset is its map of seed 0 unless --map-seeds draws it (maps/specs.py)."""
    games = [(slot, number) for slot in range(4) for number in range(12)]
    mixed = Schedule(games=4, arenas=("plains:10-12", "ford", "bay:7"), seed=5)
    plans = [mixed.plan(slot, number) for slot, number in games]
    assert {p.spec for p in plans if p.arena == "ford"} == {"ford:0"}
    assert {p.spec for p in plans if p.arena == "bay"} == {"bay:7"}
    assert {p.spec for p in plans if p.arena == "plains"} == {"plains:10", "plains:11", "plains:12"}
    written = Schedule(games=4, arenas=("plains:10-12",), seed=5)
    drawn = Schedule(games=4, arenas=("plains",), map_seeds=(10, 12), seed=5)
    assert [written.plan(*g) for g in games] == [drawn.plan(*g) for g in games]
