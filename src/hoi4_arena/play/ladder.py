"""`hoi4-arena make-ladder OUT`: rung saves of the simulator, made by the scripted player, for a curriculum.

A rung is a simulator save (`sim/save.py`) at a point of a side's setup, with what remains to do:

    S0  game start: the new game, paused, the news open, no war yet (the harness's start remains)
    S1  the match runs: war declared by the console's coin, speed set, unpaused; nothing of the setup done
    S2  the army is formed (its front, the offensive and its execution remain)
    S3  the army is formed and holds the front: only the offensive remains (draw it, execute it)

Per map and seed and side, one game: a `SimWorker` on a new game (S0 is saved before anything happens),
the match harness's start as every game has it (`screen.game.Game.start`: S1), then the scripted
player decision by decision; the first decision boundary at which the world shows the side's next
setup step (an army; an army whose front is the enemy), with no input held or queued, is saved as that
rung. The game stops once S3 is saved (or after `max_decisions`: the rungs not reached are listed as
missing, with the player's notes).

Every rung is checked as it is written: the save is restored and, for S1..S3, left to run without
input until the side's next daily `army` line (or the next day's lines); the restored game's ARENA log
must then say what the rung claims: no `declare` line for S0, one for the others, and the setup
milestones (`gamelog.setup_milestones`) reached exactly the rung's. A rung that does not hold is an
error, not a file. `done` and `remaining` in the listing are read from that log.

OUT gets one folder per game (`PRESET-mSEED-gSEED-SIDE/S0.simsave` ..., each with an `S0.json`
listing beside it) and `ladder.json`, every rung's listing and the settings.

Try: hoi4-arena make-ladder runs/ladder --arena river --seeds 2
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import SETUP_STEPS, parse_line, setup_milestones
from hoi4_arena.maps.model import TAGS, other_tag

RUNGS = ("S0", "S1", "S2", "S3")
RUNG_DONE: dict[str, tuple[str, ...]] = {
    "S0": (),
    "S1": ("declare",),
    "S2": ("declare", "army"),
    "S3": ("declare", "army", "front"),
}
"""What each rung has done; the rest of STEPS remains."""
STEPS = ("declare", *SETUP_STEPS)
"""Everything a game's start asks of the harness (declare) and of the player (the setup steps)."""
RUNG_INFO = {
    "S0": "game start: paused, the news open, no war yet",
    "S1": "the match runs (war declared, speed set); the setup is not begun",
    "S2": "the army is formed; the front and the offensive remain",
    "S3": "the army is formed and holds the front; only the offensive remains",
}


@dataclass(frozen=True)
class LadderConfig:
    """Settings of `hoi4-arena make-ladder`."""

    out: Path
    """Folder for the rung saves and ladder.json."""
    arena: str = "all"
    """Presets (comma-separated) or all; each plays its map of every seed."""
    seeds: int = 2
    """Seeds per preset: 0 .. N-1 (the map's seed and the game's seed)."""
    first_seed: int = 0
    """The first seed."""
    sides: str = "BLU,RED"
    """The sides the scripted player plays (comma-separated), one game each."""
    size: tuple[int, int] = (540, 960)
    """The game's screen, WIDTHxHEIGHT on the command line; the scripted player's calibration ships for 960x540 and 1920x1080."""
    speed: int = 5
    """Game speed of the match."""
    ai_strength: float = 0.5
    """Strength of the game's AI on the other side, 0..1."""
    max_days: int = 365
    """The games' time limit in game days (saved with them)."""
    max_decisions: int = 3000
    """Give a game up after this many decisions without reaching S3."""

    def __post_init__(self) -> None:
        if self.seeds < 1:
            raise UserError(f"--seeds must be at least 1, not {self.seeds}")
        if self.first_seed < 0:
            raise UserError(f"--first-seed must be >= 0, not {self.first_seed}")
        bad = [side for side in self.side_list if side not in TAGS]
        if bad or not self.side_list:
            raise UserError(f"--sides is BLU, RED or BLU,RED, not {self.sides!r}")
        if not 1 <= self.speed <= 5:
            raise UserError(f"--speed must be 1..5, not {self.speed}")
        if not 0.0 <= self.ai_strength <= 1.0:
            raise UserError(f"--ai-strength must be within 0..1, not {self.ai_strength}")
        if self.max_days < 1 or self.max_decisions < 1:
            raise UserError("--max-days and --max-decisions must be at least 1")

    @property
    def side_list(self) -> tuple[str, ...]:
        return tuple(part.strip() for part in self.sides.split(",") if part.strip())

    @property
    def presets(self) -> list[str]:
        from hoi4_arena.maps.presets import PRESETS

        names = list(PRESETS) if self.arena == "all" else [p.strip() for p in self.arena.split(",")]
        unknown = [name for name in names if name not in PRESETS]
        if unknown or not names:
            raise UserError(f"--arena takes presets ({', '.join(PRESETS)}) or all, not {self.arena!r}")
        return names


# --- what a log says ---------------------------------------------------------------------------------


def log_steps(lines: list[str], side: str) -> dict[str, int | None]:
    """The day each of STEPS was first seen in an ARENA log for `side` (None: not seen)."""
    declared = next(
        (
            parsed["h"] // 24
            for parsed in map(parse_line, lines)
            if parsed is not None and parsed.kind == "declare"
        ),
        None,
    )
    setup = setup_milestones(lines, side)
    return {"declare": declared, **{step: setup[step] for step in SETUP_STEPS}}


def check_rung(path: str | Path, rung: str, side: str) -> dict[str, Any]:
    """Restore the rung save at `path`, let it run without input to the side's next daily lines (S1..S3),
    and read what its log says is done; UserError when that is not what `rung` claims."""
    from hoi4_arena.sim.save import load_game

    with load_game(path) as game:
        if rung != "S0":
            # The day's army lines are written at the start of the next day: run to just past it.
            target = (game.world.hour // 24 + 1) * 24 + 1
            for _ in range(100_000):
                if game.world.hour >= target or game.world.over or game.clock.paused:
                    break
                game.advance(200)
            if game.world.hour < target and not game.world.over:
                raise UserError(f"{path}: the restored game did not run to its next day (paused?)")
        steps = log_steps(game.world.log_lines, side)
    done = [step for step in STEPS if steps[step] is not None]
    if tuple(done) != RUNG_DONE[rung]:
        raise UserError(
            f"{path}: rung {rung} claims {', '.join(RUNG_DONE[rung]) or 'nothing'} done, but its restored "
            f"game's log says {', '.join(done) or 'nothing'}"
        )
    return {"done": done, "remaining": [step for step in STEPS if step not in done], "log_days": steps}


# --- making the rungs ----------------------------------------------------------------------------------


def _quiet(worker: Any) -> bool:
    """No input held or queued, in the worker or the game: a state a new player can start from."""
    ui = worker.game.ui
    return not (
        worker.status()["pending_events"] or worker.guard.held_keys or worker.guard.held_buttons
    ) and not (ui.presses or ui.keys)


def _reached(world: Any, side: str) -> str:
    """The highest rung the world shows for `side` (S1 at war, S2 an army, S3 an army on the front)."""
    armies = world.armies_of(side)
    if any(army.front == other_tag(side) for army in armies):
        return "S3"
    return "S2" if armies else "S1"


def make_game_rungs(config: LadderConfig, preset: str, seed: int, side: str) -> list[dict[str, Any]]:
    """One game's rungs (saved under OUT, checked); the listing of each, missing ones included."""
    from hoi4_arena.players.scripted import ScriptedPlayer
    from hoi4_arena.players.templates import sim_rules
    from hoi4_arena.screen.game import GameSettings, play_game
    from hoi4_arena.screen.sim_worker import SimWorker

    spec = f"{preset}:{seed}"
    folder = config.out / f"{preset}-m{seed}-g{seed}-{side}"
    folder.mkdir(parents=True, exist_ok=True)
    rules = sim_rules(config.size)  # refused early when the size has no calibration
    rows: list[dict[str, Any]] = []

    def save(worker: Any, rung: str, decisions: int) -> None:
        path = folder / f"{rung}.simsave"
        header = worker.save(path, rung=rung, side=side)
        checked = check_rung(path, rung, side)
        row = {
            "rung": rung,
            "about": RUNG_INFO[rung],
            "preset": preset,
            "map_seed": seed,
            "game_seed": seed,
            "side": side,
            "day": header["hour"] // 24,
            "date": header["date"],
            "decisions": decisions,
            "done": checked["done"],
            "remaining": checked["remaining"],
            "log_days": checked["log_days"],
            "save": str(path.relative_to(config.out)),
            "sha256": header["sha256"],
        }
        (folder / f"{rung}.json").write_text(json.dumps(row, indent=2) + "\n", encoding="utf-8")
        rows.append(row)

    with SimWorker(
        spec,
        seed,
        size=config.size,
        layout="cpu",
        player=side,
        ai={other_tag(side): config.ai_strength},
        max_days=config.max_days,
        player_kind="scripted",
    ) as worker:
        rgba, hotspot = worker.pointer_image()
        player = ScriptedPlayer(rules, seed, cursor=(rgba.shape[1], rgba.shape[0], hotspot))
        save(worker, "S0", 0)
        have = 0

        def started() -> None:
            nonlocal have
            save(worker, "S1", 0)
            have = 1

        def saved_last(decisions: int) -> bool:
            nonlocal have
            reached = RUNGS.index(_reached(worker.game.world, side))
            if reached > have and _quiet(worker):
                # One rung per boundary: a later step seen at once skips the rungs in between.
                have = reached
                save(worker, RUNGS[reached], decisions)
            return have >= len(RUNGS) - 1 or decisions >= config.max_decisions

        settings = GameSettings(side=side, speed=config.speed, spec=spec)
        record = play_game(worker, player, settings, on_start=started, until=saved_last)
        if not record.valid:
            raise UserError(f"make-ladder: the game {spec} {side} failed: {record.reason}")
    for rung in RUNGS:
        if not any(row["rung"] == rung for row in rows):
            rows.append(
                {
                    "rung": rung,
                    "about": RUNG_INFO[rung],
                    "preset": preset,
                    "map_seed": seed,
                    "game_seed": seed,
                    "side": side,
                    "missing": True,
                    "why": "the scripted player did not reach it in a quiet moment "
                    f"within {config.max_decisions} decisions; its notes: {player.notes[-3:]}",
                }
            )
    return sorted(rows, key=lambda row: row["rung"])


def make_ladder(config: LadderConfig, progress: Any = None) -> dict[str, Any]:
    """Every preset, seed and side's rungs under `config.out`, and ladder.json listing them."""
    presets = config.presets
    config.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for preset in presets:
        for seed in range(config.first_seed, config.first_seed + config.seeds):
            for side in config.side_list:
                rows += make_game_rungs(config, preset, seed, side)
                if progress is not None:
                    progress(preset, seed, side)
    settings = json.loads(json.dumps(asdict(config), default=str))  # as ladder.json will hold them
    ladder = {
        "rungs": rows,
        "settings": settings,
        "made": sum(1 for row in rows if not row.get("missing")),
        "missing": sum(1 for row in rows if row.get("missing")),
        "about": RUNG_INFO,
    }
    (config.out / "ladder.json").write_text(json.dumps(ladder, indent=2) + "\n", encoding="utf-8")
    return ladder
