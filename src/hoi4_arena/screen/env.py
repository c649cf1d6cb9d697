"""The Gymnasium env `hoi4_arena/Sim-v0`: the simulator seen through its worker, one decision per step.

Registered by a plain `import hoi4_arena` (`screen/registration.py`) and when this module is imported;
`gymnasium.make` can also import it itself through the "module:id" form, so no prior import is needed.
For RL libraries, `hoi4_arena/SimFlat-v0` flattens the action and gives 3-D images (`env_wrappers.py`):

    import gymnasium
    env = gymnasium.make("hoi4_arena.screen.env:hoi4_arena/Sim-v0", arena="river", size=(360, 640))
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

    envs = gymnasium.make_vec("hoi4_arena.screen.env:hoi4_arena/Sim-v0", num_envs=4,
                              vectorization_mode="async")    # or "sync"

Each episode is a new game: `reset(seed=...)` draws the game's seed (and the side, with side="random")
from the env's generator, opens a `SimWorker`, runs the match harness (`match.start_match`: the console's
coin picks the declarer, the requested speed, unpause) and arms the worker in match mode. The policy
then plays the side against the game's AI:

- observation (a Dict): 'global' (h, w, 3), 'quadrants' (4, h, w, 3) and 'fovea' (f, f, 3) uint8 views
  of the layout; 'speed' (Discrete(5): game speed - 1, what the top bar shows); 'pointer' (2,) int64 on
  the 1024x1024 lattice;
- action: one decision's eight tokens, MultiDiscrete of shape (8, 3) with nvec (98, 1024, 1024) per slot:
  (kind, x, y). Every kind is a match-mode token (no space, Esc or speed keys can be expressed). Only
  moves use (x, y); other kinds ignore theirs (so any sample of the space is a valid action). Values
  outside the space raise ValueError. The env turns the tokens into events (`tokens_to_events`), applies
  them timed and advances 200 ms of virtual time;
- reward: the project's one reward (`screen/rewards.py`, the one train-ppo's rollouts use): the outcome
  at the game's last decision (win 1, draw 0.5, loss 0; none when `max_decisions` cuts the game) plus
  the shaping terms `reward` weighs, e.g. `reward={"setup": 0.1, "provinces": 0.05}` (the terms setup,
  victory_points and provinces, each a potential difference read from the ARENA log; default: none, the
  outcome alone, as train-ppo's `--reward`);
- start: a new game of `arena`, or with `save` the saved game going on (make-ladder's rungs: a
  `reset(options={"save": path})` per episode draws them), its side the save's;
- terminated at capitulation; truncated at the world's max days (a draw) or after `max_decisions`;
- info (training only; a policy never sees it): the ARENA state folded from the log (date, attacker,
  winner, draw, per side divisions, strength, controlled, surrender, casualties, manpower), the side,
  the declarer, the decision count, the game's seed (`seed`: the runner's `--seed` plays the same game)
  and `terms`, each reward term of the step unweighted (outcome, setup, victory_points, provinces: the
  reward is their weighted sum).

The env is deterministic for a seed: two envs reset with the same seed and given the same actions
produce the same observations, byte for byte.

Try: python -m hoi4_arena.screen.env    (a random policy for 500 decisions, and how fast they ran)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.screen.game import Game, GameSettings
from hoi4_arena.screen.lattice import LATTICE, to_lattice
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.match import MatchLog
from hoi4_arena.screen.rewards import OUTCOME, TERMS, RewardTracker, parse_weights, total
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.tokens import MOVE, NUM_KINDS, SLOTS, tokens_to_events
from hoi4_arena.screen.worker import Capture, CaptureRequest, WorkerError

ENV_ID = "hoi4_arena/Sim-v0"
SIDES = (*TAGS, "random")
_SEED_BOUND = 2**31


@dataclass(frozen=True)
class SimEnvConfig:
    """Settings of one `SimEnv` (each is also a keyword of `gymnasium.make`)."""

    arena: str = ARENA
    """Preset name, preset:seed, or a map folder."""
    side: str = "BLU"
    """The side the policy plays: BLU, RED, or random (drawn from the env's seed each episode)."""
    size: tuple[int, int] = (360, 640)
    """Screen (height, width), 16:9; 640x360 is an exact multiple of the cpu layout's views."""
    layout: str = "cpu"
    """View layout: cpu or full."""
    speed: int = 5
    """Game speed 1..5 the match runs at (5: about a game day per second of virtual time)."""
    ai_strength: float = 0.5
    """Strength 0..1 of the game's AI playing the other side."""
    max_days: int = 365
    """The world's time limit in game days: a draw, and the episode is truncated."""
    max_decisions: int = 0
    """Truncate after this many decisions (0: only the world's limit)."""
    reward: dict[str, float] = field(default_factory=dict)
    """Weights of the shaping terms, {term: weight} (`screen/rewards.py`; the outcome always weighs 1);
    empty: the outcome alone."""
    news: bool = True
    """Show the news window at the start (closing it is the player's job)."""
    events: bool = True
    """Open event windows every 20-40 game days."""
    save: str | None = None
    """A save the episode goes on from (make-ladder's rung saves, sim-save's files), or None: a new game.
    The save fixes the map, the world's seeds, the side played, the AI and the screen (arena, side,
    ai_strength, size, news and events are not used); a save whose match runs is not started again."""

    def __post_init__(self) -> None:
        try:
            size = tuple(int(v) for v in self.size)
        except (TypeError, ValueError):
            raise UserError(f"size must be (height, width), not {self.size!r}") from None
        if len(size) != 2:
            raise UserError(f"size must be (height, width), not {self.size!r}")
        object.__setattr__(self, "size", size)
        if self.side not in SIDES:
            raise UserError(f"side must be one of {', '.join(SIDES)}, not {self.side!r}")
        ViewLayout.named(self.layout)  # refuses an unknown layout
        if self.speed not in range(1, 6):
            raise UserError(f"speed must be 1..5, not {self.speed!r}")
        if not 0.0 <= float(self.ai_strength) <= 1.0:
            raise UserError(f"ai_strength must be within 0..1, not {self.ai_strength!r}")
        if not isinstance(self.max_days, int) or self.max_days < 1:
            raise UserError(f"max_days must be a whole number >= 1, not {self.max_days!r}")
        if not isinstance(self.max_decisions, int) or self.max_decisions < 0:
            raise UserError(f"max_decisions must be a whole number >= 0, not {self.max_decisions!r}")
        object.__setattr__(self, "reward", parse_weights(self.reward))
        if self.save is not None and not Path(self.save).is_file():
            raise UserError(
                f"save {self.save!r} is no file (make-ladder's rung saves are OUT/GAME/S0.simsave ...)"
            )


def action_space() -> spaces.MultiDiscrete:
    """Eight (kind, x, y) tokens: MultiDiscrete (8, 3) with nvec (98, 1024, 1024) per slot."""
    return spaces.MultiDiscrete(np.tile(np.array([NUM_KINDS, LATTICE, LATTICE], dtype=np.int64), (SLOTS, 1)))


def observation_space(layout: ViewLayout) -> spaces.Dict:
    f = layout.fovea
    return spaces.Dict(
        {
            "global": spaces.Box(0, 255, (*layout.global_size, 3), np.uint8),
            "quadrants": spaces.Box(0, 255, (4, *layout.quadrant_size, 3), np.uint8),
            "fovea": spaces.Box(0, 255, (f, f, 3), np.uint8),
            "speed": spaces.Discrete(5),
            "pointer": spaces.Box(0, LATTICE - 1, (2,), np.int64),
        }
    )


def check_action(action: Any) -> np.ndarray:
    """The action as an (8, 3) int64 array of tokens with the (x, y) of non-move kinds zeroed.

    Raises ValueError naming what is wrong: a shape other than (8, 3), non-integers, a value outside
    the space.
    """
    array = np.asarray(action)
    if array.shape != (SLOTS, 3):
        raise ValueError(
            f"an action is {SLOTS} tokens of (kind, x, y), shape ({SLOTS}, 3); got {array.shape}"
        )
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"action tokens must be integers, got dtype {array.dtype}")
    array = array.astype(np.int64)
    kinds, xy = array[:, 0], array[:, 1:]
    if ((kinds < 0) | (kinds >= NUM_KINDS)).any():
        raise ValueError(f"token kinds must be in 0..{NUM_KINDS - 1}, got {kinds.tolist()}")
    if ((xy < 0) | (xy >= LATTICE)).any():
        raise ValueError(f"token x and y must be in 0..{LATTICE - 1}, got {xy.tolist()}")
    array[kinds != MOVE, 1:] = 0  # only moves carry a position; the space lets samples carry any
    return array


def arena_info(log: MatchLog) -> dict[str, Any]:
    """The training-only summary of the ARENA state (the same keys every step, for vector envs)."""
    state = log.state
    sides = {}
    for tag in TAGS:
        side = state.sides.get(tag)
        sides[tag] = {
            "divisions": side.divisions if side else 0,
            "strength": float(side.strength) if side else 0.0,
            "controlled": sum(1 for owner in state.control.values() if owner == tag),
            "surrender": float(side.surrender) if side else 0.0,
            "casualties": side.casualties if side else 0,
            "manpower": side.manpower if side else 0,
        }
    return {
        "date": state.date or "",
        "h": int(state.h),
        "attacker": state.attacker or "",
        "winner": state.winner or "",
        "draw": state.draw or "",
        "over": bool(state.over),
        "sides": sides,
    }


class _Observer:
    """The env's side of `screen.game.Game`: it asks for the views (and the frame when rendering); the
    actions come from `step`, not from a `decide`."""

    setup_keys = False

    def __init__(self, layout: ViewLayout, render: bool) -> None:
        self.layout = layout
        self.render = render

    def request(self) -> CaptureRequest:
        return CaptureRequest(views=True, full=self.render)


class SimEnv(gymnasium.Env):
    """`hoi4_arena/Sim-v0`; see the module docstring. Keywords are `SimEnvConfig`'s fields."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 5}

    def __init__(self, render_mode: str | None = None, **settings: Any) -> None:
        known = {f.name for f in fields(SimEnvConfig)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise UserError(f"unknown Sim-v0 settings {unknown}; known: {', '.join(sorted(known))}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise UserError(f"render_mode must be None or rgb_array, not {render_mode!r}")
        self.config = SimEnvConfig(**settings)
        self.render_mode = render_mode
        self.layout = ViewLayout.named(self.config.layout)
        self.observation_space = observation_space(self.layout)
        self.action_space = action_space()
        self.worker: SimWorker | None = None
        self.game: Game | None = None
        self.log: MatchLog | None = None
        self._observer = _Observer(self.layout, render_mode == "rgb_array")
        self._capture: Capture | None = None
        self.side = self.config.side if self.config.side != "random" else TAGS[0]
        self.declarer = ""
        self.decisions = 0
        self.seed = 0
        """The game's seed, drawn from the env's generator at reset."""
        self.tracker: RewardTracker | None = None
        self._terms = dict.fromkeys((OUTCOME, *TERMS), 0.0)
        self._frame: np.ndarray | None = None
        self._done = False

    # --- episodes ---------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        config = self.config
        if options:
            fixed = {"size", "layout"} & set(options)
            if fixed:
                raise UserError(f"reset options cannot change {sorted(fixed)}: they fix the spaces")
            unknown = sorted(set(options) - {f.name for f in fields(SimEnvConfig)})
            if unknown:
                raise UserError(f"unknown reset options {unknown}; they are Sim-v0 settings, e.g. side")
            config = replace(config, **options)
        self._close_worker()
        game_seed = self.seed = int(self.np_random.integers(_SEED_BOUND))
        self.side = config.side if config.side != "random" else TAGS[int(self.np_random.integers(2))]
        running = False
        if config.save is not None:  # the saved game goes on: its map, seeds, side and AI
            self.worker = SimWorker(save=config.save, layout=self.layout)
            self.worker.game.world.max_days = config.max_days  # from the game's start, as the save's own
            self.side = self.worker.game.ui.player
            running = self.worker.game.world.at_war  # declared: the harness must not start it again
        else:
            self.worker = SimWorker(
                config.arena,
                game_seed,
                size=config.size,
                layout=self.layout,
                player=self.side,
                ai={other_tag(self.side): float(config.ai_strength)},
                max_days=config.max_days,
                news=config.news,
                events=config.events,
                player_kind="policy",
            )
        # One decision a step of the runner's game: the same match, grid and end as every command's games.
        self.game = Game(
            self.worker,
            GameSettings(
                side=self.side, speed=config.speed, max_decisions=config.max_decisions, running=running
            ),
        )
        self.game.start(self._observer)
        self.log = self.game.log
        self.declarer = self.game.record.declarer or ""
        self._episode = config
        self._done = False
        self.decisions = 0
        self.tracker = RewardTracker(self.side, self.worker.game.arena)
        observation = self._observe()
        self.tracker.start(self.log)  # every term's potential at the first observation, as a rollout's
        self._terms = dict.fromkeys((OUTCOME, *TERMS), 0.0)
        return observation, self._info()

    def step(self, action: Any):
        if self.worker is None or self.log is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode is over: call reset() for a new game")
        tokens = check_action(action)
        game, capture = self.game, self._capture
        assert game is not None and capture is not None
        events = tokens_to_events(
            tokens, capture.t_ns, capture.size, pointer=capture.pointer, source="policy"
        )
        try:
            game.act(events)
        except WorkerError as error:  # the tokens are match-mode tokens, so this is a bug, not input
            raise RuntimeError(f"the worker refused a valid action: {error}") from error
        self.decisions = game.record.decisions
        observation = self._observe()  # polls the log: the game's end is known now
        self._terms = self.tracker.after(game)
        reward = total(self._terms, self._episode.reward)
        terminated = self.log.state.winner is not None
        truncated = self.log.state.draw is not None or (game.end == "max_decisions" and not terminated)
        if game.ended:
            self._done = True
            game.finish(self._observer)
        return observation, float(reward), terminated, truncated, self._info()

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array" or self.worker is None:
            return None
        if self._frame is None:
            self._frame = self.game.worker.capture(CaptureRequest(views=False, full=True)).frame
        return self._frame.copy()

    def close(self) -> None:
        self._close_worker()
        super().close()

    # --- helpers ----------------------------------------------------------------------------------

    def _observe(self) -> dict[str, Any]:
        assert self.worker is not None and self.game is not None
        capture = self._capture = self.game.observe(self._observer)
        self._frame = capture.frame
        return {
            "global": capture.views["global"],
            "quadrants": capture.views["quadrants"],
            "fovea": capture.views["fovea"],
            "speed": np.int64(self.worker.game.clock.speed - 1),
            "pointer": np.asarray(to_lattice(*capture.pointer, capture.size), dtype=np.int64),
        }

    def _info(self) -> dict[str, Any]:
        assert self.log is not None
        return {
            "arena": arena_info(self.log),
            "side": self.side,
            "declarer": self.declarer,
            "decisions": self.decisions,
            "seed": self.seed,
            "terms": dict(self._terms),
        }

    def _close_worker(self) -> None:
        if self.worker is not None:
            if self.game is not None and not self._done:
                self.game.finish(self._observer)
            self.worker.close()
            self.worker = None
            self.game = None
            self.log = None

    def settings(self) -> dict[str, Any]:
        """The config as JSON-able values (saved beside training outputs)."""
        return asdict(self.config)


def register() -> None:
    """Register `hoi4_arena/Sim-v0` and `hoi4_arena/SimFlat-v0` with Gymnasium (done on import; a second
    call does nothing). `import hoi4_arena` registers them too (`screen/registration.py`)."""
    from hoi4_arena.screen.registration import register_envs

    register_envs()


register()


if __name__ == "__main__":
    import time

    # A random policy on the default settings; the ratio is against a live client's five decisions a second.
    env = gymnasium.make(ENV_ID)
    env.action_space.seed(0)
    obs, info = env.reset(seed=0)
    start, steps, total = time.perf_counter(), 0, 0.0
    while steps < 500:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        steps, total = steps + 1, total + reward
        if terminated or truncated:
            obs, info = env.reset()
    seconds = time.perf_counter() - start
    print(
        f"{steps} decisions in {seconds:.2f} s: {steps / seconds:.0f} decisions/s, "
        f"{steps / seconds / 5:.0f}x a live client's 5/s; last game {info['arena']['date']}, "
        f"views {[obs[k].shape for k in ('global', 'quadrants', 'fovea')]}"
    )
    env.close()
