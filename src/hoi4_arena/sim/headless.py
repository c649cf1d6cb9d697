"""The headless game: the simulator's world behind its HOI4-like screen, on a virtual clock.

`SimGame` is the handle the screen layer's sim worker and the Gymnasium env wrap, and the window
(`window.py`) drives the very same object with the wall clock. A caller feeds input events, advances
virtual time, and reads frames and the ARENA log:

    game = SimGame("river", seed=3, size=(540, 960), ai={"RED": 0.5})
    game.feed([SimEvent("key_down", key="space"), SimEvent("key_up", key="space")])   # unpause
    game.advance(200)                 # 200 ms of virtual time: speed 3 -> 0.6 game hours
    frame = game.frame()              # (540, 960, 3) uint8, the pointer drawn
    lines, offset = game.log(0)       # ARENA lines so far

Nothing here reads the wall clock or an unseeded generator: the same seed and the same events give the
same frames, byte for byte. No display is needed (pygame draws on plain surfaces; SDL's video
subsystem is never started headless).

Try: python -m hoi4_arena.sim.headless river 3
"""

from __future__ import annotations

import functools
import sys
from bisect import bisect_left
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import GameLogWriter
from hoi4_arena.maps import ArenaMap, load_arena
from hoi4_arena.maps.model import TAGS
from hoi4_arena.scratch import scratch_folder
from hoi4_arena.sim import popups
from hoi4_arena.sim.ai import AIConfig, GameAI
from hoi4_arena.sim.clock import SPEEDS, GameClock
from hoi4_arena.sim.console import Command
from hoi4_arena.sim.cursor import cursor_sprite, draw_pointer
from hoi4_arena.sim.input import SimEvent
from hoi4_arena.sim.interface import Interface
from hoi4_arena.sim.render import Renderer, date_label
from hoi4_arena.sim.render_map import geometry
from hoi4_arena.sim.world import World

MIN_SIZE = (180, 320)


@functools.lru_cache(maxsize=16)
def _preset(spec: str) -> ArenaMap:
    return load_arena(spec)


def arena_of(arena: str | ArenaMap) -> ArenaMap:
    """A map object from a spec (preset, preset:seed, folder) or the map itself; presets are generated
    once per process."""
    if isinstance(arena, ArenaMap):
        return arena
    spec = str(arena)
    return load_arena(spec) if Path(spec).is_dir() else _preset(spec)


class SimGame:
    """One game on `arena`, played as `player` through the screen; `ai` maps the sides the game's AI
    plays to its strength (both sides for AI vs AI). See the module docstring."""

    def __init__(
        self,
        arena: str | ArenaMap = ARENA,
        seed: int = 0,
        size: tuple[int, int] = (540, 960),
        player: str = "BLU",
        ai: dict[str, float] | None = None,
        declarer: str | None = None,
        news: bool = True,
        events: bool = True,
        userdir: str | Path | None = None,
        start_paused: bool = True,
        speed: int = 3,
        max_days: int | None = None,
        player_kind: str | None = None,
        cache: bool = True,
    ) -> None:
        ai = {"RED": 0.5} if ai is None else dict(ai)
        self._check(seed, size, player, ai, declarer, speed, player_kind)
        self.arena = arena_of(arena)
        self.arena_spec = str(arena) if isinstance(arena, str | Path) else None
        """The spec the map was made from (a save names a preset's map by it instead of copying it)."""
        self.seed = int(seed)
        self.size = (int(size[0]), int(size[1]))
        self._tmp = scratch_folder("sim") if userdir is None else None
        self.userdir = Path(self._tmp.name if self._tmp is not None else userdir).expanduser()
        self.log_path = self.userdir / "logs" / "game.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text("")  # a new game starts a new log, as HOI4 does
        self._writer = GameLogWriter(self.log_path)
        self.world = World(self.arena, self.seed, max_days=max_days, log=self._writer)
        self.ais = {tag: GameAI(tag, AIConfig(strength=float(s))) for tag, s in sorted(ai.items())}
        for tag in self.ais:
            self.world.note_player(tag, "ai")
        if player_kind is not None:
            self.world.note_player(player, player_kind)
        self.clock = GameClock(speed=speed, paused=start_paused)
        self.geo = geometry(self.arena)
        self.ui = Interface(self.world, self.geo, self.size, player, self.clock, self.ais, self.seed)
        self.renderer = Renderer(self.geo, self.size, cache=cache)
        self.schedule = popups.EventSchedule(self.seed) if events else None
        self._ended = False
        self._log_ends: list[int] = []
        if declarer is not None:
            self.ui.command(Command("coin") if declarer == "coin" else Command("declare", declarer))
        if news:
            self.ui.popups.append(popups.news(player, self.ui.enemy))

    @staticmethod
    def _check(seed, size, player, ai, declarer, speed, player_kind) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise UserError(f"seed must be a whole number >= 0, not {seed!r}")
        try:
            h, w = (int(v) for v in size)
        except (TypeError, ValueError):
            raise UserError(f"size must be (height, width), not {size!r}") from None
        if h < MIN_SIZE[0] or w < MIN_SIZE[1] or h > 4320 or w > 7680:
            raise UserError(f"screen size {w}x{h} is outside {MIN_SIZE[1]}x{MIN_SIZE[0]}..7680x4320")
        if abs(w * 9 - h * 16) > 16:
            raise UserError(f"screen size {w}x{h} is not 16:9 (e.g. 1920x1080, 1280x720, 960x540)")
        if player not in TAGS:
            raise UserError(f"player must be one of {', '.join(TAGS)}, not {player!r}")
        for tag, strength in ai.items():
            if tag not in TAGS:
                raise UserError(f"ai sides must be among {', '.join(TAGS)}, not {tag!r}")
            if not isinstance(strength, int | float) or not 0.0 <= strength <= 1.0:
                raise UserError(f"AI strength for {tag} must be within 0..1, not {strength!r}")
        if declarer not in (None, *TAGS, "coin"):
            raise UserError(f"declarer must be BLU, RED, coin or None, not {declarer!r}")
        if speed not in SPEEDS:
            raise UserError(f"speed must be 1..5, not {speed!r}")
        if player_kind not in (None, "human", "scripted", "policy"):
            raise UserError(f"player_kind must be human, scripted or policy, not {player_kind!r}")

    # --- input and time ---------------------------------------------------------------------------

    def feed(self, events: list[SimEvent] | tuple[SimEvent, ...]) -> int:
        """Apply input at the current virtual time; returns how many events were used (bad ones are
        ignored)."""
        used = sum(1 for event in events if self.ui.handle(event))
        self.ui.prune()
        self._check_end()
        return used

    def advance(self, ms: float) -> int:
        """Let `ms` milliseconds of virtual time pass; returns the game hours the world stepped."""
        before = self.clock.ui_ns
        hours = self.clock.advance(ms)
        self.ui.tick(self.clock.ui_ns - before)
        stepped = 0
        world = self.world
        for _ in range(hours):
            if world.over:
                break
            if world.hour % 24 == 0:
                # As run_game: the AIs decide at the start of each day, alternating who goes first.
                order = TAGS if world.day % 2 == 0 else TAGS[::-1]
                for tag in order:
                    if tag in self.ais:
                        self.ais[tag].update(world)
            world.step(1)
            stepped += 1
            if self.schedule is not None and not world.over:
                event = self.schedule.due(world.hour, self.ui.player)
                if event is not None:
                    self.ui.popups.append(event)
        if stepped:
            self.ui.prune()
        self._check_end()
        return stepped

    def _check_end(self) -> None:
        if self.world.over and not self._ended:
            self._ended = True
            date = date_label(self.world.date_text())
            self.ui.popups.append(popups.victory(self.ui.player, self.world.winner, date))

    # --- what the caller reads --------------------------------------------------------------------

    def scene(self):
        """The screen as a pygame Surface, without the pointer (what the window shows)."""
        return self.renderer.scene(self.ui)

    def frame(self) -> np.ndarray:
        """(H, W, 3) uint8 RGB of the screen with the pointer sprite drawn at the pointer."""
        frame = self.renderer.rgb(self.ui).copy()
        draw_pointer(frame, self.ui.pointer)
        return frame

    @property
    def pointer(self) -> tuple[int, int]:
        return self.ui.pointer

    @property
    def cursor(self) -> tuple[np.ndarray, tuple[int, int]]:
        """The pointer sprite (h, w, 4) uint8 RGBA with binary alpha, and its hotspot (x, y)."""
        return cursor_sprite()

    @property
    def focus(self) -> bool:
        return True

    @property
    def over(self) -> bool:
        return self.world.over

    @property
    def winner(self) -> str | None:
        return self.world.winner

    @property
    def now_ns(self) -> int:
        """Virtual time since the game started."""
        return self.clock.ui_ns

    def log(self, offset: int = 0) -> tuple[list[str], int]:
        """ARENA lines written since byte `offset` of game.log, and the offset after them (the same
        offsets as reading the file, which the window's X11 worker does)."""
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"log offset must be a whole number >= 0, not {offset!r}")
        lines = self.world.log_lines
        ends = self._log_ends
        for line in lines[len(ends) :]:
            ends.append((ends[-1] if ends else 0) + len(line.encode("utf-8")) + 1)
        if offset > (ends[-1] if ends else 0):
            raise ValueError(f"log offset {offset} is past the end of the log")
        start = 0
        if offset:
            index = bisect_left(ends, offset)
            if index == len(ends) or ends[index] != offset:
                raise ValueError(f"log offset {offset} is not at the start of a line")
            start = index + 1
        return list(lines[start:]), (ends[-1] if ends else 0)

    def state(self) -> dict[str, Any]:
        """The world's snapshot plus the interface's state (for training and tests only)."""
        return self.world.snapshot() | {"ui": self.ui.state()}

    def close(self) -> None:
        self._writer.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> SimGame:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    from PIL import Image

    spec = sys.argv[1] if len(sys.argv) > 1 else ARENA
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    # AI vs AI for 30 game days at speed 5, watched from BLU's side.
    with SimGame(
        spec, seed, ai={"BLU": 0.5, "RED": 0.5}, declarer="coin", news=False, start_paused=False, speed=5
    ) as game:
        for _ in range(150):
            game.advance(200)
        Image.fromarray(game.frame()).save("sim-headless.png")
        print(game.world.date_text(), "frame saved to sim-headless.png")
