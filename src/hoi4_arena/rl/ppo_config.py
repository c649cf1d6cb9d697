"""The settings of a `hoi4-arena train-ppo` run: one typed dataclass, saved in config.json and inside every
checkpoint, and the source of the command's options (each field's one-line docstring is its --help).

This module imports neither torch nor numpy, so the command line can read the help texts cheaply.

Try: .venv/bin/python -c "from hoi4_arena.rl.ppo_config import PPOConfig; print(PPOConfig(out='x'))"
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from hoi4_arena.defaults import ARENA, TEMPERATURE, TEMPERATURE_RANGE
from hoi4_arena.errors import UserError

CRITICS = ("pact", "joint", "state")
CRITIC_HIDDEN = 64
OPPONENTS = ("ai", "self", "league")
LEAGUE_MEMBERS = ("current", "recent", "old", "scripted", "ai")
"""Who a league game's other side is: the learner as it is now, the newest snapshot, an older one, the
scripted player, the game's AI."""
LEAGUE_EVERY = 10
LEAGUE_MIX = (("current", 0.5), ("recent", 0.2), ("old", 0.1), ("ai", 0.2))
"""The league's defaults: a snapshot every 10 updates; mostly the learner as it is now."""
CLOCKS = ("ticks", "information")
CLIP_MODES = ("fixed", "adaptive")
INFO_CLIP = (10.0, 20.0)
"""--clip-mode adaptive's default widths in percent, the InfoPPO paper's (measured on language models)."""
RESUMABLE_CHANGES = (
    "updates",
    "max_minutes",
    "save_every",
    "threads",
    "workers",
    "ray",
    "peer",
    "peers",
    "progress",
)
"""Settings a resumed run may change: they bound or pace the run, not what it computes (the serial and
process modes and a station give the same numbers; threads may change the last bits)."""
PLACEMENT = ("peer", "peers")
"""Where the games run, not what the run is: left out of config.json and the checkpoints, so a run
resumes with or without --peer (given again, or not, on the command line)."""


@dataclass(frozen=True)
class PPOConfig:
    """Recurrent PPO over the rollout engine's games, against the game's AI, itself or its league (docs/rl.md)."""

    out: str
    """Output folder: last.pt, update-NNNN.pt, progress.pt, config.json, TensorBoard logs (tb/)."""
    init: str = "random"
    """The policy to start from: a checkpoint (train-bc's last.pt) or random (a fresh policy)."""
    updates: int = 10
    """PPO updates of the run (each: one rollout, then the learning on it): the run's length."""
    games: int = 8
    """Games played at once, the policy batched over them (half from each side)."""
    workers: int = 2
    """Worker processes that run the games (0: every game in this process, the serial mode)."""
    ray: str | None = None
    """Run the --workers as Ray actors instead of local processes: auto (this machine's cluster), local (a
    Ray started for the run) or a head's HOST:PORT (`--ray` alone: auto); the same numbers as without (needs Ray: the package's
    cluster extra)."""
    peer: str | None = None
    """Play the rollout's games on this station (a name in the peers file; `serve-worker --game sim`
    there), each started with new_game and driven from this process (--workers unused): one station holds
    one game at a time, so --games 1, against the game's AI, new games (not --ladder); not with --ray."""
    peers: str | None = None
    """Peers file for --peer (default: $HOI4_ARENA_PEERS, else ~/.config/hoi4-arena/peers.json)."""
    steps: int = 64
    """Decisions of every game per rollout (a rollout is games x steps decisions)."""
    window: int = 16
    """Decisions per training window, started from the memory stored in the rollout."""
    epochs: int = 2
    """Passes over each rollout."""
    batch: int = 8
    """Windows per optimizer step."""
    lr: float = 1e-4
    """Adam learning rate."""
    gamma: float = 1.0
    """Discount per decision (per nat of entropy with --clock information)."""
    lam: float = 1.0
    """GAE lambda (1: Monte Carlo returns, bootstrapped at the rollout's end)."""
    clock: str = "ticks"
    """ticks: GAE discounts by gamma and gamma*lam once a decision; information (InfoPPO): by gamma**h and
    (gamma*lam)**h for the collecting policy's entropy h there (nats), so decisions taken with certainty,
    such as waiting, cost no horizon. A no-op at --gamma 1 --lam 1, the defaults."""
    clip: float = 0.2
    """PPO's clip range of the likelihood ratio, [1 - clip, 1 + clip] (--clip-mode fixed)."""
    clip_mode: str = "fixed"
    """fixed: every decision's ratio clipped to --clip's range; adaptive (InfoPPO): to
    [1 - LO ln(1 + h), 1 + HI ln(1 + h)] for the collecting policy's entropy h there (nats, over the
    decision's 8 tokens; the lower bound at least 0.05), so a confident decision barely moves and an
    unsure one may move further."""
    info_clip: tuple[float, float] | None = None
    """--clip-mode adaptive: the bounds' widths LO,HI in percent (default 10,20, the paper's)."""
    critic: str = "pact"
    """pact: update the actor, then the value head on the replayed steps weighted by the clipped ratio;
    joint: one loss for both; state (privileged, asymmetric actor-critic): V(s) from a small net on the
    learner's side's ARENA facts (train-state-value's features), trained on the rollouts' returns; the
    actor stays on pixels."""
    critic_init: str | None = None
    """A train-state-value checkpoint (state-value.pt): --critic state starts from it, and --value-shaping
    takes its frozen V as the potential."""
    critic_hidden: int = CRITIC_HIDDEN
    """--critic state without --critic-init: the width of the critic's two hidden layers."""
    critic_lr: float = 1e-3
    """--critic state: the critic's own Adam learning rate."""
    value_shaping: float = 0.0
    """Weight W of potential-based shaping W (gamma V(s') - V(s)) added to every reward (Ng, Harada and
    Russell 1999), V the frozen --critic-init model on the learner's ARENA facts (0: none)."""
    value_coef: float = 0.5
    """Weight of the value loss in the joint loss (--critic joint)."""
    pact_max_ratio: float = 6.0
    """PACT: the likelihood ratio that weights a replayed step's value loss is clipped to [0, this]."""
    bc_kl: float = 0.0
    """Weight of a KL term toward the frozen start policy (--init's checkpoint), so early updates keep
    its setup (0: none)."""
    bc_kl_decay: float = 1.0
    """The --bc-kl weight of update u (counted from 0) is W * D**u: D in (0, 1] (1: a fixed weight)."""
    replay: str | None = None
    """A data folder of labelled sessions (train-bc DATA: demonstrations, a DAgger run's gathered data): each
    optimizer step adds train-bc's loss on a batch of its windows (--window, --batch), weighted by
    --replay-weight, so RL keeps the imitation data's skills."""
    replay_sources: tuple[str, ...] = ("human", "scripted")
    """--replay: the sessions' sources to replay, as train-bc --sources (human, scripted, ai, policy, idm,
    expert)."""
    replay_weight: float = 0.1
    """--replay: the weight of its behaviour-cloning loss beside PPO's."""
    grad_clip: float = 1.0
    """Clip the gradient's global norm to this (0: no clipping)."""
    temperature: float = TEMPERATURE
    """Sampling temperature of the rollouts."""
    reset_memory: int = 0
    """Start the memory afresh every N decisions of a game, as play-policy --reset-memory N does and as
    train-bc's windows of N trained it (0: carried over the whole game)."""
    opponent: str = "ai"
    """The other side of every game: ai (the game's AI), self (the learner's own policy, on its own screen
    in the same world), league (drawn game by game from --league-mix)."""
    league_every: int = LEAGUE_EVERY
    """--opponent league: a frozen snapshot of the learner every K updates (the start is the first)."""
    league_mix: dict[str, float] = field(default_factory=lambda: dict(LEAGUE_MIX))
    """--opponent league: each member's probability (current, recent, old, scripted, ai), normalised;
    scripted needs a --size the scripted player is calibrated for (960x540, 1920x1080)."""
    reward: dict[str, float] = field(default_factory=dict)
    """Shaping terms and their weights on top of the outcome (win 1, draw 0.5, loss 0): setup,
    victory_points, provinces."""
    arena: tuple[str, ...] = (ARENA,)
    """Maps the games are drawn from, one per game: presets (their map seed drawn from --map-seeds: by
    default seed 0, as a bare preset is in every command), preset:seed, or preset:A-B (the map seed drawn
    from A..B, game by game)."""
    map_seeds: tuple[int, int] = (0, 0)
    """The map seeds a bare preset of --arena is drawn from, LOW-HIGH: --arena plains --map-seeds 0-99 is
    --arena plains:0-99 (the default 0-0 keeps a bare preset its map of seed 0)."""
    ai_strength: tuple[float, float] = (0.5, 0.5)
    """The game's AI strength drawn from LOW-HIGH (0..1)."""
    ladder: str | None = None
    """A make-ladder folder: every game starts from one of its rung saves (--rungs), drawn game by game,
    instead of a new game of --arena; a save fixes the map, the side and the AI (--opponent ai only)."""
    rungs: str = "all"
    """With --ladder: the rungs the games start from, comma-separated (e.g. S3,S2), or all."""
    size: tuple[int, int] = (360, 640)
    """The games' screen, WIDTHxHEIGHT on the command line (16:9)."""
    speed: int = 5
    """Game speed 1..5."""
    max_days: int = 60
    """Each game's time limit in days (a draw when reached)."""
    max_decisions: int = 0
    """Stop a game after this many decisions, invalid and left out of training (0: no limit)."""
    policy: dict[str, int | str] = field(default_factory=dict)
    """PolicyConfig widths of a random start, e.g. {"width": 8} (--policy width=8)."""
    layout: str = "cpu"
    """View layout of a random start (a checkpoint brings its own)."""
    chunk: int = 0
    """Frames per recomputed chunk of the encoder in training (0: keep all activations)."""
    seed: int = 0
    """Seed of the schedule of games, a random start's weights and the windows' order."""
    record: bool = False
    """Record every game as a session under OUT/sessions/ (as play-policy records them)."""
    codec: str = "x264"
    """Video codec of recorded sessions: x264 or ffv1."""
    save_every: float = 300.0
    """Seconds between progress.pt saves (also saved at the end)."""
    max_minutes: float = 0.0
    """Stop cleanly after this many minutes of wall time (0: no limit); a guard, the run is --updates."""
    threads: int = 1
    """Torch CPU threads of the learner (0: torch's default)."""
    progress: bool = True
    """A progress bar on stderr."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "arena", tuple(self.arena))
        object.__setattr__(self, "replay_sources", tuple(self.replay_sources))
        object.__setattr__(self, "map_seeds", tuple(int(v) for v in self.map_seeds))
        object.__setattr__(self, "ai_strength", tuple(float(v) for v in self.ai_strength))
        object.__setattr__(self, "size", tuple(int(v) for v in self.size))
        object.__setattr__(self, "policy", dict(self.policy))
        from hoi4_arena.screen.rewards import parse_weights

        object.__setattr__(self, "reward", parse_weights(self.reward))
        object.__setattr__(self, "league_mix", parse_mix(self.league_mix))
        for name, low in (
            ("updates", 1),
            ("games", 1),
            ("workers", 0),
            ("steps", 1),
            ("window", 1),
            ("epochs", 1),
            ("batch", 1),
            ("max_days", 1),
            ("max_decisions", 0),
            ("reset_memory", 0),
            ("chunk", 0),
            ("seed", 0),
            ("threads", 0),
            ("league_every", 1),
            ("critic_hidden", 1),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UserError(f"--{name.replace('_', '-')} must be a whole number >= {low}, not {value!r}")
        for name, low, high in (
            ("lr", 0.0, math.inf),
            ("gamma", 0.0, 1.0),
            ("lam", 0.0, 1.0),
            ("clip", 0.0, math.inf),
            ("value_coef", 0.0, math.inf),
            ("pact_max_ratio", 0.0, math.inf),
            ("bc_kl", 0.0, math.inf),
            ("bc_kl_decay", 0.0, 1.0),
            ("critic_lr", 0.0, math.inf),
            ("value_shaping", 0.0, math.inf),
            ("replay_weight", 0.0, math.inf),
            ("grad_clip", 0.0, math.inf),
            ("temperature", *TEMPERATURE_RANGE),
            ("save_every", 0.0, math.inf),
            ("max_minutes", 0.0, math.inf),
        ):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or not low <= value <= high:
                raise UserError(
                    f"--{name.replace('_', '-')} must be a number in {low:g}..{high:g}, not {value!r}"
                )
        if not self.lr > 0 or not self.clip > 0 or not self.temperature > 0:
            raise UserError("--lr, --clip and --temperature must be above 0")
        if self.clock not in CLOCKS:
            raise UserError(
                f"--clock must be one of {', '.join(CLOCKS)} (discount per decision, per nat of the "
                f"policy's entropy), not {self.clock!r}"
            )
        if self.clip_mode not in CLIP_MODES:
            raise UserError(f"--clip-mode must be one of {', '.join(CLIP_MODES)}, not {self.clip_mode!r}")
        if self.info_clip is not None:
            if self.clip_mode != "adaptive":
                raise UserError(
                    f"--info-clip sets the adaptive clip's widths: it needs --clip-mode adaptive (this run "
                    f"clips --clip-mode {self.clip_mode})"
                )
            object.__setattr__(self, "info_clip", _info_clip(self.info_clip))
        elif self.clip_mode == "adaptive":
            object.__setattr__(self, "info_clip", INFO_CLIP)  # stored explicitly in config.json
        if self.critic not in CRITICS:
            raise UserError(f"--critic must be one of {', '.join(CRITICS)}, not {self.critic!r}")
        if self.opponent not in OPPONENTS:
            raise UserError(
                f"--opponent must be one of {', '.join(OPPONENTS)} (the game's AI, the learner itself, its "
                f"league), not {self.opponent!r}"
            )
        if self.peer is not None:
            self._check_peer()
        if self.ray is not None and self.workers < 1:
            raise UserError("--ray runs the --workers as Ray actors: give --workers 1 or more")
        if self.opponent != "league" and (
            self.league_every != LEAGUE_EVERY or self.league_mix != parse_mix(dict(LEAGUE_MIX))
        ):
            raise UserError(
                f"--league-every and --league-mix shape the league: they need --opponent league (this run "
                f"plays --opponent {self.opponent})"
            )
        if self.speed not in range(1, 6):
            raise UserError(f"--speed must be 1..5, not {self.speed!r}")
        if self.codec not in ("x264", "ffv1"):
            raise UserError(f"--codec must be x264 or ffv1, not {self.codec!r}")
        if self.bc_kl and self.init == "random":
            raise UserError("--bc-kl pulls toward the start policy: give --init a BC checkpoint")
        if self.bc_kl_decay != 1.0 and not self.bc_kl:
            raise UserError("--bc-kl-decay decays the --bc-kl weight: give --bc-kl W above 0 too")
        if not self.bc_kl_decay > 0:
            raise UserError(f"--bc-kl-decay must be in (0, 1] (1: a fixed weight), not {self.bc_kl_decay!r}")
        self._check_critic()
        if self.replay is None and (
            self.replay_sources != ("human", "scripted") or self.replay_weight != 0.1
        ):
            raise UserError("--replay-sources and --replay-weight shape --replay: give --replay DATA too")
        if self.replay is not None and not Path(self.replay).is_dir():
            raise UserError(
                f"--replay {self.replay}: no such folder (give labelled sessions, as train-bc DATA)"
            )
        low, high = self.map_seeds
        if not 0 <= low <= high:
            raise UserError(f"--map-seeds must be LOW-HIGH with 0 <= LOW <= HIGH, not {low}-{high}")
        low_s, high_s = self.ai_strength
        if not 0 <= low_s <= high_s <= 1:
            raise UserError(f"--ai-strength must be LOW-HIGH within 0..1, not {low_s}-{high_s}")
        from hoi4_arena.maps.held_out import refuse_suite_maps
        from hoi4_arena.maps.presets import PRESETS
        from hoi4_arena.maps.specs import parse_entry

        # A malformed seed or range is refused by parse_entry with its own message.
        unknown = [a for a in self.arena if parse_entry(a).kind == "folder"]
        if unknown or not self.arena:
            raise UserError(
                f"--arena takes presets ({', '.join(PRESETS)}), preset:seed or preset:A-B, not "
                f"{', '.join(unknown) or 'nothing'}"
            )
        refuse_suite_maps(self.arena, "--arena", self.map_seeds)
        from hoi4_arena.play.runner import check_size

        check_size(self.size)
        if self.ladder is not None:
            if self.opponent != "ai":
                raise UserError(
                    f"--ladder starts games from rung saves against the game's AI: not with --opponent {self.opponent}"
                )
            from hoi4_arena.rl.rollout import rung_starts

            # A folder that is no ladder, or rungs it lacks: refused now; so is a save on the benchmark's maps.
            starts = rung_starts(self.ladder, self.rungs)
            refuse_suite_maps((start.spec for start in starts), f"--ladder {self.ladder} has a rung save on")
        elif self.rungs != "all":
            raise UserError("--rungs chooses the rung saves of --ladder: give --ladder too")
        if any(name == "scripted" for name, _ in self.opponents):
            from hoi4_arena.players.templates import sim_rules_path

            if not sim_rules_path(self.size).is_file():
                h, w = self.size
                raise UserError(
                    f"--league-mix scripted: the scripted player has no calibration for a {w}x{h} screen; "
                    "use --size 960x540 (or 1920x1080), or leave scripted out of --league-mix"
                )

    def _check_critic(self) -> None:
        """Refuse (UserError) privileged-critic settings that do not fit together (the checkpoint's format
        is checked when the run loads it, before it writes anything)."""
        if self.critic != "state" and (self.critic_hidden != CRITIC_HIDDEN or self.critic_lr != 1e-3):
            raise UserError(
                f"--critic-hidden and --critic-lr shape --critic state's net (this run has --critic {self.critic})"
            )
        if not self.critic_lr > 0:
            raise UserError(f"--critic-lr must be above 0, not {self.critic_lr!r}")
        if self.critic_init is not None:
            if self.critic != "state" and not self.value_shaping:
                raise UserError(
                    "--critic-init is a train-state-value checkpoint for --critic state or --value-shaping: "
                    f"this run uses neither (--critic {self.critic})"
                )
            if self.critic_hidden != CRITIC_HIDDEN:
                raise UserError("--critic-hidden sets a fresh critic's width; --critic-init brings its own")
            if not Path(self.critic_init).is_file():
                raise UserError(
                    f"--critic-init {self.critic_init}: no such file (give train-state-value's state-value.pt)"
                )
        elif self.value_shaping:
            raise UserError(
                "--value-shaping takes its potential from a trained state value: give --critic-init "
                "(train-state-value's state-value.pt)"
            )

    def _check_peer(self) -> None:
        """Refuse (UserError) what a station's rollout cannot be (the station itself is checked when the
        run connects, before it writes anything)."""
        from hoi4_arena.play.runner import check_peer_options

        check_peer_options(self.peer, self.ray, "sim", list(self.arena))
        if self.games != 1:
            # Each slot's game lives across decisions and updates while the slots step together; a
            # station serves one game, and new_game closes it: N games at once need N stations.
            raise UserError(
                f"--peer plays the rollout on one station, which holds one game at a time; the rollout "
                f"steps its --games {self.games} games together, each kept across updates: give --games 1"
            )
        if self.opponent != "ai":
            raise UserError(
                f"--peer plays one-player games against the game's AI: --opponent {self.opponent} needs "
                "a two-player world here, which a station's new_game cannot start"
            )
        if self.ladder is not None:
            raise UserError(
                "--peer starts new games of --arena: a --ladder's saves are files on this machine"
            )

    @property
    def opponents(self) -> tuple[tuple[str, float], ...]:
        """The league members the games' other sides are drawn from, with their probabilities."""
        if self.opponent == "ai":
            return (("ai", 1.0),)
        if self.opponent == "self":
            return (("current", 1.0),)
        weight = sum(self.league_mix.values())
        return tuple((name, p / weight) for name, p in self.league_mix.items() if p > 0)

    @property
    def info_clip_widths(self) -> tuple[float, float]:
        """--clip-mode adaptive: the lower and the upper bound's width per unit of ln(1 + entropy)."""
        low, high = self.info_clip or INFO_CLIP
        return low / 100, high / 100

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in PLACEMENT:
            del data[key]
        for key in ("arena", "map_seeds", "ai_strength", "size", "info_clip", "replay_sources"):
            if data[key] is not None:
                data[key] = list(data[key])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PPOConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(f"unknown train-ppo settings: {', '.join(unknown)}")
        return cls(**data)

    def resumed_with(self, changes: dict[str, Any]) -> PPOConfig:
        """This (stored) config with the settings a resumed run may change; UserError for any other."""
        refused = {
            k: v
            for k, v in changes.items()
            if k not in (*RESUMABLE_CHANGES, "out") and _plain(getattr(self, k)) != _plain(v)
        }
        if refused:
            listed = "; ".join(
                f"--{k.replace('_', '-')} {v!r} (the run has {getattr(self, k)!r})"
                for k, v in refused.items()
            )
            raise UserError(
                f"--resume continues with the run's own settings; these differ: {listed}. Only "
                f"{', '.join(RESUMABLE_CHANGES)} may change, or start a new run in another folder"
            )
        return replace(self, **{k: v for k, v in changes.items() if k in RESUMABLE_CHANGES})


def parse_mix(mix: dict[str, Any]) -> dict[str, float]:
    """`--league-mix` as {member: probability}, in `LEAGUE_MEMBERS` order; UserError for an unknown member,
    a bad number, or probabilities that do not sum to a positive number."""
    out: dict[str, float] = {}
    for name, value in mix.items():
        if name not in LEAGUE_MEMBERS:
            raise UserError(
                f"--league-mix {name}={value}: unknown league member {name!r}; the members are "
                f"{', '.join(LEAGUE_MEMBERS)}"
            )
        try:
            p = float(value)
        except (TypeError, ValueError):
            raise UserError(f"--league-mix {name}={value}: the probability must be a number") from None
        if not math.isfinite(p) or p < 0:
            raise UserError(f"--league-mix {name}={value}: the probability must be a finite number >= 0")
        out[name] = p
    if not sum(out.values()) > 0:
        raise UserError(
            f"--league-mix must give the members probabilities that sum to a positive number, not {mix!r} "
            "(e.g. current=0.5,recent=0.2,old=0.1,ai=0.2)"
        )
    return {name: out[name] for name in LEAGUE_MEMBERS if name in out}


def _info_clip(value: Any) -> tuple[float, float]:
    """`--info-clip` as (LO, HI) percent; UserError unless it is two finite numbers above 0."""
    numbers = tuple(value) if isinstance(value, tuple | list) else (value,)
    if len(numbers) != 2 or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in numbers
    ):
        raise UserError(
            f"--info-clip takes two numbers above 0, LO,HI in percent (e.g. 10,20), not "
            f"{','.join(str(v) for v in numbers) or 'nothing'}"
        )
    return float(numbers[0]), float(numbers[1])


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
