"""Stable-Baselines3's `VecEnv` over the vector layer: N games in lockstep (serial or worker processes).

    from stable_baselines3 import PPO
    from hoi4_arena.rl.rollout import Schedule
    from hoi4_arena.play.rollout_game import RolloutSettings
    from hoi4_arena.rl.sb3_vec_env import GamesVecEnv

    envs = GamesVecEnv(RolloutSettings(size=(180, 320), max_days=30), Schedule(games=4), workers=2,
                       reward={"provinces": 1.0}, grid=32, slots=2, kinds="mouse", views=("global", "fovea"))
    PPO("MultiInputPolicy", envs, n_steps=64, batch_size=64).learn(1024)

SB3's own vector envs (`DummyVecEnv`, `SubprocVecEnv`) step one Gymnasium env per game; this one steps
`play/vector_games.VectorGames`, the layer train-ppo's rollouts run on: the games' processes are the
rollout workers (forked from a preloaded server), a killed worker's games end invalid and a fresh worker
takes them, and slot s plays the schedule's games `plan(s, 0)`, `plan(s, 1)`, ... (the same seeded
draws as train-ppo's). What the agent sees and does is `hoi4_arena/SimFlat-v0`'s: the same
`env_wrappers.FlatActions` and `ImageObservations` (the wrapper keywords `WRAPPER_SETTINGS`), and the
same reward (`screen/rewards.py`, weighted by `reward` as the env's and train-ppo's `--reward`).

Differences from SimFlat-v0 in a `DummyVecEnv`, each because the worker begins a slot's next game in the
call that ends the last one: every game end is terminal for SB3 (`TimeLimit.truncated` is False: a
draw's outcome, 0.5, is its value, as in train-ppo, which never bootstraps past a game's end), and
no `terminal_observation` is given. `reset()` begins every slot's schedule again from its first game.
Each step's `infos[i]` holds `terms` (the reward terms, unweighted) and `valid`; at a game's end also
`game`, the finished game's summary (its plan, outcome, decisions, days, setup, each term's sum).

Try: .venv/bin/python -m pytest -q tests/rl/test_sb3_vec_env.py
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from stable_baselines3.common.vec_env import VecEnv  # this module is for SB3's users: SB3 is required

from hoi4_arena.errors import UserError
from hoi4_arena.play.rollout_game import RolloutSettings, Step
from hoi4_arena.play.vector_games import VectorGames
from hoi4_arena.rl.env import action_space, check_action, observation_space
from hoi4_arena.rl.env_wrappers import WRAPPER_SETTINGS, wrap
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.rewards import OUTCOME, TERMS, parse_weights, total


class _Spaces(gymnasium.Env):
    """Sim-v0's spaces without a game: what the SimFlat-v0 wrappers translate from and to."""

    def __init__(self, layout: ViewLayout) -> None:
        self.observation_space = observation_space(layout)
        self.action_space = action_space()


class GamesVecEnv(VecEnv):
    """The games of `schedule` in lockstep as an SB3 VecEnv; see the module docstring. `workers` 0 plays
    every game in this process, otherwise that many worker processes; `reward` weighs the shaping terms;
    the other keywords are SimFlat-v0's wrapper settings (slots, grid, kinds, views, ...)."""

    def __init__(
        self,
        settings: RolloutSettings,
        schedule: Any,
        *,
        workers: int = 0,
        reward: dict[str, Any] | None = None,
        **wrapper: Any,
    ) -> None:
        unknown = sorted(set(wrapper) - set(WRAPPER_SETTINGS))
        if unknown:
            raise UserError(f"unknown settings {unknown}; the wrappers take {', '.join(WRAPPER_SETTINGS)}")
        self.weights = parse_weights(reward)
        self.render_mode = None  # SB3 asks each env for it; the games are headless
        self._images = wrap(_Spaces(ViewLayout.named(settings.layout)), **wrapper)
        self._actions = self._images.env  # FlatActions, under ImageObservations
        self.vector = VectorGames(settings, schedule, workers=workers)
        self._tokens: np.ndarray | None = None
        super().__init__(schedule.games, self._images.observation_space, self._images.action_space)

    # --- SB3's contract -------------------------------------------------------------------------------

    def reset(self) -> Any:
        return self._observations(self.vector.begin())

    def step_async(self, actions: np.ndarray) -> None:
        # The flat action to tokens, then Sim-v0's own check (the (x, y) of a kind other than move zeroed).
        self._tokens = np.stack([check_action(self._actions.action(action)) for action in actions])

    def step_wait(self) -> Any:
        if self._tokens is None:
            raise RuntimeError("step_async() first")
        steps = self.vector.step(self._tokens)
        self._tokens = None
        rewards = np.array([total(step.rewards, self.weights) for step in steps], dtype=np.float32)
        dones = np.array([step.done for step in steps], dtype=bool)
        infos = []
        for step in steps:
            info: dict[str, Any] = {
                "terms": {name: step.rewards.get(name, 0.0) for name in (OUTCOME, *TERMS)},
                "valid": step.valid,
                "TimeLimit.truncated": False,
            }
            if step.done:
                info["game"] = step.summary
            infos.append(info)
        return self._observations(steps), rewards, dones, infos

    def close(self) -> None:
        self.vector.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """The layer's attribute, once per game asked for (the games have no env objects of their own)."""
        return [getattr(self, attr_name)] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        raise AttributeError(f"the games of GamesVecEnv are no Gymnasium envs: no {method_name}() to call")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    # --- helpers ----------------------------------------------------------------------------------------

    def _indices(self, indices: Any) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else list(indices)

    def _observations(self, steps: list[Step]) -> Any:
        """Sim-v0's observation of each slot through ImageObservations, stacked over the slots."""
        seen = [
            self._images.observation(
                {
                    "global": step.views["global"],
                    "quadrants": step.views["quadrants"],
                    "fovea": step.views["fovea"],
                    "speed": np.int64(step.speed - 1),
                    "pointer": np.asarray(step.pointer, dtype=np.int64),
                }
            )
            for step in steps
        ]
        if isinstance(seen[0], dict):
            return {key: np.stack([obs[key] for obs in seen]) for key in seen[0]}
        return np.stack(seen)
