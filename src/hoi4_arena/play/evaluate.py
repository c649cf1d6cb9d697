"""`hoi4-arena evaluate A B OUT --pairs N`: two players play the game's AI on the same games; a paired report.

A and B are each a policy checkpoint, `random` (the seeded uniform baseline) or `scripted` (the scripted
player). Each plays 2N games: seed S + k from BLU, then from RED, for k < N, on the same map, screen,
speed, time limit and AI strength. A checkpoint or `random` plays through play-policy
(`run_play_policy`, into OUT/<A's name>/; with --no-record `--lockstep` games at once over the vector
layer, the same games), the scripted player through record-ai (`run_record_ai`),
both of which plan exactly these games (game 2k: seed S + k from BLU, game 2k + 1: from RED). A bare
preset is its map of seed 0 for both (record-ai alone would draw a map per seed; play-policy cannot).
Then `evaluation.paired.compare` pairs the two players' games seed by seed and side by side: each one's
record with Wilson intervals, the paired win-rate difference with Newcombe's interval and the exact
McNemar p-value, the paired score difference with an exact sign-flip p-value, the invalid games left out
and counted, and `complete: false` with the reasons when games are missing.

OUT/evaluate.json holds the settings (checked on resume) and the report; the report is also printed.
Re-running with the same OUT resumes: each player's run skips the games it has (its own folder checks
its own settings, a checkpoint by its bytes); `--pairs` may grow. Ctrl+C stops the player being run,
writes the report so far (incomplete) and exits 130.

Try: hoi4-arena evaluate random scripted runs/eval --pairs 2 --max-days 30
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.play.decoding import Decoding
from hoi4_arena.results import open_run, read_results

SETTINGS = "evaluate.json"
RANDOM, SCRIPTED = "random", "scripted"
RESULTS = "results.jsonl"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "player"


@dataclass
class EvaluateConfig(Decoding):
    """Settings of `hoi4-arena evaluate`."""

    a: str
    """Player A: a policy checkpoint, `random` or `scripted`."""
    b: str
    """Player B: a policy checkpoint, `random` or `scripted`."""
    out: Path
    """Folder for each player's games (OUT/<name>/) and evaluate.json; re-running with it resumes."""
    pairs: int
    """Seeds played, each from both sides by each player (2 x pairs games a player)."""
    arena: str = ARENA
    """Preset, preset:seed, preset:A-B or a map folder, or several comma-separated (a bare preset: its map
    of seed 0; a range: pair k's map seed is its game seed wrapped into A..B); both players, the same maps."""
    seed: int = 0
    """The first seed: pair k plays seed + k."""
    size: tuple[int, int] = (540, 960)
    """The game's screen, WIDTHxHEIGHT on the command line (16:9); the scripted player's calibration
    ships for 960x540 and 1920x1080."""
    speed: int = 5
    """Game speed 1..5 of the matches."""
    max_days: int = 365
    """Each game's time limit in days: a draw when reached."""
    ai_strength: float = 0.5
    """Strength of the game's AI, 0..1."""
    game: str = "sim"
    """sim: the headless simulator on a virtual clock; x11: its window under a private Xvfb, real time."""
    record: bool = True
    """Record sessions of checkpoints and random (the scripted player always records)."""
    codec: str = "x264"
    """Session video: x264 or ffv1."""
    threads: int = 1
    """Torch CPU threads of a checkpoint's policy (0: torch's default)."""
    name_a: str | None = None
    """A's name in the report and its folder (default: random, scripted, or the checkpoint's folder/stem)."""
    name_b: str | None = None
    """B's name in the report and its folder (default as for A)."""
    head_to_head: bool = False
    """A plays B itself (one simulated world, collect-pair's games) instead of both playing the game's AI:
    each seed from both sides, A's score with a paired interval."""
    league: Path | None = None
    """With --head-to-head: a folder of checkpoints (*.pt) that play A, B and each other the same way; an
    Elo table of them all."""
    ray: str | None = None
    """Play each game as a Ray task (auto, local or a head's HOST:PORT; alone: auto): each player's games
    against the AI as record-ai's and play-policy's --ray, or with --head-to-head each pair game as
    collect-pair's; the same games as without."""
    ray_games: int = 0
    """With --ray: at most this many games at a time (0: the cluster's CPUs)."""
    lockstep: int = 8
    """A checkpoint's or random's games that are not recorded (--no-record, --game sim, not --ray) play
    this many at once in lockstep, one batched policy call a decision (1: one after another); the same
    games."""
    workers: int = 0
    """With --lockstep: worker processes that run the games (0: every game in this process)."""
    progress: bool = True
    """Progress bars on stderr."""

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        for what, value, low in (
            ("--pairs", self.pairs, 1),
            ("--seed", self.seed, 0),
            ("--lockstep", self.lockstep, 1),
            ("--workers", self.workers, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UserError(f"{what} must be a whole number >= {low}, not {value!r}")
        for what, player in (("A", self.a), ("B", self.b)):
            if player not in (RANDOM, SCRIPTED) and not Path(player).is_file():
                raise UserError(
                    f"player {what} {player!r} is neither a checkpoint file nor the word random or scripted"
                )
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")
        if self.league is not None and not self.head_to_head:
            raise UserError("--league plays checkpoints against each other: give --head-to-head too")
        names = [self.name_a or self._default_name(self.a), self.name_b or self._default_name(self.b)]
        if _slug(names[0]) == _slug(names[1]):
            if self.name_a or self.name_b:
                raise UserError(f"A and B need names of their own folders; both are {names[0]!r}")
            names = [f"{names[0]}-a", f"{names[1]}-b"]  # e.g. random against random: a check of the test
        self.names = (names[0], names[1])
        self.configs = (self._player_config(0), self._player_config(1))  # bad settings fail before any game

    @staticmethod
    def _default_name(player: str) -> str:
        if player in (RANDOM, SCRIPTED):
            return player
        from hoi4_arena.play.policy_player import checkpoint_name

        return checkpoint_name(Path(player))

    @property
    def arena_spec(self) -> str:
        from hoi4_arena.maps.presets import PRESETS  # here: the maps package imports numpy, the CLI must not

        return f"{self.arena}:0" if self.arena in PRESETS else self.arena

    def folder(self, which: int) -> Path:
        return self.out / _slug(self.names[which])

    def _player_config(self, which: int) -> Any:
        player = (self.a, self.b)[which]
        common = {
            "out": self.folder(which),
            "games": 2 * self.pairs,
            "arena": self.arena_spec,
            "seed": self.seed,
            "size": self.size,
            "max_days": self.max_days,
            "ai_strength": self.ai_strength,
            "game": self.game,
            "codec": self.codec,
            "ray": self.ray,
            "ray_games": self.ray_games,
            "progress": self.progress,
        }
        if player == SCRIPTED:
            from hoi4_arena.play.record_ai import RecordAIConfig

            return RecordAIConfig(player="scripted", speeds=(self.speed,), **common)
        from hoi4_arena.play.play_policy import PlayConfig

        decoding = {}
        if player != RANDOM:
            decoding = {
                "point": self.point,
                "deterministic": self.deterministic,
                "temperature": self.temperature,
                "reset_memory": self.reset_memory,
                "follow_through": self.follow_through,
                "max_hold": self.max_hold,
                "threads": self.threads,
            }
        return PlayConfig(
            checkpoint=player,
            side="alternate",
            speed=self.speed,
            record=self.record,
            name=self.names[which],
            lockstep=self.lockstep,
            workers=self.workers,
            **decoding,
            **common,
        )

    def settings(self) -> dict[str, Any]:
        """What decides the games (OUT/evaluate.json; a resumed run must match). --pairs may grow; the
        checkpoints are checked by their bytes in their own folders."""
        return {
            "a": self.names[0],
            "b": self.names[1],
            "kind_a": self._kind(self.a),
            "kind_b": self._kind(self.b),
            "arena": self.arena_spec,
            "seed": self.seed,
            "size": [self.size[1], self.size[0]],
            "speed": self.speed,
            "max_days": self.max_days,
            "ai_strength": self.ai_strength,
            "game": self.game,
            "decoding": {
                "point": self.point,
                "deterministic": self.deterministic,
                "temperature": self.temperature,
                "reset_memory": self.reset_memory,
                "follow_through": self.follow_through,
                # added later: runs before it (and without it) keep their settings
                **({"max_hold": self.max_hold} if self.max_hold else {}),
            },
        }

    @staticmethod
    def _kind(player: str) -> str:
        return player if player in (RANDOM, SCRIPTED) else "checkpoint"


def _run_player(config: Any) -> dict[str, Any]:
    from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
    from hoi4_arena.play.record_ai import run_record_ai

    return run_play_policy(config) if isinstance(config, PlayConfig) else run_record_ai(config)


def run_evaluate(config: EvaluateConfig) -> dict[str, Any]:
    """Play both players' games (resuming OUT) and return the paired report the command prints."""
    from hoi4_arena.evaluation.paired import compare, format_report, planned_keys
    from hoi4_arena.terminal import stderr

    if config.head_to_head:
        from hoi4_arena.play.pair import run_head_to_head

        return run_head_to_head(config)
    settings = config.settings()
    open_run(config.out, SETTINGS, settings, "evaluate")
    interrupted = False
    played = {}
    for which, player_config in enumerate(config.configs):
        name = config.names[which]
        if config.progress:
            stderr.print(f"evaluate: {name} plays {2 * config.pairs} games into {player_config.out}")
        summary = _run_player(player_config)
        played[name] = {"this_run": summary.get("this_run"), "skipped": summary.get("skipped")}
        if summary.get("interrupted"):
            interrupted = True
            break
    rows = []
    for which in range(2):
        path = config.folder(which) / RESULTS
        rows.append(read_results(path) if path.exists() else [])
    report = compare(rows[0], rows[1], planned_keys(config.pairs, config.seed), config.names)
    if interrupted:
        report["incomplete"].append("interrupted")
        report["complete"] = False
    result = {
        **report,
        "pairs": config.pairs,
        "interrupted": interrupted,
        "out": str(config.out),
        "folders": {"a": str(config.folder(0)), "b": str(config.folder(1))},
        "checkpoints": {"a": config.a, "b": config.b},
        "this_run": played,
        "settings": settings,
        "command": "evaluate",
    }
    (config.out / SETTINGS).write_text(json.dumps(_strict(result), allow_nan=False, indent=1) + "\n")
    if config.progress:
        stderr.print(format_report(report), end="", highlight=False, soft_wrap=True)
    return result


def _strict(value: Any) -> Any:
    """NaN (a rate of no games) as null: evaluate.json is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value
