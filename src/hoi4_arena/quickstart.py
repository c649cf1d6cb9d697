"""The main job, `hoi4-arena quickstart OUT`: from nothing to a learned agent playing the simulator.

Five stages, each leaving its output in OUT and resuming where it stopped when run again:

1. demonstrations (OUT/demos): the scripted player plays the game's AI in the headless simulator and
   every game is recorded as a session (`record-ai`, cycling over the training maps `--arena` pair by
   pair); the last games are held out for validation (OUT/demos/splits.json). Demonstration games are
   short (`--demo-max-days`): their first days hold the setup and the first replans, what a policy must
   learn before anything else; the scripted hand is quick (`DEMO_HAND`), so a click lands in the
   decision the pointer arrives in or the next. The recorder stores the views the player saw beside
   each video, so training decodes no video;
2. baselines (OUT/eval/{scripted,random}, OUT/eval/held-out/scripted): the scripted player and a random
   policy play the game's AI on the evaluation seeds, each seed from both sides (`record-ai`,
   `play-policy`), on the training maps; the scripted player also on the held-out map (`--held-out`, a
   map the demonstrations never show);
3. training (OUT/bc): behaviour cloning on the demonstrations for `--train-steps` optimizer steps
   (`train-bc` with the settings of `BC_SETTINGS`, the learning rate decayed over those steps,
   TensorBoard logs in OUT/bc/tb); with `--train-seeds K`, K policies trained alike on the same
   demonstrations with training seeds seed..seed+K-1 (OUT/bc, OUT/bc-2, ...), the report giving their
   spread;
4. evaluation (OUT/eval/learned, OUT/eval/held-out/learned): the learned checkpoint plays the same
   seeds and sides (`play-policy` with `PLAY_SETTINGS`), games of the full length (`--max-days`), on
   the training maps and on the held-out map;
5. report (OUT/report.html, OUT/report.json, pictures in OUT/report/): each player's record with a
   Wilson interval, how often it completed its setup (army, front, offensive, executed), the same on
   the held-out map, the training curves, heat maps of where the policy wants to point, and a strip of
   frames from one of its games.

The run is fixed by work, not by wall time: the demonstrations, games, seeds and training steps are
settings, so the same command gives the same weights (`weights_sha256` in the report) and the same
records on one machine; only the time it takes varies. Torch's CPU libraries pick their kernels by the
CPU (AVX-512 or AVX2), and 3,000 steps turn their different rounding into another policy, so the run pins
them to AVX2 before torch loads, in its own processes (`cli.main` calls numerics.pin_numerics; the
report says under which CPU and settings it trained): processes that would pick AVX-512 and AVX2 then
train the same weights; two CPU models may still differ (oneDNN sizes its blocks by the caches). `--budget-minutes B` bounds the
whole run instead: the games, their lengths and the demonstrations scale down with B (`scaled`), game
stages stop starting games when their share of B is spent, training gets the time the rest leaves, and
the report says it was time-bounded and how many steps it made. OUT/quickstart.json keeps the settings
and each finished stage's summary; a run with other settings in the same OUT is refused.
docs/learning.md says how the settings below were chosen, with the measurements.

Try: hoi4-arena quickstart demo
"""

from __future__ import annotations

import html
import json
import logging
import math
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import SETUP_STEPS
from hoi4_arena.numerics import numerics
from hoi4_arena.results import GameResult, read_results, wilson, win_record
from hoi4_arena.terminal import stderr

log = logging.getLogger(__name__)

STATE = "quickstart.json"
STAGES = ("demonstrations", "baselines", "training", "fine-tuning", "evaluation")
PLAYERS = ("learned", "scripted", "random")
HELD_OUT_PLAYERS = ("learned", "scripted")
FINE_TUNED = "fine-tuned"
"""The player of the optional PPO stage (--rl-updates): the learned policy fine-tuned against the AI."""
HELD_OUT = "held-out"
EVAL_SEED_OFFSET = 1000  # evaluation seeds never overlap the demonstrations' seeds
MIN_BUDGET = 2.0
FULL_BUDGET = 20.0
"""A budget of at least this many minutes plays the settings as given; a smaller one scales them down."""
MIN_TRAIN_MINUTES = 0.4
"""Training's least share of a budget: a few hundred steps of the small policy on this machine."""
REPORT_MINUTES = 0.5
"""Reserved for the report (heat maps, pictures) when training's share of a budget is worked out."""
GAME_SHARES = {"demonstrations": 0.25, "baselines": 0.15}
"""With a budget: the share of it after which a game stage starts no new game."""

# Behaviour cloning as measured best for a budget of minutes on a 2-core CPU (docs/learning.md): a small
# policy (about 1.5x the steps of the default widths), short windows, most of the idle ones left out
# (their decisions teach only "do nothing"), the demonstrations held in memory after one decode (later
# epochs cost no video), chunks that recompute fewer activations.
SMALL_POLICY = {
    "width": 16,
    "summary_dim": 128,
    "cell_dim": 32,
    "fovea_dim": 64,
    "hidden": 128,
    "head_dim": 128,
    "cell_pool": "mean_max",
}
# ... the pointer loss of aim moves (where clicks and drags land) weighted 4x, the learning rate decayed
# along a cosine over the training minutes the budget leaves (set when training starts).
BC_SETTINGS: dict[str, Any] = {
    "window": 8,
    "idle_windows": 0.1,
    "lr": 1e-3,
    "aim_weight": 4.0,
    "chunk": 16,
    "hold_gb": 12.0,
    "policy": SMALL_POLICY,
}
# The demonstrations' scripted hand rests briefly (a click lands in the decision the pointer arrives in,
# or the next), so the actions a policy must learn are short (docs/learning.md).
DEMO_HAND: dict[str, Any] = {"think_s": (0.05, 0.15), "press_delay_s": (0.05, 0.1)}
# The learned policy plays as it trained: a fresh memory every training window; each move on its
# likeliest point; whether to act sampled at temperature 0.7 (chosen on validation seeds 2000-2029, never
# the report's: 17 of 60 games won against 11 at 1.0; docs/learning.md), and an action, once begun,
# completed with its likeliest kinds.
PLAY_SETTINGS: dict[str, Any] = {
    "point": True,
    "reset_memory": BC_SETTINGS["window"],
    "follow_through": True,
    "temperature": 0.7,
}


@dataclass(frozen=True)
class Learner:
    """One learned policy of a run: its player name, training folder, stage and training seed."""

    name: str
    folder: str
    stage: str
    seed: int


@dataclass
class QuickstartConfig:
    """Settings of `hoi4-arena quickstart`."""

    out: Path
    """Folder for everything the run makes; running again with it resumes."""
    train_steps: int = 3000
    """Optimizer steps of behaviour cloning: with the seeds, the work that fixes the learned policy."""
    budget_minutes: float | None = None
    """Bound the whole run by wall-clock minutes instead (>= 2): the games scale down, training gets
    what the rest leaves (the report says how many steps it made). None: fixed work, --train-steps."""
    arena: str = ARENA
    """Training map(s): presets (map seed 0), preset:seed or preset:A-B (a new map seed every pair of games),
    comma-separated; pairs of games cycle over them. Not the benchmark's maps (river, map seeds >= 1000)."""
    held_out: str = "river:7"
    """A map the demonstrations never show, where the learned and scripted players also play (none: skip)."""
    games: int = 20
    """Evaluation games per player (learned, scripted, random), on the same seeds, sides alternating."""
    demo_games: int = 96
    """Scripted games recorded as demonstrations."""
    demo_max_days: int = 30
    """Each demonstration's time limit in days (a draw when reached); evaluation games use max_days."""
    val_games: int = 2
    """Of the demonstrations, how many are held out to score the training."""
    size: tuple[int, int] = (540, 960)
    """The game's screen: WIDTHxHEIGHT on the command line."""
    speed: int = 5
    """Game speed 1..5 of every match."""
    max_days: int = 365
    """Each evaluation game's time limit in days (a draw when reached)."""
    seed: int = 0
    """Seed of the demonstrations (game i plays seed + i) and of training; evaluation uses seed + 1000."""
    train_seeds: int = 1
    """Policies trained on the same demonstrations, training seeds seed, seed + 1, ...: each plays the same
    games, and the report gives their mean and range beside each one's record (the spread a reader needs
    to know what one run means). 1: one policy. Fixed work only: not with --budget-minutes."""
    rl_updates: int = 0
    """PPO updates that fine-tune the learned policy against the game's AI (rl/fine_tune.py's settings);
    the fine-tuned policy then plays the same games and the report pairs it with its start (0: no such
    stage). Fixed work only: not with --budget-minutes."""
    policy: dict[str, int | str] = field(default_factory=dict)
    """The learned policy's widths over the quickstart's own (`SMALL_POLICY`), e.g. {"width": 8} (--policy
    width=8): a narrower policy for a quick check of the whole job (the tests' end-to-end run)."""
    threads: int = 2
    """Torch CPU threads for training and play."""
    workers: int = 2
    """Background processes decoding the demonstrations into memory before training."""
    eval_seconds_per_game: float = 12.0
    """With a budget: wall seconds reserved per full-length game of the learned policy."""
    progress: bool = True

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.budget_minutes is not None and not (
            isinstance(self.budget_minutes, int | float) and MIN_BUDGET <= self.budget_minutes <= 24 * 60
        ):
            raise UserError(
                f"--budget-minutes must lie in {MIN_BUDGET:g}..1440 (or be left out: fixed work), "
                f"not {self.budget_minutes!r}"
            )
        for what, value, low in (
            ("--train-steps", self.train_steps, 1),
            ("--rl-updates", self.rl_updates, 0),
            ("--train-seeds", self.train_seeds, 1),
            ("--games", self.games, 1),
            ("--demo-games", self.demo_games, 2),
            ("--max-days", self.max_days, 1),
            ("--demo-max-days", self.demo_max_days, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UserError(f"{what} must be a whole number >= {low}, not {value!r}")
        for what, value in (("--rl-updates", self.rl_updates), ("--train-seeds", self.train_seeds > 1)):
            if value and self.budget_minutes is not None:
                raise UserError(f"{what} is fixed work: leave out --budget-minutes to use it")
        if not 1 <= self.val_games < self.demo_games:
            raise UserError(f"--val-games must lie in 1..{self.demo_games - 1}, not {self.val_games!r}")
        if self.speed not in range(1, 6):
            raise UserError(f"--speed must be 1..5, not {self.speed!r}")
        self.policy = dict(self.policy)
        from hoi4_arena.models.config import PolicyConfig  # torch-free

        try:
            PolicyConfig(**self.bc_settings["policy"])
        except (TypeError, ValueError) as error:
            raise UserError(f"--policy: {error}") from None
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")
        from hoi4_arena.play.runner import run_maps

        entries = run_maps(self.arena)
        self.arena_spec = ",".join(entry.spec for entry in entries)
        held_out = None if self.held_out in (None, "", "none") else self.held_out
        self.held_out_spec = None
        if held_out:
            (held, *more) = run_maps(held_out)
            if more or held.kind == "range":
                raise UserError(f"--held-out is one map (preset, preset:seed or a folder), not {held_out!r}")
            self.held_out_spec = held.spec
            # A training entry shows the held-out map when it is that folder or its preset's seed lies in
            # the entry's seeds (a range included).
            if any(
                entry.spec == held.spec
                or (
                    entry.preset is not None
                    and entry.preset == held.preset
                    and entry.low <= held.low <= entry.high
                )
                for entry in entries
            ):
                raise UserError(
                    f"--held-out {held_out} is one of the training maps: choose a map they never show"
                )
        from hoi4_arena.maps.held_out import refuse_suite_maps

        # Trained on (demonstrations, PPO) before any game is played; --held-out only evaluates, so it may.
        refuse_suite_maps(self.arena_spec.split(","), "--arena")

    def settings(self) -> dict[str, Any]:
        """What decides the run's results: a resumed run must have the same. A budget decides them too (it
        scales the games and bounds the training)."""
        data = asdict(self)
        for key in ("out", "progress", "threads", "workers", "eval_seconds_per_game"):
            data.pop(key)
        for key, alone in (("rl_updates", 0), ("train_seeds", 1)):
            if data[key] == alone:
                data.pop(key)  # a run without the stage has the settings it had before the stage existed
        if not self.policy:
            data.pop("policy")  # the quickstart's own policy: the settings runs had before the option
        if self.budget_minutes is None:
            data.pop("budget_minutes")
        else:
            data.pop("train_steps")
        data["size"] = [self.size[1], self.size[0]]
        return data

    @property
    def bc_settings(self) -> dict[str, Any]:
        """train-bc's settings of this run: `BC_SETTINGS`, the policy's widths with --policy's over them."""
        return {**BC_SETTINGS, "policy": {**SMALL_POLICY, **self.policy}}

    @property
    def learners(self) -> list[Learner]:
        """The policies this run trains: `learned` in OUT/bc with the run's seed, then one more for each
        further training seed."""
        first = Learner("learned", "bc", "training", self.seed)
        more = [
            Learner(f"learned-{k + 1}", f"bc-{k + 1}", f"training-{k + 1}", self.seed + k)
            for k in range(1, self.train_seeds)
        ]
        return [first, *more]

    @property
    def eval_seed(self) -> int:
        return self.seed + EVAL_SEED_OFFSET

    @property
    def scale(self) -> float:
        """How much of the given settings a budget leaves room for (1: all of them)."""
        if self.budget_minutes is None:
            return 1.0
        return min(1.0, self.budget_minutes / FULL_BUDGET)

    @property
    def scaled(self) -> dict[str, int]:
        """The games and lengths this run plays: the settings, or fewer and shorter under a small budget."""
        k = self.scale
        if k >= 1:
            return {
                "demo_games": self.demo_games,
                "games": self.games,
                "max_days": self.max_days,
                "demo_max_days": self.demo_max_days,
            }
        pairs = max(1, round(self.games / 2 * k))
        return {
            "demo_games": max(self.val_games + 2, round(self.demo_games * k)),
            "games": 2 * pairs,
            "max_days": min(self.max_days, max(30, round(self.max_days * k))),
            "demo_max_days": min(self.demo_max_days, max(10, round(self.demo_max_days * k * 2))),
        }


@dataclass
class RunState:
    """OUT/quickstart.json: the settings, the time already spent, and each finished stage's summary."""

    settings: dict[str, Any]
    spent_seconds: float = 0.0
    train_minutes: float | None = None
    stages: dict[str, Any] = field(default_factory=dict)
    reported: bool = False
    """Whether OUT/report.json is the report of the stages as they stand (a finished stage clears it)."""

    def save(self, out: Path) -> None:
        path = out / STATE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        tmp.replace(path)

    @classmethod
    def open(cls, config: QuickstartConfig) -> RunState:
        path = config.out / STATE
        if not path.exists():
            if config.out.exists() and any(config.out.iterdir()):
                raise UserError(f"{config.out} is not empty and holds no {STATE}: choose a new folder")
            config.out.mkdir(parents=True, exist_ok=True)
            state = cls(settings=config.settings())
            state.save(config.out)
            return state
        try:
            state = cls(**json.loads(path.read_text()))
        except (ValueError, TypeError) as error:
            raise UserError(f"{path} is damaged ({error}); start in a new folder") from None
        added = _added_stages(state.settings, config)
        if state.settings != config.settings() and added:
            # The stages before the added ones do not depend on them: they are kept; the evaluation runs
            # again (the games already played are skipped, the new policies' are played).
            stderr.print(f"  adding {', '.join(added)} to the run in {config.out}")
            state.settings = config.settings()
            state.stages.pop("evaluation", None)
            state.save(config.out)
        if state.settings != config.settings():
            changed = sorted(k for k in config.settings() if state.settings.get(k) != config.settings()[k])
            raise UserError(
                f"{config.out} holds a quickstart with other settings ({', '.join(changed)}); "
                "run it with the same settings to resume, or choose a new folder"
            )
        return state


ADDABLE = {"rl_updates": "{} PPO updates", "train_seeds": "{} training seeds"}
"""Settings a finished run may gain (a run made without them holds no such key): the stages they add
come after the ones it has."""


def _added_stages(saved: dict[str, Any], config: QuickstartConfig) -> list[str]:
    """What `config` adds to the saved run (PPO updates, training seeds) when it is the saved run's
    settings with only those added; [] otherwise."""
    wanted = config.settings()
    added = [key for key in ADDABLE if key in wanted and key not in saved]
    if not added or {**saved, **{key: wanted[key] for key in added}} != wanted:
        return []
    return [ADDABLE[key].format(wanted[key]) for key in added]


# --- the stages ---------------------------------------------------------------------------------------


def _played(summary: dict[str, Any]) -> dict[str, Any]:
    """A game stage's summary, or KeyboardInterrupt when its run was interrupted: a stage whose games
    were not all played must not count as finished (the next run resumes it)."""
    if summary.get("interrupted"):
        raise KeyboardInterrupt
    return summary


def _wall_minutes(config: QuickstartConfig, stage: str) -> float:
    """With a budget: the wall minutes after which a game stage starts no new game (0: no limit)."""
    if config.budget_minutes is None:
        return 0.0
    return GAME_SHARES[stage] * config.budget_minutes


def record_demonstrations(config: QuickstartConfig) -> dict[str, Any]:
    """Scripted games against the AI, recorded; the last `val_games` sessions held out."""
    from hoi4_arena.play.record_ai import RecordAIConfig, hold_out_last, run_record_ai

    demos = config.out / "demos"
    scaled = config.scaled
    summary = _played(
        run_record_ai(
            RecordAIConfig(
                out=demos,
                player="scripted",
                games=scaled["demo_games"],
                arena=config.arena_spec,
                seed=config.seed,
                speeds=(config.speed,),
                size=config.size,
                max_days=scaled["demo_max_days"],
                wall_minutes=_wall_minutes(config, "demonstrations"),
                progress=config.progress,
                **DEMO_HAND,
            )
        )
    )
    held_out = hold_out_last(demos, config.val_games)
    return {
        "games": summary["games"],
        "valid": summary["valid"],
        "wins": summary["wins"],
        "held_out": held_out,
    }


def train(
    config: QuickstartConfig,
    minutes: float | None = None,
    planned: float | None = None,
    learner: Learner | None = None,
) -> dict[str, Any]:
    """Behaviour cloning on the demonstrations (resuming a stopped run): `config.train_steps` steps with
    the learning rate decayed over them; with a budget, `minutes` of wall time with the rate decayed over
    the `planned` minutes of training. `learner`: which of the run's policies (the first by default)."""
    from hoi4_arena.training.bc import train_bc
    from hoi4_arena.training.bc_config import BCConfig

    learner = learner or config.learners[0]
    out = config.out / learner.folder
    if config.budget_minutes is None:
        bounds: dict[str, Any] = {"max_steps": config.train_steps, "lr_decay_steps": config.train_steps}
        resumed = {"max_steps": config.train_steps}
    else:
        bounds = {"max_minutes": max(minutes or 0.0, 0.05), "lr_decay_minutes": planned}
        resumed = {"max_minutes": bounds["max_minutes"]}
    bc = BCConfig(
        data=str(config.out / "demos"),
        out=str(out),
        epochs=1000,
        seed=learner.seed,
        threads=config.threads,
        workers=config.workers,
        save_every=60.0,
        sources=("scripted",),
        **bounds,
        **config.bc_settings,
    )
    if (out / "progress.pt").exists():
        summary = train_bc(bc, resume=True, changes={**resumed, "epochs": bc.epochs})
    else:
        if out.exists():
            # Stopped before its first save: nothing was kept but its settings and logs, so it starts
            # over (the same seeds give the same steps).
            stderr.print(f"  {out}: the stopped training saved no step; it starts again")
            shutil.rmtree(out)
        summary = train_bc(bc)
    if summary.get("stopped") == "interrupt":
        # Ctrl+C: train-bc saved and stopped early; the stage is not finished (the next run resumes it).
        raise KeyboardInterrupt
    return summary


def fine_tune_learned(config: QuickstartConfig) -> dict[str, Any]:
    """The optional PPO stage: `config.rl_updates` updates from the learned checkpoint on the training maps
    (resuming a stopped run); the fine-tuned checkpoint is OUT/ppo/last.pt."""
    from hoi4_arena.rl.fine_tune import fine_tune

    summary = fine_tune(
        config.out / "ppo",
        config.out / "bc" / "last.pt",
        config.rl_updates,
        arena=tuple(config.arena_spec.split(",")),
        size=config.size,
        speed=config.speed,
        seed=config.seed,
        threads=config.threads,
        workers=config.workers,
        progress=config.progress,
    )
    keep = ("updates", "decisions", "games_finished", "first", "last", "weights_sha256", "workers_replaced")
    return {key: summary.get(key) for key in keep}


def trained_minutes(out: Path) -> float:
    """Minutes a (possibly interrupted) training run in `out` has trained, from its progress.pt."""
    path = out / "bc" / "progress.pt"
    if not path.exists():
        return 0.0
    from hoi4_arena.models.checkpoint import load_checkpoint

    return float(load_checkpoint(path).extra.get("train_seconds", 0.0)) / 60


def _eval_settings(config: QuickstartConfig, arena: str, wall_minutes: float) -> dict[str, Any]:
    """What every player's evaluation games share: the seeds (each from both sides), map, screen, length."""
    scaled = config.scaled
    return {
        "games": scaled["games"],
        "arena": arena,
        "seed": config.eval_seed,
        "size": config.size,
        "max_days": scaled["max_days"],
        "wall_minutes": wall_minutes,
        "progress": config.progress,
    }


def _maps(config: QuickstartConfig) -> list[tuple[Path, str]]:
    """(evaluation folder, maps) of the training maps and, when there is one, the held-out map."""
    maps = [(config.out / "eval", config.arena_spec)]
    if config.held_out_spec:
        maps.append((config.out / "eval" / HELD_OUT, config.held_out_spec))
    return maps


def evaluate_baselines(config: QuickstartConfig) -> dict[str, Any]:
    """The scripted player (on every map) and a random policy (on the training maps) on the evaluation
    seeds and sides."""
    from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
    from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai

    games: dict[str, Any] = {}
    for folder, arena in _maps(config):
        common = _eval_settings(config, arena, _wall_minutes(config, "baselines") / len(_maps(config)))
        where = "" if folder == config.out / "eval" else f"{HELD_OUT} "
        scripted = _played(
            run_record_ai(
                RecordAIConfig(out=folder / "scripted", player="scripted", speeds=(config.speed,), **common)
            )
        )
        games[f"{where}scripted"] = scripted["games"]
        if not where:
            random = _played(
                run_play_policy(
                    PlayConfig(
                        checkpoint="random",
                        out=folder / "random",
                        name="random",
                        speed=config.speed,
                        **common,
                    )
                )
            )
            games["random"] = random["games"]
    return games


def evaluate_learned(config: QuickstartConfig, wall_minutes: float = 0.0) -> dict[str, Any]:
    """The learned checkpoint on the same seeds and sides as the baselines, on every map (with a budget,
    each map's games start within `wall_minutes` shared out between the maps)."""
    from hoi4_arena.play.play_policy import PlayConfig, run_play_policy

    checkpoints = {learner.name: config.out / learner.folder / "last.pt" for learner in config.learners}
    if config.rl_updates:
        checkpoints[FINE_TUNED] = config.out / "ppo" / "last.pt"
    games: dict[str, Any] = {}
    for folder, arena in _maps(config):
        for name, checkpoint in checkpoints.items():
            summary = _played(
                run_play_policy(
                    PlayConfig(
                        checkpoint=str(checkpoint),
                        out=folder / name,
                        name=name,
                        threads=config.threads,
                        speed=config.speed,
                        **_eval_settings(config, arena, wall_minutes / len(_maps(config)) / len(checkpoints)),
                        **PLAY_SETTINGS,
                    )
                )
            )
            games[name if folder == config.out / "eval" else f"{HELD_OUT} {name}"] = summary["games"]
    return games


# --- the report ---------------------------------------------------------------------------------------


def player_record(rows: list[GameResult]) -> dict[str, Any]:
    """One player's results: wins, draws, losses with a Wilson interval, and setup completion."""
    whole = win_record(rows)
    return {
        "games": whole["valid"],
        "invalid": whole["invalid"],
        "wins": whole["wins"],
        "draws": whole["draws"],
        "losses": whole["losses"],
        "win_rate": whole["win_rate"],
        "setup": whole["setup"],
        "setup_rate": wilson(whole["setup"]["complete"], whole["valid"]).to_dict(),
        "seeds": sorted({(r.seed, r.side) for r in rows if r.valid}),
    }


def _training_curves(out: Path, picture: Path) -> dict[str, Any]:
    """Plot the training and held-out loss from the run's TensorBoard logs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(out / "bc" / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    tags = set(events.Tags().get("scalars", []))
    series = {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in sorted(tags)}
    panels = [
        ("loss per decision (nll of its 8 tokens)", ["train/loss", "held_out/loss"]),
        ("training loss by token kind", sorted(t for t in tags if t.startswith("train/loss_"))),
        (
            "held-out pointer error (lattice units)",
            ["held_out/pointer_distance_median", "held_out/pointer_distance_mean"],
        ),
    ]
    labels = {
        "train/loss": "training",
        "held_out/loss": "held out",
        "held_out/pointer_distance_median": "median",
        "held_out/pointer_distance_mean": "mean",
    }
    panels = [(title, [t for t in names if t in series]) for title, names in panels]
    panels = [p for p in panels if p[1]]
    if panels:
        fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.4), squeeze=False)
        for axis, (title, names) in zip(axes[0], panels, strict=True):
            for name in names:
                steps, values = zip(*series[name], strict=True)
                label = labels.get(name, name.split("/", 1)[1].removeprefix("loss_"))
                axis.plot(steps, values, label=label, marker="." if len(steps) < 30 else None)
            axis.set_title(title)
            axis.set_xlabel("optimizer step")
            axis.legend(fontsize="x-small")
        fig.tight_layout()
        fig.savefig(picture, dpi=90)
        plt.close(fig)
    return {tag: values[-1][1] for tag, values in series.items() if values}


def _frame_strip(session: Path, picture: Path, count: int = 8, every_s: float = 2.0) -> int:
    """The first seconds of a recorded game as a strip of frames (2 rows), one every `every_s`."""
    import numpy as np
    from PIL import Image

    from hoi4_arena.sessions.reader import SessionReader

    reader = SessionReader(session)
    picked, last_t = [], None
    for record, image in reader.frames():
        t = record.t_ns
        if last_t is None or t - last_t >= every_s * 1e9:
            picked.append(image)
            last_t = t
        if len(picked) == count:
            break
    if not picked:
        return 0
    h, w = picked[0].shape[:2]
    scale = max(1, math.ceil(w / 480))
    thumbs = [np.asarray(Image.fromarray(p).resize((w // scale, h // scale), Image.BILINEAR)) for p in picked]
    cols = math.ceil(len(thumbs) / 2)
    th, tw = thumbs[0].shape[:2]
    strip = np.full((2 * th + 4, cols * tw + (cols - 1) * 4, 3), 255, np.uint8)
    for k, thumb in enumerate(thumbs):
        r, c = divmod(k, cols)
        strip[r * (th + 4) : r * (th + 4) + th, c * (tw + 4) : c * (tw + 4) + tw] = thumb
    Image.fromarray(strip).save(picture)
    return len(thumbs)


def _kept_report(config: QuickstartConfig, state: RunState) -> dict[str, Any] | None:
    """The report a run made of the stages as they stand, or None when there is none to keep (its files
    gone or unreadable): drawing it again would repeat its heat maps and pictures (seconds of CPU) for
    the same numbers."""
    if not state.reported or not (config.out / "report.html").is_file():
        return None
    try:
        return json.loads((config.out / "report.json").read_text())
    except (OSError, ValueError):
        return None


def report(config: QuickstartConfig, state: RunState) -> dict[str, Any]:
    """OUT/report.html and OUT/report.json from what the stages left on disk."""
    from hoi4_arena.evaluation.heatmap import heatmap

    out = config.out
    pictures = out / "report"
    pictures.mkdir(exist_ok=True)
    tuned = (FINE_TUNED,) if config.rl_updates else ()
    names = [learner.name for learner in config.learners]
    players = (*names, *PLAYERS[1:], *tuned)
    rows = {player: read_results(out / "eval" / player / "results.jsonl") for player in players}
    records = {player: player_record(rows[player]) for player in players}
    held_out: dict[str, Any] = {}
    held_rows: dict[str, list[GameResult]] = {}
    if config.held_out_spec:
        held_rows = {
            player: read_results(out / "eval" / HELD_OUT / player / "results.jsonl")
            for player in (*names, *HELD_OUT_PLAYERS[1:], *tuned)
        }
        held_out = {player: player_record(found) for player, found in held_rows.items()}
    curves = _training_curves(out, pictures / "training.png")
    training = state.stages.get("training", {})
    planned = config.scaled

    # Where the policy wants to point, on a held-out scripted game of the evaluation.
    scripted_rows = [r for r in rows["scripted"] if r.valid]
    heat: dict[str, Any] = {}
    if scripted_rows:
        session = out / "eval" / "scripted" / scripted_rows[0].extra["session"]
        heat = heatmap(out / "bc" / "last.pt", session, pictures / "heatmap", count=6)
    learned_rows = [r for r in rows["learned"] if r.valid]
    strip_frames = 0
    if learned_rows:
        best = max(
            learned_rows,
            key=lambda r: (r.outcome == "win", bool((r.extra.get("setup") or {}).get("complete"))),
        )
        strip_frames = _frame_strip(
            out / "eval" / "learned" / best.extra["session"], pictures / "learned-game.png"
        )
        strip_game = {
            "session": best.extra.get("session"),
            "seed": best.seed,
            "side": best.side,
            "outcome": best.outcome,
            "days": best.extra.get("days"),
        }
    else:
        strip_game = {}

    result = {
        "out": str(out),
        "arena": config.arena_spec,
        "players": records,
        "held_out": {"arena": config.held_out_spec, "players": held_out} if held_out else {},
        "work": {
            "fixed": config.budget_minutes is None,
            "budget_minutes": config.budget_minutes,
            "train_steps": training.get("steps"),
            "planned_steps": config.train_steps if config.budget_minutes is None else None,
            "weights_sha256": training.get("weights_sha256"),
            "numerics": training.get("numerics"),
            "scaled": planned if config.scale < 1 else None,
            "games_played": {p: r["games"] + r["invalid"] for p, r in records.items()},
            "games_planned": planned["games"],
        },
        "training": {
            "summary": training,
            "final": curves,
        },
        "fine_tuning": _fine_tuning(config, state) if tuned else {},
        "seed_spread": _seed_spread(config, records, held_out) if len(names) > 1 else {},
        "ratings": _ratings(config, rows, held_rows),
        "heatmap": {
            k: heat.get(k)
            for k in ("median_distance_lattice", "median_distance_px", "in_hottest_1pct", "drawn")
        }
        if heat
        else {},
        "strip": {"frames": strip_frames, **strip_game},
        "seconds": round(state.spent_seconds, 1),
        "report": str(out / "report.html"),
    }
    (out / "report.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    (out / "report.html").write_text(_html(config, result, heat))
    return result


def _fine_tuning(config: QuickstartConfig, state: RunState) -> dict[str, Any]:
    """The PPO stage's summary and, on every map, the fine-tuned policy paired with its start seed by seed
    and side by side (evaluation/paired.py: the difference's interval and p-value come from the pairs)."""
    from hoi4_arena.evaluation.paired import compare, planned_keys

    planned = planned_keys(config.scaled["games"] // 2, config.eval_seed)
    paired = {}
    for folder, arena in _maps(config):
        report = compare(
            read_results(folder / FINE_TUNED / "results.jsonl"),
            read_results(folder / "learned" / "results.jsonl"),
            planned,
            names=(FINE_TUNED, "learned"),
        )
        paired[arena] = {
            key: report[key]
            for key in ("paired_games", "complete", "table", "win_rate_difference", "score_difference")
        }
    return {"updates": config.rl_updates, "summary": state.stages.get("fine-tuning", {}), "paired": paired}


def _ratings(
    config: QuickstartConfig, rows: dict[str, list[GameResult]], held_rows: dict[str, list[GameResult]]
) -> dict[str, Any]:
    """Every player's Elo rating against the game's AI (fixed at 1000) on each map, from the same games
    (`evaluation/ratings.py`, as `hoi4-arena ratings`; the bootstrap draws seeds, both sides together)."""
    from hoi4_arena.evaluation.ratings import ANCHOR, SCORES, Game, RatingsConfig, rate

    tables = {}
    for arena, players in ((config.arena_spec, rows), (config.held_out_spec, held_rows)):
        games = [
            Game(player, ANCHOR, SCORES[row.outcome], arena, f"{row.arena} {row.seed}")
            for player, found in players.items()
            for row in found
            if row.valid
        ]
        if games:
            tables[arena] = rate(
                games, RatingsConfig.resamples, RatingsConfig.seed, RatingsConfig.prior_draws
            )
    return tables


def _seed_spread(
    config: QuickstartConfig, records: dict[str, Any], held_out: dict[str, Any]
) -> dict[str, Any]:
    """The learned policies of every training seed, map by map: each one's wins and setups, and their mean
    and range (what one run of the recipe may give)."""

    def spread(values: list[float]) -> dict[str, float]:
        return {"mean": sum(values) / len(values), "min": min(values), "max": max(values)}

    spreads = {}
    for arena, players in ((config.arena_spec, records), (config.held_out_spec, held_out)):
        if not players:
            continue
        mine = [players[learner.name] for learner in config.learners]
        spreads[arena] = {
            "seeds": [learner.seed for learner in config.learners],
            "wins": [r["wins"] for r in mine],
            "draws": [r["draws"] for r in mine],
            "setups": [r["setup"]["complete"] for r in mine],
            "games": [r["games"] for r in mine],
            "win_rate": spread([r["wins"] / r["games"] if r["games"] else 0.0 for r in mine]),
            "setup_rate": spread([r["setup"]["complete"] / r["games"] if r["games"] else 0.0 for r in mine]),
        }
    return spreads


def _numerics_text(state: dict[str, Any] | None) -> str:
    """What the report says of the CPU and kernels the weights were trained with (numerics.py)."""
    if not state:
        return ""
    where = f"on {html.escape(str(state.get('cpu')))} (AVX-512: {'yes' if state.get('avx512') else 'no'})"
    if state.get("pinned"):
        return (
            f"Trained {where} with torch's CPU libraries pinned to AVX2 (ATen avx2, oneDNN AVX2, MKL's "
            "COMPATIBLE branch): a CPU with or without AVX-512 trains the same weights; two CPU models may "
            "still differ where oneDNN blocks a convolution by its caches."
        )
    return (
        f"Trained {where} with this CPU's own kernels (ATen {html.escape(str(state.get('aten_capability')))}: "
        "run in a process that `hoi4-arena quickstart` did not start, so not pinned to AVX2): another CPU "
        "may train other weights."
    )


def _settings_text(settings: dict[str, Any]) -> str:
    def text(value: Any) -> str:
        return " ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else str(value)

    return ", ".join(f"{key.replace('_', '-')} {text(value)}" for key, value in settings.items())


def _pct(row: dict[str, Any]) -> str:
    if not row["games"]:
        return "-"
    return f"{row['rate']:.0%} [{row['low']:.0%}, {row['high']:.0%}]"


def _html(config: QuickstartConfig, result: dict[str, Any], heat: dict[str, Any]) -> str:
    """A single page that shows the numbers and pictures of the report."""
    esc = html.escape

    def table(players: dict[str, Any]) -> str:
        rows = []
        for player, r in players.items():
            setup = r["setup"]
            rows.append(
                f"<tr><td>{player}</td><td>{r['games']}</td><td>{r['wins']}</td><td>{r['draws']}</td>"
                f"<td>{r['losses']}</td><td>{_pct(r['win_rate'])}</td>"
                + "".join(f"<td>{setup[m]}</td>" for m in SETUP_STEPS)
                + f"<td>{_pct(r['setup_rate'])}</td></tr>"
            )
        return (
            "<table><tr><th>player</th><th>games</th><th>wins</th><th>draws</th><th>losses</th>"
            "<th>win rate [95% Wilson]</th><th>army</th><th>front</th><th>offensive</th><th>executed</th>"
            "<th>setup complete [95%]</th></tr>" + "".join(rows) + "</table>"
        )

    work = result["work"]
    if work["fixed"]:
        work_line = (
            f"The run is fixed by work: {work['train_steps']} optimizer steps and the seeds above, so the same "
            f"command gives the same weights on this machine (weights sha256 "
            f"<code>{esc(str(work['weights_sha256']))[:16]}</code>...); only the time varies. "
            + _numerics_text(work["numerics"])
        )
    else:
        scaled = work["scaled"]
        work_line = (
            f"The run was bounded by time ({work['budget_minutes']:g} minutes): training made "
            f"{work['train_steps']} steps in the minutes the rest left"
            + (
                f"; to fit, it played {scaled['demo_games']} demonstrations of at most {scaled['demo_max_days']}"
                f" days and {scaled['games']} evaluation games of at most {scaled['max_days']} days"
                if scaled
                else ""
            )
            + ". A time-bounded run's weights depend on the machine's speed that day."
        )
    held = result["held_out"]
    held_section = ""
    if held:
        held_section = (
            f"<h2>On a map the demonstrations never showed: {esc(held['arena'])}</h2>"
            f"{table(held['players'])}<p>The same seeds and sides; how much of the skill carries over to "
            "another map.</p>"
        )
    tuning = result.get("fine_tuning") or {}
    tuning_section = ""
    if tuning:
        from hoi4_arena.rl.fine_tune import PPO_SETTINGS

        lines = []
        for arena, paired in tuning["paired"].items():
            diff, score = paired["win_rate_difference"], paired["score_difference"]
            lines.append(
                f"<li>{esc(arena)}: win-rate difference {diff['estimate']:+.2f} [{diff['low']:+.2f}, "
                f"{diff['high']:+.2f}], p = {diff['p_value']:.3f} (exact McNemar); score difference "
                f"{score['estimate']:+.2f}, p = {score['p_value']:.3f}; {paired['paired_games']} paired games</li>"
            )
        tuning_section = (
            f"<h2>Fine-tuned with PPO</h2><p>{tuning['updates']} PPO updates from the learned policy against "
            f"the game's AI on the training maps ({esc(_settings_text(PPO_SETTINGS))}); the row "
            f"<i>{FINE_TUNED}</i> above. Fine-tuned against its start, paired seed by seed and side by side:</p>"
            f"<ul>{''.join(lines)}</ul>"
        )
    training = result["training"]["summary"]
    heat_images = "".join(
        f'<img src="report/heatmap/{esc(image["file"])}" width="320">'
        for image in (heat.get("images") or [])[:6]
    )
    heat_line = ""
    if heat:
        heat_line = (
            "<p>Frames of a scripted game of the evaluation: the brighter, the likelier the policy would point "
            "there (four decades on a log scale); the green circle is where the scripted player moved, the "
            "cyan cross the policy's likeliest point. "
            f"Median distance between the policy's hottest point and the scripted player's move: "
            f"{heat.get('median_distance_px') or 0:.0f} px; the demonstrated point lies in the hottest 1% of the "
            f"screen in {heat.get('in_hottest_1pct') or 0:.0%} of {heat.get('drawn')} frames.</p>"
        )
    spread_section = ""
    if result.get("seed_spread"):
        lines = []
        for arena, spread in result["seed_spread"].items():
            win, setup = spread["win_rate"], spread["setup_rate"]
            lines.append(
                f"<li>{esc(arena)}: win rate {win['mean']:.0%} on average, from {win['min']:.0%} to "
                f"{win['max']:.0%} (wins {', '.join(map(str, spread['wins']))}); setup complete "
                f"{setup['mean']:.0%}, from {setup['min']:.0%} to {setup['max']:.0%}</li>"
            )
        seeds = result["seed_spread"][result["arena"]]["seeds"]
        spread_section = (
            f"<h2>Training seeds</h2><p>{len(seeds)} policies trained on the same demonstrations with the "
            f"same settings, training seeds {', '.join(map(str, seeds))} (the rows <i>learned</i>, "
            f"<i>learned-2</i>, ...), each on the same games:</p><ul>{''.join(lines)}</ul>"
        )
    ratings_section = ""
    if result.get("ratings"):
        tables = []
        for arena, rated in result["ratings"].items():
            cells = "".join(
                f"<tr><td>{esc(row['player'])}</td><td>{row['rating']:.0f}</td><td>"
                + (
                    "anchor"
                    if row["anchor"]
                    else f"[{row['low']:.0f}, {row['high']:.0f}]"
                    + (f" ({esc(row['prior_bound'])}: the prior's bound)" if row["prior_bound"] else "")
                )
                + f"</td><td>{row['games']}</td></tr>"
                for row in rated
            )
            tables.append(
                f"<h3>{esc(arena)}</h3><table><tr><th>player</th><th>Elo</th><th>95% bootstrap</th>"
                f"<th>games</th></tr>{cells}</table>"
            )
        ratings_section = (
            "<h2>League table</h2><p>Bradley-Terry ratings in Elo points from the games above (the game's AI "
            "fixed at 1000, a draw half a win, one virtual draw against the AI each; intervals from "
            "resampling the seeds: docs/ratings.md).</p>" + "".join(tables)
        )
    strip = result["strip"]
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>hoi4-arena quickstart report</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}}
table{{border-collapse:collapse}}td,th{{border:1px solid #bbb;padding:4px 8px;text-align:right}}
td:first-child{{text-align:left}}img{{margin:4px;border:1px solid #ccc;max-width:100%}}</style></head><body>
<h1>hoi4-arena quickstart</h1>
<p>Arena <b>{esc(result["arena"])}</b>, {config.size[1]}x{config.size[0]}, speed {config.speed}.
{(work["scaled"] or {}).get("demo_games", config.demo_games)} scripted demonstrations of at most {(work["scaled"] or {}).get("demo_max_days", config.demo_max_days)} days (a quick hand: {esc(_settings_text(DEMO_HAND))}); behaviour cloning for
{training.get("steps", "?")} steps ({training.get("decisions_seen", "?")} decisions, {esc(_settings_text(config.bc_settings))});
the learned policy plays with {esc(_settings_text(PLAY_SETTINGS))}; each player played the game's AI
{work["games_planned"]} times on the same seeds (each seed from both sides). Whole run: {result["seconds"] / 60:.1f} min.</p>
<p>{work_line}</p>
<h2>Against the game's AI</h2>
{table(result["players"])}
<p>Setup columns: games in which the player formed an army, drew a front, drew an offensive and executed
it (read from the game's ARENA log; the policy never reads it).</p>
{held_section}
{ratings_section}
{spread_section}
{tuning_section}
<h2>Training</h2><img src="report/training.png">
<h2>Where the policy wants to point</h2>{heat_line}{heat_images}
<h2>One of its games</h2>
<p>{esc(str(strip.get("session", "")))}: {esc(str(strip.get("side", "")))}, {esc(str(strip.get("outcome", "")))}
after {esc(str(strip.get("days", "")))} days; a frame every 2 s from the start.</p>
<img src="report/learned-game.png">
</body></html>
"""


# --- the run --------------------------------------------------------------------------------------------


def _reserve_minutes(config: QuickstartConfig) -> float:
    """With a budget: the minutes kept back from training for the learned policy's games and the report."""
    scaled = config.scaled
    per_game = config.eval_seconds_per_game * max(0.2, scaled["max_days"] / 365)
    return scaled["games"] * len(_maps(config)) * per_game / 60 + REPORT_MINUTES


def run_quickstart(config: QuickstartConfig) -> dict[str, Any]:
    """Run (or resume) every stage within the budget; returns the report's numbers."""
    state = RunState.open(config)
    started = time.monotonic()
    spent_before = state.spent_seconds

    def spent() -> float:
        return spent_before + time.monotonic() - started

    def finish(stage: str, summary: dict[str, Any]) -> None:
        # The CPU and kernels of the process that ran the stage: `hoi4-arena quickstart` pins them before
        # torch loads (cli.main); a caller that loaded torch first runs on its CPU's own.
        state.stages[stage] = {**summary, "numerics": numerics()}
        state.reported = False
        state.spent_seconds = spent()
        state.save(config.out)

    stages = [stage for stage in STAGES if stage != "fine-tuning" or config.rl_updates]
    more = [learner.stage for learner in config.learners[1:]]
    stages[stages.index("training") + 1 : stages.index("training") + 1] = more
    learners = {learner.stage: learner for learner in config.learners}
    total = len(stages) + 1
    try:
        for number, stage in enumerate(stages, 1):
            if stage in state.stages:
                stderr.print(f"[dim]{number}/{total} {stage}: done before, kept[/]")
                continue
            stderr.print(f"[bold]{number}/{total} {stage}[/]")
            if stage == "demonstrations":
                finish(stage, record_demonstrations(config))
            elif stage == "baselines":
                finish(stage, evaluate_baselines(config))
            elif stage == "training" and config.budget_minutes is None:
                stderr.print(f"  {config.train_steps} optimizer steps")
                finish(stage, train(config))
            elif stage == "training":
                if state.train_minutes is None:
                    state.train_minutes = max(
                        MIN_TRAIN_MINUTES, config.budget_minutes - spent() / 60 - _reserve_minutes(config)
                    )
                    state.save(config.out)
                left = state.train_minutes - trained_minutes(config.out)
                stderr.print(f"  training for {left:.1f} of {state.train_minutes:.1f} minutes")
                finish(stage, train(config, left, state.train_minutes))
            elif stage in more:
                stderr.print(f"  {config.train_steps} optimizer steps, training seed {learners[stage].seed}")
                finish(stage, train(config, learner=learners[stage]))
            elif stage == "fine-tuning":
                stderr.print(f"  {config.rl_updates} PPO updates from the learned policy")
                finish(stage, fine_tune_learned(config))
            else:
                wall = 0.0
                if config.budget_minutes is not None:
                    wall = max(0.1, config.budget_minutes - spent() / 60 - REPORT_MINUTES)
                finish(stage, evaluate_learned(config, wall))
        result = _kept_report(config, state)
        if result is None:
            stderr.print(f"[bold]{total}/{total} report[/]")
            result = report(config, state)
            state.reported = True
        else:
            stderr.print(f"[dim]{total}/{total} report: done before, kept[/]")
    finally:
        state.spent_seconds = spent()
        state.save(config.out)
    stderr.print(f"report: {result['report']}")
    return result
