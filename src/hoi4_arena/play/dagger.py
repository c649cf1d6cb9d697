"""`hoi4-arena dagger OUT --init CKPT`: DAgger, the learner's own games labelled by the scripted player
(or, with `--expert search`, by the search player: expert iteration).

Behaviour cloning learns from the expert's states only, and its errors compound in states the
demonstrations never show. DAgger (Ross, Gordon and Bagnell, AISTATS 2011) lets the learner visit its
own states and asks the expert what it would do there; the data set grows each iteration and the
learner is trained again on all of it. Here the expert is the scripted player, which costs nothing to
ask, or with `--expert search` the search player (`players/search.py`: the scripted player whose
strategic choices are searched by rollouts on the game's world, `--search-*` as record-ai's): DAgger
with a teacher that improves on the scripted player is expert iteration (Anthony et al. 2017). The
search reads the world, so it is a teacher only; the labels are its screen inputs, as the scripted
player's are. Iteration i (0, 1, ...):

1. games: the current policy (the --init checkpoint, then the last iteration's) plays `--games` games
   on fresh training maps -- the six training presets in turn, map seeds `--seed` + i * games/2 + k,
   each map from both sides (`maps/held_out.py`'s guard refuses the benchmark's maps) -- through the
   one runner (`play/runner.py`), recorded. Each decision the expert labels the screen in the
   shadow (`players/shadow.py`), and with probability beta_i = beta0 * decay^i the label is what the
   game gets instead of the learner's tokens (`players/dagger_player.py`). Every session gets its
   labels beside it (labels-expert.json, source `expert`, `sessions/labels.py`);
2. training: train-bc (`training/bc.py`, called as a function) continues from the current weights for
   `--steps` optimizer steps on everything gathered so far: every iteration's labelled sessions (they
   train on the labels, not on what was played) and the `--data` demonstrations (trained on their
   inputs). Its held-out metrics are those of the `--data` sessions of split val;
3. optionally (`--benchmark-pairs N`) the new checkpoint plays the first N pairs of the benchmark's
   `presets` suite (`play/benchmark.py`, into OUT/bench);
4. one line of summary on stdout and in OUT/progress.json: games, their record and how much of it the
   expert played, how often the learner's tokens carried out the labels (all decisions, and those
   whose label acts), the held-out pointer error (exact and within 8 lattice cells), the quick
   benchmark's record.

Folders: OUT/dagger.json (settings; a resumed run must match), OUT/progress.json (finished iterations),
OUT/iter-NNN/games (sessions, results.jsonl), OUT/iter-NNN/data (links to the data it trains on),
OUT/iter-NNN/bc (the train-bc run: last.pt is the next learner). A killed run resumes at the iteration
it was in: finished games are kept (the runner's resume), a training run continues from its
progress.pt, finished iterations are not touched.

The learner is decoded as the quickstart plays (`--point` with follow-through, kinds at
`--temperature`, the memory renewed every training window).

Try: hoi4-arena dagger runs/dagger --init runs/demo/bc/last.pt --data runs/demo/demos --iterations 3 --games 8
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from hoi4_arena.errors import UserError
from hoi4_arena.evaluation.benchmark import leaderboard, war_means
from hoi4_arena.maps.held_out import TRAIN_PRESETS, refuse_suite_maps
from hoi4_arena.maps.model import TAGS
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.play.benchmark import BenchmarkConfig, play_benchmark
from hoi4_arena.play.policy_player import PolicyPlayer
from hoi4_arena.play.runner import GamePlan, RunLimits, decisions_per_day, game_workers, run_games
from hoi4_arena.players.dagger_player import DaggerPlayer, write_expert_labels
from hoi4_arena.players.hand import HandConfig
from hoi4_arena.players.scripted import PlayerConfig, ScriptedPlayer
from hoi4_arena.players.search import SEARCH_FIELDS, SearchOptions, SearchPlayer
from hoi4_arena.players.shadow import ShadowExpert
from hoi4_arena.players.templates import sim_rules
from hoi4_arena.results import GameResult, open_run, read_results, win_record
from hoi4_arena.screen.game import GameRecord, GameSettings, sampling_seed
from hoi4_arena.screen.worker import Worker
from hoi4_arena.sessions.format import write_json_atomic
from hoi4_arena.sessions.recorder import RecorderSettings
from hoi4_arena.sessions.splits import SPLITS_FILE, load_splits
from hoi4_arena.terminal import stderr
from hoi4_arena.training.bc import held_out_report, train_bc
from hoi4_arena.training.bc_config import BCConfig
from hoi4_arena.training.state_value import load_state_value, world_value

SETTINGS = "dagger.json"
PROGRESS = "progress.json"
GAMES_SETTINGS = "dagger-games.json"
SIZE = (540, 960)
SPEED = 5
AI_STRENGTH = 0.5
MAP_SEEDS = 1000
"""Training maps have map seeds below this (the benchmark's start here)."""
EXPERTS = ("scripted", "search")
STORED_BEFORE = {
    "expert": "scripted",
    "beta_segment": 1,
    "lr": 0.0,
    "lr_decay": False,
    "held_inputs": False,
    "labels": "all",
    "takeover": 0.0,
}
"""Settings a run stored before they existed had these values (its runs resume)."""


@dataclass
class DaggerConfig(SearchOptions):
    """Settings of `hoi4-arena dagger` (with --expert search, the search's `--search-*`:
    `players.search.SearchOptions`)."""

    out: Path
    """Folder of the run: each iteration's games, data links and train-bc run; re-running with it resumes."""
    init: str
    """The policy checkpoint the first iteration plays and trains on from (e.g. a train-bc last.pt)."""
    iterations: int = 4
    """DAgger iterations: games, then training, then the summary."""
    games: int = 8
    """Games each iteration (an even number: each map from both sides)."""
    steps: int = 200
    """train-bc optimizer steps each iteration, on all the data gathered so far."""
    data: str | None = None
    """A folder of demonstrations (scripted sessions, e.g. record-ai's) trained on beside the labelled games;
    its sessions of split val give the held-out pointer error."""
    expert: str = "scripted"
    """Who labels the learner's screens in the shadow: scripted (the scripted player) or search (the
    scripted player with its strategic choices searched by rollouts on the game's world, --search-*:
    expert iteration, docs/dagger.md)."""
    beta0: float = 0.5
    """Chance per decision, in iteration 0, that the expert's input is played instead of the learner's."""
    beta_decay: float = 0.5
    """beta_i = beta0 * beta_decay ** i."""
    beta_segment: int = 1
    """Decisions one coin holds for: the expert (or the learner) plays N decisions in a row, so a step
    the hand spreads over several decisions is not cut off by the other player every other decision (1:
    a coin each decision)."""
    takeover: float = 0.0
    """Chance that a decision the learner drives, whose label acts and is not carried out by the learner's
    input, is played by the expert instead; with it above 0 the expert plays each of its stretches on to
    its step's end (nothing queued, nothing held), so a label on the learner's own state is the start of
    a whole step, not a fragment (0: the learner's input is always played outside beta's stretches)."""
    lr: float = 0.0
    """Each iteration's learning rate, at its start (0: the --init checkpoint's own train-bc rate)."""
    lr_decay: bool = True
    """Each iteration's learning rate falls along a cosine to 0 over its --steps, as the start's did over
    its training (--no-lr-decay: constant, as runs before this option trained)."""
    seed: int = 0
    """The first map seed: iteration i's pair k plays map seed and game seed seed + i * games/2 + k."""
    max_days: int = 365
    """Each game's time limit in days (a draw when reached)."""
    temperature: float = 0.7
    """The learner's sampling temperature of the kinds (moves go to their likeliest point)."""
    tolerance: int = 8
    """Lattice cells a learner's move may be off the label and still carry it out."""
    think_s: tuple[float, float] = (0.05, 0.15)
    """The expert's pause between seeing what to do and starting to move, seconds (low, high); the
    default is the quickstart's demonstrations' (its policies learned that hand)."""
    press_delay_s: tuple[float, float] = (0.05, 0.1)
    """The expert's rest between arriving on a target and pressing, seconds (low, high)."""
    labels: str = "all"
    """Which decisions of the games train: all (the expert's label of every screen, the learner's
    included: DAgger) or played (only the decisions the expert played, from the states the learner led
    to; the learner's own feed the memory unscored: intervention data, as HG-DAgger keeps)."""
    held_inputs: bool = False
    """The learner sees the buttons and keys its inputs hold down when each decision begins
    (`PolicyConfig.held_inputs`): the labels on its games are mostly releases of what it left held. An
    --init policy without them gains them (the weights of what is held start from train-bc's seed)."""
    benchmark_pairs: int = 0
    """After each iteration, play the first N pairs of the benchmark's presets suite (0: none)."""
    workers: int = 0
    """train-bc's data processes (0: on the training thread)."""
    threads: int = 0
    """Torch CPU threads of the learner's play and of train-bc (0: torch's default)."""
    progress: bool = True
    """Progress bars on stderr."""

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        for what, value, low in (
            ("--iterations", self.iterations, 1),
            ("--games", self.games, 2),
            ("--steps", self.steps, 1),
            ("--seed", self.seed, 0),
            ("--max-days", self.max_days, 1),
            ("--tolerance", self.tolerance, 0),
            ("--benchmark-pairs", self.benchmark_pairs, 0),
            ("--beta-segment", self.beta_segment, 1),
            ("--workers", self.workers, 0),
            ("--threads", self.threads, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UserError(f"{what} must be a whole number >= {low}, not {value!r}")
        if self.expert not in EXPERTS:
            raise UserError(f"--expert must be {' or '.join(EXPERTS)}, not {self.expert!r}")
        if self.labels not in ("all", "played"):
            raise UserError(f"--labels must be all or played, not {self.labels!r}")
        # DAgger's games are the simulator's headless local games: the search can read their world.
        self.check_search(self.expert == "search", SPEED, "use it with --expert search")
        if self.games % 2:
            raise UserError(f"--games must be even (each map from both sides), not {self.games}")
        if self.benchmark_pairs > 40:
            raise UserError(f"--benchmark-pairs must lie in 0..40, not {self.benchmark_pairs}")
        for what, value in (
            ("--beta0", self.beta0),
            ("--beta-decay", self.beta_decay),
            ("--takeover", self.takeover),
        ):
            if not (isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 1):
                raise UserError(f"{what} must lie in 0..1, not {value!r}")
        if not (isinstance(self.lr, int | float) and math.isfinite(self.lr) and 0 <= self.lr <= 1):
            raise UserError(f"--lr must lie in 0..1 (0: the --init checkpoint's own), not {self.lr!r}")
        self.think_s, self.press_delay_s = tuple(self.think_s), tuple(self.press_delay_s)
        for what, bounds in (("--think", self.think_s), ("--press-delay", self.press_delay_s)):
            if len(bounds) != 2 or not 0 <= bounds[0] <= bounds[1] <= 5:
                raise UserError(f"{what} must be LOW-HIGH seconds with 0 <= LOW <= HIGH <= 5, not {bounds!r}")
        if not (isinstance(self.temperature, int | float) and 0 < self.temperature <= 100):
            raise UserError(f"--temperature must lie in 0..100 and be above 0, not {self.temperature!r}")
        last_seed = self.seed + self.iterations * self.games // 2 - 1
        if last_seed >= MAP_SEEDS:
            raise UserError(
                f"--seed {self.seed} with {self.iterations} iterations of {self.games} games reaches map seed "
                f"{last_seed}: DAgger plays training maps only (map seeds below {MAP_SEEDS})"
            )
        if not Path(self.init).is_file():
            raise UserError(f"--init {self.init}: no such checkpoint file")
        if self.data is not None and not Path(self.data).is_dir():
            raise UserError(f"--data {self.data}: no such folder")
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")

    def beta(self, iteration: int) -> float:
        return self.beta0 * self.beta_decay**iteration

    def plan(self, iteration: int, index: int) -> GamePlan:
        """Game `index` of iteration `iteration`: pair k plays the k-th training preset in turn at map seed
        (and game seed) seed + iteration * games/2 + k, BLU first."""
        pair = iteration * (self.games // 2) + index // 2
        seed = self.seed + pair
        preset = TRAIN_PRESETS[pair % len(TRAIN_PRESETS)]
        return GamePlan(index, preset, f"{preset}:{seed}", seed, TAGS[index % 2], SPEED)

    def settings(self) -> dict[str, Any]:
        """What decides the run (dagger.json): a resumed run must have the same."""
        data = asdict(self)
        for key in ("out", "iterations", "progress", "workers", "threads", *SEARCH_FIELDS):
            data.pop(key)
        data.update(self.search_settings(self.expert == "search"))
        data["init"] = str(Path(self.init).resolve())
        data["data"] = None if self.data is None else str(Path(self.data).resolve())
        data["size"] = [SIZE[1], SIZE[0]]
        data["think_s"], data["press_delay_s"] = list(self.think_s), list(self.press_delay_s)
        return data


# --- the games of one iteration ----------------------------------------------------------------------


class _DaggerGames:
    """One iteration's games for the runner: the learner with the shadow expert, recorded and labelled."""

    def __init__(self, config: DaggerConfig, iteration: int, learner: Any, folder: Path) -> None:
        self.config = config
        self.folder = folder
        self.iteration = iteration
        self.learner = learner
        self.beta = config.beta(iteration)
        self.name = f"dagger {iteration}"
        self.players: dict[int, Any] = {}
        self.score = None  # the search's score of a rollout cut short: the share of victory points held
        if config.expert == "search" and config.search_value is not None:
            self.score = world_value(load_state_value(config.search_value))

    def plan(self, index: int) -> GamePlan:
        return self.config.plan(self.iteration, index)

    def workers(self):
        return game_workers(
            "sim",
            SIZE,
            self.learner.layout,
            max_days=self.config.max_days,
            ai_strength=AI_STRENGTH,
            player_kind="policy",
        )

    def player(self, plan: GamePlan, worker: Worker) -> Any:

        rgba, hotspot = worker.pointer_image()
        cursor = (rgba.shape[1], rgba.shape[0], tuple(hotspot))
        hand = PlayerConfig(
            think_s=self.config.think_s, hand=HandConfig(press_delay_s=self.config.press_delay_s)
        )
        if self.config.expert == "search":
            game = getattr(worker, "game", None)  # the search's privileged view of the world
            if game is None:
                raise UserError(
                    "--expert search reads the world of the game it labels: headless sim games only"
                )
            options = {} if self.score is None else {"score": self.score}
            expert: ScriptedPlayer = SearchPlayer(
                sim_rules(SIZE),
                plan.seed,
                lambda: (game.world, game.ais),
                self.config.search_config(plan.speed),
                hand,
                cursor,
                **options,
            )
        else:
            expert = ScriptedPlayer(sim_rules(SIZE), plan.seed, hand, cursor=cursor)
        self.learner.reset(sampling_seed(plan.seed, plan.side))
        shadow = ShadowExpert(expert, self.config.tolerance)
        player = DaggerPlayer(
            self.learner,
            shadow,
            self.beta,
            plan.seed,
            plan.side,
            plan.speed,
            segment=self.config.beta_segment,
            takeover=self.config.takeover,
        )
        self.players[plan.index] = player
        return player

    def game_settings(self, plan: GamePlan, budget_ns: int | None) -> GameSettings:
        return GameSettings(side=plan.side, speed=plan.speed, spec=plan.spec, hz=5, budget_ns=budget_ns)

    def session_id(self, plan: GamePlan) -> str:
        return f"dagger-i{self.iteration:03d}-g{plan.index:04d}-{plan.arena}-s{plan.seed}-{plan.side}"

    def recorder_settings(self, plan: GamePlan) -> Any:

        return RecorderSettings(
            hz=5.0,
            game_speed=plan.speed,
            source="policy",
            game="sim",
            side=plan.side,
            after_winner_s=3600.0,
            realtime=False,
            extra={"dagger": {"iteration": self.iteration, "game": plan.index, "map": plan.spec}},
        )

    def row(self, plan: GamePlan, record: GameRecord) -> GameResult:

        player = self.players.pop(plan.index, None)
        agreement: dict[str, Any] = {}
        if player is not None:
            agreement = player.agreement()
            if record.session is not None and record.valid:
                # The labels before the row: a game without its row is played again, labels and all.
                write_expert_labels(
                    self.folder / record.session,
                    player.decisions,
                    {
                        "learner": self.learner.name,
                        "beta": self.beta,
                        "iteration": self.iteration,
                        **self.expert_about(player),
                    },
                )
        return GameResult(
            player="dagger",
            side=plan.side,
            winner=record.winner,
            valid=record.valid,
            arena=plan.arena,
            seed=plan.seed,
            strategy=record.strategy.get("label", ""),
            opponent="ai",
            reason=record.reason,
            extra={
                "game": plan.index,
                "map": plan.spec,
                "speed": plan.speed,
                "days": record.days,
                "minutes": round(record.play_ns / 60e9, 4),
                "decisions": record.decisions,
                "session": record.session,
                "setup": record.setup,
                "war": record.war,
                "beta": self.beta,
                "learner": self.learner.name,
                **agreement,
                **({} if player is None else self.expert_about(player)),
            },
        )

    def expert_about(self, player: DaggerPlayer) -> dict[str, Any]:
        """Who labelled the game and the opening it chose (the search's: what its rollouts found), with
        how many choice points the search decided."""
        expert = player.scripted
        about = {"expert": self.config.expert, "expert_strategy": expert.strategy.label}
        if isinstance(expert, SearchPlayer):
            about["searches"] = len(expert.searches)
        return about


# --- the loop ----------------------------------------------------------------------------------------


def load_learner(path: Path, temperature: float) -> Any:
    """A checkpoint as DAgger's learner, decoded as the quickstart plays."""

    player = PolicyPlayer(path, mode="point", temperature=temperature, follow_through=True)
    if player.layout.name != "cpu":
        raise UserError(f"{path} reads view layout {player.layout.name!r}; DAgger's games capture 'cpu'")
    player.reset_memory = int(player.checkpoint.extra.get("train_config", {}).get("window", 0))
    return player


def bc_settings(config: DaggerConfig, iteration: int, learner: Path, data: Path, out: Path) -> Any:
    """train-bc's settings for an iteration: the init checkpoint's own training settings where it has them
    (else train-bc's defaults with its architecture), continuing from `learner` for `--steps` steps on
    `data`, the demonstrations' sources and the expert's labels."""

    saved = load_checkpoint(Path(config.init))
    stored = saved.extra.get("train_config")
    if stored is not None:
        base = BCConfig.from_dict(stored)
    else:
        policy = saved.config
        own = {"layout", "encoder", "weights", "freeze_blocks", "seed", "intents"}
        widths = {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy) if f.name not in own}
        base = BCConfig(
            data=str(data), out=str(out), encoder=policy.encoder, layout=policy.layout, policy=widths
        )
    if base.skills:
        raise UserError(
            f"--init {config.init} was trained with --skills: DAgger's learner chooses its own steps"
        )
    sources = tuple(dict.fromkeys((*base.sources, "expert")))
    policy = {**base.policy, "held_inputs": 1} if config.held_inputs else base.policy
    return dataclasses.replace(
        base,
        policy=policy,
        expert_labels=config.labels,
        data=str(data),
        out=str(out),
        init=str(learner),
        weights=None,
        epochs=10**6,
        max_steps=config.steps,
        max_minutes=0.0,
        lr=config.lr or base.lr,
        lr_decay_minutes=0.0,
        lr_decay_steps=config.steps if config.lr_decay else 0,
        seed=base.seed + iteration,
        sources=sources,
        rung=None,
        workers=config.workers,
        threads=config.threads,
        advantage=False,
    )


def _link_data(config: DaggerConfig, iteration: int, folder: Path) -> Path:
    """OUT/iter-i/data: links to every iteration's games so far and to the --data demonstrations, whose
    splits.json (its held-out sessions) becomes the folder's."""
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    targets = {f"games-{j:03d}": Path("..") / ".." / f"iter-{j:03d}" / "games" for j in range(iteration + 1)}
    if config.data is not None:
        targets["demos"] = Path(config.data).resolve()
    for name, target in targets.items():
        link = data / name
        if not link.is_symlink():
            link.symlink_to(target, target_is_directory=True)
    if config.data is not None and load_splits(config.data):  # the demonstrations' held-out sessions
        write_json_atomic(data / SPLITS_FILE, load_splits(config.data))
    return data


def _quick_benchmark(config: DaggerConfig, checkpoint: Path) -> dict[str, Any]:

    bench = BenchmarkConfig(
        players=[str(checkpoint)],
        out=config.out / "bench",
        suite="presets",
        pairs=config.benchmark_pairs,
        max_days=config.max_days,
        progress=config.progress,
    )
    play_benchmark(bench)
    # OUT/bench's leaderboard, as the benchmark command writes it: every checkpoint played there so far
    # (each iteration's, and a start or a control played in with the same settings: dagger_curve.py).
    leaderboard(bench.out, bench.suites, bench.pairs, bench.settings())
    rows = read_results(bench.out / "presets" / bench.specs[0].folder / "results.jsonl")
    rows = [r for r in rows if int(r.extra.get("game", -1)) < 2 * config.benchmark_pairs]
    record = win_record(rows)
    return {
        **{k: record[k] for k in ("games", "wins", "draws", "losses", "win_rate", "setup")},
        "offensives_a_game": _offensives(rows),
    }


def _offensives(rows: list[GameResult]) -> float | None:
    """The mean offensives a valid game drew, as the benchmark's table counts them (`war_means`): how
    often the learner attacked again after its opening, where BC policies fall short (docs/learning.md);
    None without rows that say."""
    value = war_means([r for r in rows if r.valid])["offensives"]
    return None if math.isnan(value) else value


def _iteration(config: DaggerConfig, iteration: int, learner_path: Path) -> dict[str, Any]:

    folder = config.out / f"iter-{iteration:03d}"
    games_dir = folder / "games"
    learner = load_learner(learner_path, config.temperature)
    games = _DaggerGames(config, iteration, learner, games_dir)
    if config.progress:
        stderr.print(
            f"dagger: iteration {iteration}: {learner.name} plays {config.games} games, "
            f"beta {games.beta:.3g}, into {games_dir}"
        )
    summary = run_games(
        games,
        games_dir,
        settings_file=GAMES_SETTINGS,
        settings={**config.settings(), "iteration": iteration, "learner": str(learner_path)},
        command="dagger",
        added=STORED_BEFORE,
        limits=RunLimits(
            games=config.games, decisions_per_game=int(config.max_days * decisions_per_day(SPEED))
        ),
        progress=config.progress,
    )
    if summary["interrupted"]:
        raise KeyboardInterrupt
    rows = [r for r in read_results(games_dir / "results.jsonl") if int(r.extra["game"]) < config.games]
    data = _link_data(config, iteration, folder)
    bc_out = folder / "bc"
    settings = bc_settings(config, iteration, learner_path, data, bc_out)
    resume = (bc_out / "progress.pt").is_file()
    if config.progress:
        stderr.print(f"dagger: iteration {iteration}: train-bc {config.steps} steps on {data}")
    trained = train_bc(settings, resume=resume)
    if trained.get("stopped") == "interrupt":
        raise KeyboardInterrupt
    # train-bc's own report is its last finished epoch's; DAgger's steps end inside one.
    held_out = held_out_report(bc_out / "last.pt", settings) or {}
    out = {
        "iteration": iteration,
        "beta": config.beta(iteration),
        "expert": config.expert,
        "learner": str(learner_path),
        "checkpoint": str(bc_out / "last.pt"),
        "games": len(rows),
        "record": {k: win_record(rows)[k] for k in ("valid", "wins", "draws", "losses", "setup")},
        "offensives_a_game": _offensives(rows),
        "expert_share": _share(rows, "expert_decisions", "decisions"),
        "agree": _share(rows, "agree", "decisions", weighted=True),
        "agree_acting": _share(rows, "agree_acting", "acting", weighted=True),
        **({"takeover_share": _share(rows, "takeovers", "decisions")} if config.takeover > 0 else {}),
        "train_sessions": trained.get("sessions", {}).get("train"),
        "held_out_pointer": {
            k: held_out.get(k)
            for k in (
                "pointer_exact",
                "pointer_within_8",
                "pointer_distance_median",
                "aim_moves",
                "aim_within_8",
                "aim_within_32",
                "aim_distance_median",
            )
        },
    }
    if config.benchmark_pairs:
        out["benchmark"] = _quick_benchmark(config, bc_out / "last.pt")
    return out


def _share(rows: list[GameResult], part: str, whole: str, weighted: bool = False) -> float | None:
    """Over the valid games: sum(part) / sum(whole), or with `weighted` part a rate weighted by whole."""
    num = den = 0.0
    for r in rows:
        if not r.valid or r.extra.get(part) is None:
            continue
        n = float(r.extra.get(whole) or 0)
        num += float(r.extra[part]) * (n if weighted else 1)
        den += n
    return round(num / den, 4) if den else None


def run_dagger(config: DaggerConfig) -> dict[str, Any]:
    """Run (or resume) DAgger's iterations; the summary of every iteration."""
    for iteration in range(config.iterations):  # every map the run will play is a training map
        refuse_suite_maps([config.plan(iteration, 0).spec], "dagger plays")
    open_run(config.out, SETTINGS, config.settings(), "dagger", added=STORED_BEFORE)
    if config.threads:  # the learner's play too, not only train-bc (more threads than cores: far slower)
        torch.set_num_threads(config.threads)
    progress_path = config.out / PROGRESS
    done: list[dict[str, Any]] = (
        json.loads(progress_path.read_text(encoding="utf-8")) if progress_path.is_file() else []
    )
    # The last finished iteration's weights, found in OUT (the run's folder may have moved since).
    learner = config.out / f"iter-{len(done) - 1:03d}" / "bc" / "last.pt" if done else Path(config.init)
    for iteration in range(len(done), config.iterations):
        summary = _iteration(config, iteration, learner)
        done.append(summary)
        write_json_atomic(progress_path, done)
        print(json.dumps(summary, separators=(",", ":")), flush=True)
        learner = Path(summary["checkpoint"])
    return {"out": str(config.out), "iterations": done, "last": str(learner)}
