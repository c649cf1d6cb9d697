"""`hoi4-arena benchmark PLAYER... OUT`: the players' games on the benchmark's suites, through the one runner.

The suites (`maps/held_out.py`): `presets`, the six training presets in turn at map seeds 1000-1039, and
`river`, the river preset at map seeds 1000-1039; pair k is game seed 3000 + k on the k-th map, from BLU
then from RED: 80 games a suite, or the first `--pairs N` pairs (2N games) for a quick version.

A player is a policy checkpoint (played by play-policy with the quickstart's decoding unless the options
say otherwise), `scripted` (the scripted player, by record-ai), `search` (the search player, by
record-ai --player search with its default search: docs/search.md), `random` (the seeded uniform baseline,
by play-policy) or `ai` (the game's AI on both sides, by record-ai --player ai). `scripted:HAND` and
`search:HAND` play with another hand than the person-like default (`HANDS`: `quick`, no pause before a
move or a press; `demo`, the quickstart's demonstrations' hand), each its own player (folder
`scripted-quick`, ...): at speed 5 a second is a game day, so the hand's pace is part of the player's
strength (docs/search.md, "The pace"). Every game is the
runner's (`play/runner.py`): 365 days, 960x540, speed 5, the game's AI at 0.5, not recorded unless
`--record`; a checkpoint's and random's games play `--lockstep` at once over the vector layer
(`play/lockstep.py`: the same games, one batched policy call a decision). Each player's games go to OUT/SUITE/PLAYER/ (results.jsonl, the command's settings file,
player.json); a checkpoint's folder is named by its file's sha256 prefix and its decoding, so two
decodings of one checkpoint are two players and the same file by another path is the same player.

Resuming: a player whose folder holds every planned game is not played again (nor its checkpoint
loaded); a finished game is never played again (the runner's resume); `--pairs` may grow. The tables
(`evaluation/benchmark.py`) count every player found under OUT, so players added by later runs join the
leaderboard.

Try: hoi4-arena benchmark scripted random runs/bench --pairs 1 --max-days 20
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.maps.held_out import SUITE_PAIRS, SUITES, suite_games, suite_maps
from hoi4_arena.play.decoding import MODES
from hoi4_arena.play.evaluate import RANDOM, SCRIPTED
from hoi4_arena.play.runner import RESULTS
from hoi4_arena.results import open_run, read_results

AI = "ai"
SEARCH = "search"
NAMED = (SCRIPTED, RANDOM, AI, SEARCH)
HANDS: dict[str, dict[str, tuple[float, float]]] = {
    "quick": {"think_s": (0.0, 0.0), "press_delay_s": (0.0, 0.0)},
    "demo": {"think_s": (0.05, 0.15), "press_delay_s": (0.05, 0.1)},
}
"""The hands a scripted or search player may take (`scripted:quick`): record-ai's --think and
--press-delay, seconds. `demo` is the quickstart's DEMO_HAND (tests/evaluation/test_benchmark.py holds
the two equal), the hand every learned policy here copied."""
SETTINGS = "benchmark.json"
PLAYER_FILE = "player.json"
SIZE = (540, 960)
SPEED = 5
AI_STRENGTH = 0.5


@dataclass
class BenchmarkConfig:
    """Settings of `hoi4-arena benchmark`.

    A checkpoint's default decoding is the quickstart's PLAY_SETTINGS (each move on its likeliest point,
    the kinds at temperature 0.7, an action once begun completed, the memory renewed every 8 decisions,
    its training window); tests/evaluation/test_benchmark.py holds the two equal. The defaults are
    literals: the command line reads them from this source."""

    players: list[str]
    """Checkpoint files, or the words scripted, search, random, ai; scripted:HAND or search:HAND with
    HAND quick (no pauses) or demo (the quickstart's demonstrations' hand)."""
    out: Path
    """Folder of every player's games (OUT/SUITE/PLAYER/) and the leaderboard; re-running with it resumes."""
    suite: str = "all"
    """presets, river, or all (both)."""
    pairs: int = 40
    """Play the first N pairs of each suite (2N games a player), 1..40."""
    max_days: int = 365
    """Each game's time limit in days (the benchmark is 365; fewer only for a smoke test)."""
    mode: str = "point"
    """A checkpoint's decoding: point (each move on its likeliest spot, kinds sampled), sample, or
    deterministic."""
    temperature: float = 0.7
    """A checkpoint's sampling temperature of the kinds."""
    reset_memory: int = 8
    """A checkpoint starts its memory afresh every N decisions (0: never)."""
    follow_through: bool = True
    """A checkpoint, in point mode: an action once begun takes its likeliest kinds."""
    max_hold: int = 0
    """A checkpoint releases a mouse button or key held down through N decisions (0: never; a new
    player, its folder named ...-hN)."""
    record: bool = False
    """Record every game as a session in its player's folder."""
    threads: int = 1
    """Torch CPU threads of a checkpoint's policy."""
    ray: str | None = None
    """Play each game as a Ray task (auto, local or a head's HOST:PORT), as play-policy's --ray."""
    ray_games: int = 0
    """With --ray: at most this many games at a time (0: the cluster's CPUs)."""
    lockstep: int = 8
    """A checkpoint's or random's games, when not recorded, play this many at once in lockstep, one
    batched policy call a decision (1: one after another); the same games."""
    workers: int = 0
    """With --lockstep: worker processes that run the games (0: every game in this process)."""
    progress: bool = True
    """Progress bars on stderr."""

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if not self.players:
            raise UserError("give one or more players: checkpoint files, or scripted, search, random, ai")
        if self.suite not in (*SUITES, "all"):
            raise UserError(f"--suite must be {', '.join(SUITES)} or all, not {self.suite!r}")
        for what, value, low, high in (
            ("--pairs", self.pairs, 1, SUITE_PAIRS),
            ("--max-days", self.max_days, 1, 10**6),
            ("--reset-memory", self.reset_memory, 0, 10**9),
            ("--max-hold", self.max_hold, 0, 10**9),
            ("--threads", self.threads, 0, 1024),
            ("--ray-games", self.ray_games, 0, 10**6),
            ("--lockstep", self.lockstep, 1, 10**6),
            ("--workers", self.workers, 0, 1024),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise UserError(f"{what} must be a whole number in {low}..{high}, not {value!r}")
        if self.mode not in MODES:
            raise UserError(f"--mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if not 0 <= self.temperature <= 100:
            raise UserError(f"--temperature must lie in 0..100, not {self.temperature!r}")
        if self.follow_through and self.mode != "point":
            raise UserError(
                "--follow-through completes the actions of --mode point: give --no-follow-through"
            )
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")
        self.specs = [self._spec(player) for player in self.players]
        folders = [spec.folder for spec in self.specs]
        twice = sorted({name for name in folders if folders.count(name) > 1})
        if twice:
            raise UserError(f"player {twice[0]} is given twice")

    @property
    def suites(self) -> tuple[str, ...]:
        return SUITES if self.suite == "all" else (self.suite,)

    def settings(self) -> dict[str, Any]:
        """What every player's games share (OUT/benchmark.json; a resumed run must match)."""
        return {
            "max_days": self.max_days,
            "size": f"{SIZE[1]}x{SIZE[0]}",
            "speed": SPEED,
            "ai_strength": AI_STRENGTH,
        }

    def _spec(self, player: str) -> PlayerSpec:
        if player in NAMED:
            return PlayerSpec(player, player, None, {})
        kind, colon, hand = player.partition(":")
        if colon and kind in (SCRIPTED, SEARCH) and not Path(player).is_file():
            if hand not in HANDS:
                raise UserError(
                    f"player {player!r}: the hand must be one of {', '.join(HANDS)}, not {hand!r}"
                )
            timing = {key: list(value) for key, value in HANDS[hand].items()}
            return PlayerSpec(f"{kind}-{hand}", kind, None, {"hand": hand, **timing})
        path = Path(player)
        if not path.is_file():
            raise UserError(
                f"player {player!r} is neither a checkpoint file nor scripted, search, random or ai"
                f" (scripted:HAND, search:HAND with HAND one of {', '.join(HANDS)})"
            )
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        decoding = {
            "mode": self.mode,
            "temperature": None if self.mode == "deterministic" else self.temperature,
            "reset_memory": self.reset_memory,
            "follow_through": self.follow_through,
        }
        parts = [digest[:12], self.mode]
        if decoding["temperature"] is not None:
            parts.append(f"t{self.temperature:g}")
        parts.append(f"m{self.reset_memory}")
        if self.follow_through:
            parts.append("ft")
        if self.max_hold:  # a decoding added later: players before it keep their names
            decoding["max_hold"] = self.max_hold
            parts.append(f"h{self.max_hold}")
        return PlayerSpec("-".join(parts), "checkpoint", str(path), {"sha256": digest, **decoding})


@dataclass(frozen=True)
class PlayerSpec:
    """One benchmark player: its folder's name, its kind, and a checkpoint's file and decoding (a
    scripted or search player's hand, where not the default)."""

    folder: str
    kind: str
    """checkpoint, scripted, search, random or ai."""
    checkpoint: str | None
    decoding: dict[str, Any]

    def identity(self) -> dict[str, Any]:
        return {"player": self.folder, "kind": self.kind, "checkpoint": self.checkpoint, **self.decoding}


def _player_config(config: BenchmarkConfig, spec: PlayerSpec, suite: str, folder: Path) -> Any:
    """play-policy's or record-ai's config of one player's games on one suite: all 40 maps in the
    settings (so --pairs may grow on resume), the first 2 x pairs games played."""
    common = {
        "out": folder,
        "games": 2 * config.pairs,
        "arena": ",".join(suite_maps(suite)),
        "seed": suite_games(suite, 1)[0].seed,
        "size": SIZE,
        "max_days": config.max_days,
        "ai_strength": AI_STRENGTH,
        "ray": config.ray,
        "ray_games": config.ray_games,
        "progress": config.progress,
    }
    if spec.kind in (SCRIPTED, AI, SEARCH):
        from hoi4_arena.play.record_ai import RecordAIConfig

        hand = HANDS[spec.decoding["hand"]] if "hand" in spec.decoding else {}
        return RecordAIConfig(player=spec.kind, speeds=(SPEED,), record=config.record, **hand, **common)
    from hoi4_arena.play.play_policy import PlayConfig

    decoding: dict[str, Any] = {}
    if spec.kind == "checkpoint":
        decoding = {
            "point": spec.decoding["mode"] == "point",
            "deterministic": spec.decoding["mode"] == "deterministic",
            "temperature": config.temperature,
            "reset_memory": config.reset_memory,
            "follow_through": config.follow_through,
            "max_hold": config.max_hold,
            "threads": config.threads,
        }
    return PlayConfig(
        checkpoint=spec.checkpoint or RANDOM,
        side="alternate",
        speed=SPEED,
        record=config.record,
        name=spec.folder,
        lockstep=config.lockstep,
        workers=config.workers,
        **decoding,
        **common,
    )


def _played(folder: Path, games: int) -> int:
    """How many of the first `games` game indices the folder's results hold."""
    path = folder / RESULTS
    if not path.is_file():
        return 0
    return len({r.extra.get("game") for r in read_results(path)} & set(range(games)))


def play_benchmark(config: BenchmarkConfig) -> dict[str, Any]:
    """Play every player's missing games on each suite (resuming OUT); what each run did, and whether
    one was interrupted (Ctrl+C)."""
    from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
    from hoi4_arena.play.record_ai import run_record_ai
    from hoi4_arena.terminal import stderr

    open_run(config.out, SETTINGS, config.settings(), "benchmark")
    runs: dict[str, dict[str, Any]] = {}
    for suite in config.suites:
        for spec in config.specs:
            folder = config.out / suite / spec.folder
            key = f"{suite}/{spec.folder}"
            if _played(folder, 2 * config.pairs) == 2 * config.pairs:
                if not (folder / PLAYER_FILE).is_file():
                    (folder / PLAYER_FILE).write_text(json.dumps(spec.identity(), indent=1) + "\n")
                runs[key] = {"played": 0, "already": 2 * config.pairs}
                continue
            player_config = _player_config(config, spec, suite, folder)
            if config.progress:
                stderr.print(
                    f"benchmark: {spec.folder} plays {2 * config.pairs} games of {suite} into {folder}"
                )
            run = run_play_policy if isinstance(player_config, PlayConfig) else run_record_ai
            summary = run(player_config)
            # After the run: its own resume refuses a folder that holds files but not its settings file.
            (folder / PLAYER_FILE).write_text(json.dumps(spec.identity(), indent=1) + "\n")
            runs[key] = {"played": summary["this_run"]["games"], "already": summary["skipped"]}
            if summary.get("interrupted"):
                return {"runs": runs, "interrupted": True}
    return {"runs": runs, "interrupted": False}
