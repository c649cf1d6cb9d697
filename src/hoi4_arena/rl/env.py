"""The Gymnasium env `hoi4_arena/Sim-v0`: the simulator seen through its worker, one decision per step.

Registered by a plain `import hoi4_arena` (`screen/registration.py`) and when this module is imported;
`gymnasium.make` can also import it itself through the "module:id" form, so no prior import is needed.
For RL libraries, `hoi4_arena/SimFlat-v0` flattens the action and gives 3-D images (`env_wrappers.py`):

    import gymnasium
    env = gymnasium.make("hoi4_arena.rl.env:hoi4_arena/Sim-v0", arena="river", size=(360, 640))
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

    envs = gymnasium.make_vec("hoi4_arena.rl.env:hoi4_arena/Sim-v0", num_envs=4,
                              vectorization_mode="async")    # or "sync"

Each episode is a new game: `reset(seed=...)` draws the game's seed (and the side, with side="random")
from the env's generator and begins the game as train-ppo's rollouts do (`play/rollout_game.RolloutGame`,
the one loop that steps a game: a `SimWorker`, the match harness with the console's coin picking the
declarer, the requested speed, unpause, the worker armed in match mode). The policy then plays the side
against `rival`:

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
- rival: the game's AI (`ai`, at `ai_strength`), the scripted player on its own screen of a
  two-player world (`scripted`), or a policy checkpoint on that screen (a checkpoint file: it decides
  in the env's process each step from its own screen's views, with `rival_decoding`'s decoding, its
  memory and sampling generator seeded `sampling_seed(game seed, its side)` each game, as play-policy's
  player would; its layout must be the env's);
- start: a new game of `arena`, or with `save` the saved game going on (make-ladder's rungs: a
  `reset(options={"save": path})` per episode draws them), its side the save's;
- with `shadow=True`, info's `expert` is the scripted player's label of each observation (the (8, 3)
  tokens it would play from that screen, `players/shadow.py`: it takes its state from the screen, as
  DAgger's shadow does), the extra stream a DAgger learner trains on;
- terminated at capitulation; truncated at the world's max days (a draw) or after `max_decisions`;
- info (training only; a policy never sees it): the ARENA state folded from the log (date, attacker,
  winner, draw, per side divisions, strength, controlled, surrender, casualties, manpower), the side,
  the declarer, the decision count, the game's seed (`seed`: the runner's `--seed` plays the same game)
  and `terms`, each reward term of the step unweighted (outcome, setup, victory_points, provinces: the
  reward is their weighted sum); at the episode's end `game`, the game's summary (outcome, days, setup,
  each term's sum, whether it counts).

The env is deterministic for a seed: two envs reset with the same seed and given the same actions
produce the same observations, byte for byte.

Try: python -m hoi4_arena.rl.env    (a random policy for 500 decisions, and how fast they ran)
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
from hoi4_arena.play.decoding import Decoding
from hoi4_arena.play.rollout_game import GamePlan, RolloutGame, RolloutSettings, Step
from hoi4_arena.players.templates import sim_rules
from hoi4_arena.screen.game import sampling_seed
from hoi4_arena.screen.lattice import LATTICE
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.match import MatchLog
from hoi4_arena.screen.rewards import OUTCOME, TERMS, parse_weights, total
from hoi4_arena.screen.tokens import MOVE, NUM_KINDS, SLOTS
from hoi4_arena.screen.worker import CaptureRequest
from hoi4_arena.sim.save import read_header

ENV_ID = "hoi4_arena/Sim-v0"
SIDES = (*TAGS, "random")
RIVALS = ("ai", "scripted")
"""The rivals named by a word; any other rival is a checkpoint file."""
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
    rival: str = "ai"
    """Who plays the other side: ai (the game's AI), scripted (the scripted player on its own screen of a
    two-player world) or a policy checkpoint file (on that screen; its layout must be the env's); not
    with a save."""
    rival_decoding: dict[str, Any] = field(default_factory=dict)
    """A checkpoint rival's decoding, play-policy's options by name: point, deterministic, temperature,
    reset_memory, follow_through (default: sampled at temperature 1)."""
    shadow: bool = False
    """Label every observation with the scripted player's input from that screen (info's `expert`)."""

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
        if self.rival not in RIVALS and not Path(self.rival).is_file():
            raise UserError(
                f"rival must be one of {', '.join(RIVALS)} or a policy checkpoint file, not {self.rival!r}"
            )
        self.rival_decoder()  # bad decoding options fail now
        if self.rival != "ai" and self.save is not None:
            raise UserError("a save goes on against the game's AI it was saved with: rival must be ai")
        if not isinstance(self.shadow, bool):
            raise UserError(f"shadow must be True or False, not {self.shadow!r}")
        if self.shadow or self.rival == "scripted":
            sim_rules(self.size)  # the scripted player reads a screen it is calibrated for (UserError if not)

    @property
    def checkpoint_rival(self) -> bool:
        return self.rival not in RIVALS

    def rival_decoder(self) -> Decoding:
        """`rival_decoding` checked (UserError for an unknown or bad option, or options without a
        checkpoint rival)."""
        known = {f.name for f in fields(Decoding)}
        unknown = sorted(set(self.rival_decoding) - known)
        if unknown:
            raise UserError(f"unknown rival_decoding options {unknown}; known: {', '.join(sorted(known))}")
        decoding = Decoding(**self.rival_decoding)
        decoding.check_decoding(
            None
            if self.checkpoint_rival
            else "rival_decoding is a checkpoint rival's: give rival a checkpoint"
        )
        return decoding

    def rollout_settings(self) -> RolloutSettings:
        """What the env's rollout game plays with."""
        return RolloutSettings(
            size=self.size,
            layout=self.layout,
            speed=self.speed,
            max_days=self.max_days,
            max_decisions=self.max_decisions,
            news=self.news,
            events=self.events,
            shadow=self.shadow,
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
        self.rollout: RolloutGame | None = None
        """The one loop that steps the game (train-ppo's rollouts step the same)."""
        self.log: MatchLog | None = None
        self.side = self.config.side if self.config.side != "random" else TAGS[0]
        self.declarer = ""
        self.decisions = 0
        self.seed = 0
        """The game's seed, drawn from the env's generator at reset."""
        self._episode = self.config
        self._episodes = 0
        self._terms = dict.fromkeys((OUTCOME, *TERMS), 0.0)
        self._expert: np.ndarray | None = None
        self._summary: dict[str, Any] | None = None
        self._frame: np.ndarray | None = None
        self._done = False
        self._rival: Any = None
        """A checkpoint rival (`play.policy_player.PolicyPlayer`), loaded at the first reset."""
        self._rival_key: Any = None
        self._rival_seen: Step | None = None
        """The observation of the rival's screen it acts on next."""

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
        game_seed = self.seed = int(self.np_random.integers(_SEED_BOUND))
        side = config.side if config.side != "random" else TAGS[int(self.np_random.integers(2))]
        settings = config.rollout_settings()
        if self.rollout is None or self.rollout.settings != settings:
            self._shutdown()
            self.rollout = RolloutGame(settings, render=self.render_mode == "rgb_array")
        spec = config.arena
        if config.save is not None:  # the save's own map (its orders are read against it at the end)
            spec = read_header(config.save)[0].get("arena") or config.arena
        plan = GamePlan(
            slot=0,
            number=self._episodes,
            arena=spec.partition(":")[0],
            spec=spec,
            seed=game_seed,
            side=side,
            ai_strength=float(config.ai_strength),
            opponent="checkpoint" if config.checkpoint_rival else config.rival,
            save=config.save,
        )
        self._episodes += 1
        self._episode = config
        self._done = False
        self._summary = None
        rival = self._rival_player(config) if config.checkpoint_rival else None  # a bad one fails first
        step = self.rollout.begin(plan)
        self._rival_seen = None
        if rival is not None:
            rival.reset(sampling_seed(game_seed, other_tag(side)))
            self._rival_seen = step
        game = self.rollout.game
        self.side = self.rollout.plan.side  # a save fixes the side: the plan says it now
        self.log = game.log
        self.declarer = game.record.declarer or ""
        self.decisions = 0
        self._terms = dict.fromkeys((OUTCOME, *TERMS), 0.0)
        return self._observe(step), self._info()

    def step(self, action: Any):
        if self.rollout is None or self.log is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode is over: call reset() for a new game")
        tokens = check_action(action)
        game = self.rollout.game
        rival = None
        if self._rival_seen is not None:  # the checkpoint decides on its own screen, then both act
            seen = self._rival_seen
            rival = self._rival.decide(seen.rival_views, self._episode.speed, seen.rival_pointer)
        step = self.rollout.step(tokens, None, rival)  # None: the episode's end begins no game
        if self._rival_seen is not None:
            self._rival_seen = step
        self.decisions = game.record.decisions
        if step.done and game.end.startswith("error"):  # match-mode tokens: a bug, not input
            raise RuntimeError(f"the worker refused a valid action: {game.end}")
        observation = self._observe(step)
        self._terms = {**dict.fromkeys((OUTCOME, *TERMS), 0.0), **step.rewards}
        reward = total(self._terms, self._episode.reward)
        terminated = self.log.state.winner is not None
        truncated = self.log.state.draw is not None or (game.end == "max_decisions" and not terminated)
        if step.done:
            self._done = True
            self._summary = step.summary
        return observation, float(reward), terminated, truncated, self._info()

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array" or self.rollout is None or self.rollout.game is None:
            return None
        if self._frame is None:
            self._frame = self.rollout.game.worker.capture(CaptureRequest(views=False, full=True)).frame
        return self._frame.copy()

    def close(self) -> None:
        self._shutdown()
        super().close()

    # --- helpers ----------------------------------------------------------------------------------

    def _rival_player(self, config: SimEnvConfig) -> Any:
        """The checkpoint rival of `config` (loaded once; another file or decoding loads it again)."""
        decoding = config.rival_decoder()
        wanted = (config.rival, decoding)
        if self._rival is None or self._rival_key != wanted:
            # Here, not at the top: play.policy_player imports torch, which only a checkpoint rival needs.
            from hoi4_arena.play.policy_player import PolicyPlayer

            player = PolicyPlayer(
                config.rival,
                mode=decoding.decoding_mode,
                temperature=decoding.temperature,
                reset_memory=decoding.reset_memory,
                follow_through=decoding.follow_through,
                max_hold=decoding.max_hold,
            )
            if player.layout.name != config.layout:
                raise UserError(
                    f"rival {config.rival} reads view layout {player.layout.name!r}, the env captures "
                    f"{config.layout!r}: give layout={player.layout.name!r} or another rival"
                )
            self._rival, self._rival_key = player, wanted
        return self._rival

    def _observe(self, step: Step) -> dict[str, Any]:
        rollout = self.rollout
        assert rollout is not None and rollout.game is not None and rollout.capture is not None
        self._frame = rollout.capture.frame
        self._expert = step.expert
        return {
            "global": step.views["global"],
            "quadrants": step.views["quadrants"],
            "fovea": step.views["fovea"],
            "speed": np.int64(rollout.own.game.ui.clock.speed - 1),  # what the top bar shows
            "pointer": np.asarray(step.pointer, dtype=np.int64),
        }

    def _info(self) -> dict[str, Any]:
        assert self.log is not None
        info = {
            "arena": arena_info(self.log),
            "side": self.side,
            "declarer": self.declarer,
            "decisions": self.decisions,
            "seed": self.seed,
            "terms": dict(self._terms),
        }
        if self._expert is not None:
            info["expert"] = self._expert.copy()
        if self._summary is not None:
            info["game"] = dict(self._summary)
        return info

    def _shutdown(self) -> None:
        if self.rollout is not None:
            self.rollout.shutdown()
            self.rollout = None
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
