"""One reward: train-ppo's rollout game (play/rollout_game.py) and the Gymnasium env (rl/env.py) given the
same game and the same tokens give the same rewards, term by term and weighted (screen/rewards.py)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.play.rollout_game import GamePlan, RolloutGame, RolloutSettings
from hoi4_arena.rl.env import ENV_ID, SimEnv
from hoi4_arena.screen.rewards import OUTCOME, TERMS, total
from hoi4_arena.screen.tokens import MOVE

WEIGHTS = {"setup": 0.3, "victory_points": 0.5, "provinces": 2.0}
# A strong AI takes provinces from a side that only moves its pointer: the shaping terms move within
# 12 days (about 60 decisions), and the world's limit ends the game in a draw (outcome 0.5).
GAME = {"size": (180, 320), "arena": "plains:0", "max_days": 12, "ai_strength": 1.0}


def _tokens(rng: np.random.Generator) -> np.ndarray:
    tokens = np.zeros((8, 3), dtype=np.int64)
    tokens[0] = (MOVE, *rng.integers(1024, size=2))
    return tokens


def _env_rewards(seed: int) -> tuple[list[dict], list[float], dict]:
    env = gymnasium.make(ENV_ID, side="BLU", reward=WEIGHTS, **GAME)
    _, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    terms, rewards, done = [], [], False
    while not done:
        _, reward, terminated, truncated, info = env.step(_tokens(rng))
        terms.append(info["terms"])
        rewards.append(reward)
        done = terminated or truncated
    env.close()
    return terms, rewards, info


def _rollout_rewards(seed: int, game_seed: int) -> list[dict]:
    settings = RolloutSettings(size=GAME["size"], max_days=GAME["max_days"])
    plan = GamePlan(0, 0, "plains", GAME["arena"], game_seed, "BLU", GAME["ai_strength"])
    game = RolloutGame(settings)
    game.begin(plan)
    rng = np.random.default_rng(seed)
    terms, step = [], None
    while step is None or not step.done:
        step = game.step(_tokens(rng), GamePlan(0, 1, "plains", GAME["arena"], 1, "BLU", 0.5))
        terms.append(step.rewards)
    game.shutdown()
    return terms


@pytest.mark.parametrize("seed", [0, 5])
def test_the_env_and_the_ppo_rollouts_give_the_same_rewards(seed: int) -> None:
    env_terms, env_rewards, info = _env_rewards(seed)
    rollout_terms = _rollout_rewards(seed, info["seed"])
    assert len(env_terms) == len(rollout_terms) > 20
    for step, (a, b) in enumerate(zip(env_terms, rollout_terms, strict=True)):
        assert set(a) == set(b) == {OUTCOME, *TERMS}
        assert a == pytest.approx(b, abs=0), f"decision {step}: {a} != {b}"
    # What train-ppo weighs (rl/rollout.py: total(step.rewards, weights)) is the env's reward.
    assert env_rewards == [total(t, WEIGHTS) for t in rollout_terms]
    # The game did move the terms: a draw at the world's limit, provinces lost to the AI.
    assert env_terms[-1][OUTCOME] == 0.5 and info["arena"]["draw"]
    assert sum(t["provinces"] for t in env_terms) < 0 and sum(t["victory_points"] for t in env_terms) < 0


def test_the_env_refuses_bad_weights_and_takes_them_from_reset_options() -> None:
    with pytest.raises(UserError, match="unknown reward term 'gold'"):
        SimEnv(reward={"gold": 1.0})
    with pytest.raises(UserError, match="must be a number"):
        SimEnv(reward={"setup": "lots"})
    env = SimEnv(**GAME)
    assert env.config.reward == {}  # the default: the outcome alone, as train-ppo's --reward
    env.reset(seed=0, options={"reward": {"provinces": "2"}})
    done, returns, provinces = False, 0.0, 0.0
    while not done:
        _, reward, terminated, truncated, info = env.step(np.zeros((8, 3), dtype=np.int64))
        returns, provinces = returns + reward, provinces + info["terms"]["provinces"]
        done = terminated or truncated
    assert provinces < 0 and returns == pytest.approx(0.5 + 2.0 * provinces)
    env.close()
