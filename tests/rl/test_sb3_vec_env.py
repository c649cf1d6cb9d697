"""SB3's VecEnv over the vector layer (rl/sb3_vec_env.py): each slot sees what hoi4_arena/SimFlat-v0 shows
for the same game and actions, with the same rewards; SB3's PPO learns on it, serial and with processes."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from stable_baselines3 import PPO

from hoi4_arena.errors import UserError
from hoi4_arena.play.rollout_game import GamePlan, RolloutSettings
from hoi4_arena.rl.env_wrappers import FLAT_ENV_ID
from hoi4_arena.rl.sb3_vec_env import GamesVecEnv

WRAPPER = {"grid": 16, "slots": 2, "kinds": "mouse", "views": ("global", "fovea")}
WEIGHTS = {"provinces": 2.0, "victory_points": 0.5}
SETTINGS = RolloutSettings(size=(180, 320), max_days=6)


class _Games:
    """A schedule whose slot s plays the given games' seed and side (then later seeds)."""

    def __init__(self, seeds_and_sides: list[tuple[int, str]]) -> None:
        self.games_of = seeds_and_sides

    @property
    def games(self) -> int:
        return len(self.games_of)

    def plan(self, slot: int, number: int) -> GamePlan:
        seed, side = self.games_of[slot]
        return GamePlan(slot, number, "plains", "plains:0", seed + 1000 * number, side, 1.0)


def test_each_slot_sees_the_flat_env_of_its_game() -> None:
    env = gymnasium.make(
        FLAT_ENV_ID, size=SETTINGS.size, arena="plains:0", side="RED", ai_strength=1.0, max_days=6,
        reward=WEIGHTS, **WRAPPER,
    )  # fmt: skip
    first, info = env.reset(seed=2)
    envs = GamesVecEnv(SETTINGS, _Games([(info["seed"], "RED"), (7, "BLU")]), reward=WEIGHTS, **WRAPPER)
    assert envs.observation_space == env.observation_space and envs.action_space == env.action_space
    obs = envs.reset()
    assert all(np.array_equal(obs[k][0], first[k]) for k in first)
    env.action_space.seed(2)
    done, steps = False, 0
    while not done:
        action = env.action_space.sample()
        want, reward, terminated, truncated, want_info = env.step(action)
        envs.step_async(np.stack([action, envs.action_space.sample()]))
        obs, rewards, dones, infos = envs.step_wait()
        done, steps = terminated or truncated, steps + 1
        assert rewards[0] == pytest.approx(reward, abs=1e-6) and infos[0]["terms"] == want_info["terms"]
        assert dones[0] == done and not infos[0]["TimeLimit.truncated"]
        if not done:  # at the end the slot's next game has begun
            assert all(np.array_equal(obs[k][0], want[k]) for k in want), steps
    assert infos[0]["game"]["outcome"] == "draw" and infos[0]["game"]["decisions"] == steps
    assert (
        envs.get_attr("render_mode") == [None, None] and envs.env_is_wrapped(gymnasium.Wrapper) == [False] * 2
    )
    env.close()
    envs.close()


@pytest.mark.slow
def test_sb3_ppo_learns_on_the_games_in_lockstep_in_worker_processes() -> None:
    envs = GamesVecEnv(SETTINGS, _Games([(1, "BLU"), (2, "RED")]), workers=2, reward=WEIGHTS, **WRAPPER)
    from stable_baselines3.common.logger import Logger

    model = PPO("MultiInputPolicy", envs, n_steps=16, batch_size=16, n_epochs=1, seed=0, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's own would leave /tmp/SB3-* behind
    model.learn(total_timesteps=32)
    assert model.num_timesteps == 32
    envs.close()


def test_bad_settings_are_refused_with_a_message() -> None:
    with pytest.raises(UserError, match="unknown settings"):
        GamesVecEnv(SETTINGS, _Games([(1, "BLU")]), colour="red")
    with pytest.raises(UserError, match="unknown reward term"):
        GamesVecEnv(SETTINGS, _Games([(1, "BLU")]), reward={"gold": 1})
