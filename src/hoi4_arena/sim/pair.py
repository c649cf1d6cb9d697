"""Two screens on one world: the simulator as a two-player game, each side with its own interface.

`PairGame` holds what both players share -- the `World`, its ARENA log, the clock, the game's AI for a
side nobody plays through a screen -- and one screen per played side: its own `Interface` (camera,
selection, tools, popups, alerts, toasts, console) and `Renderer`, drawn from the same world. Each side
reads and feeds its screen through `PairGame.side(tag)`, a `SideGame`, which answers like a `SimGame`
(`feed`, `frame`, `scene`, `pointer`, `cursor`, `now_ns`, `log`, `state`, `size`, `world`), so the
screen layer's worker drives it as it drives the one-player game. Time is the pair's: `advance(ms)`
steps the world once for both screens (the screen layer's pair worker calls it only when both sides
have reached that time: the cadence barrier).

The clock is shared as HOI4's multiplayer clock is: the world runs while no side holds it paused, at
the lowest speed any side asks for. Each screen's top bar shows that shared state. Pressing space toggles
the side's own hold (so both players' harnesses, typing the same keys at the same instants, unpause and
set the speed as one player would); `=` and `-` move the side's own speed request from the shared speed.

With one screen side and the game's AI on the other, `PairGame` is `SimGame`: the same world, clock,
interface and renderer calls in the same order, hence the same frames and log (tested byte for byte).
The console's `tag` is refused (a side cannot take over the other player's country).

Nothing here reads the wall clock; a lock (`lock`) guards the world for a caller that drives the two
sides from two threads.

Try: python -m hoi4_arena.sim.pair river 3
"""

from __future__ import annotations

import sys
import threading
from bisect import bisect_left
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import GameLogWriter
from hoi4_arena.maps import ArenaMap
from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.scratch import scratch_folder
from hoi4_arena.sim import popups
from hoi4_arena.sim.ai import AIConfig, GameAI
from hoi4_arena.sim.clock import HOURS_PER_SECOND, SPEEDS, to_ns
from hoi4_arena.sim.console import Command
from hoi4_arena.sim.cursor import cursor_sprite, draw_pointer
from hoi4_arena.sim.headless import SimGame, arena_of
from hoi4_arena.sim.input import SimEvent
from hoi4_arena.sim.interface import Interface
from hoi4_arena.sim.render import Renderer, date_label
from hoi4_arena.sim.render_map import geometry
from hoi4_arena.sim.world import World

_NS_PER_S = 1_000_000_000


class SharedClock:
    """The pair's clock: one interface time and one whole-hour accumulator for the world, paused while
    any side holds it paused, at the lowest speed asked for (`GameClock`'s arithmetic exactly)."""

    def __init__(self) -> None:
        self.sides: list[SideClock] = []
        self.ui_ns = 0
        self._carry = 0

    @property
    def paused(self) -> bool:
        return any(side.held for side in self.sides)

    @property
    def speed(self) -> int:
        return min(side.asked for side in self.sides)

    @property
    def hours_per_second(self) -> int:
        return HOURS_PER_SECOND[self.speed - 1]

    def advance(self, ms: float) -> int:
        """Let `ms` pass; returns the whole game hours the world must step (0 while paused)."""
        ns = to_ns(ms)
        self.ui_ns += ns
        if self.paused:
            return 0
        self._carry += ns * self.hours_per_second
        hours, self._carry = divmod(self._carry, _NS_PER_S)
        return hours


class SideClock:
    """One side's handle on the shared clock, as its `Interface` uses a `GameClock`: reading gives the
    shared state (what the top bar shows), writing sets this side's own hold and speed request."""

    def __init__(self, shared: SharedClock, speed: int, paused: bool) -> None:
        self.shared = shared
        self.held = bool(paused)
        self.asked = int(speed)
        shared.sides.append(self)

    @property
    def paused(self) -> bool:
        return self.shared.paused

    @paused.setter
    def paused(self, value: bool) -> None:
        self.held = bool(value)

    @property
    def speed(self) -> int:
        return self.shared.speed

    @property
    def ui_ns(self) -> int:
        return self.shared.ui_ns

    @property
    def hours_per_second(self) -> int:
        return self.shared.hours_per_second

    def set_speed(self, speed: int) -> int:
        """Clamp to 1..5 and ask for it; returns the shared speed now."""
        self.asked = max(SPEEDS.start, min(SPEEDS.stop - 1, int(speed)))
        return self.shared.speed


class PairInterface(Interface):
    """A side's interface in a two-player world: the console's `tag` is refused."""

    def command(self, command: Command) -> str:
        if command.name == "tag":
            return "tag is not available in a two-player game: the other side has its own player"
        return super().command(command)


class _Screen:
    """One side's screen state: interface, renderer, event windows, and whether its end panel is up."""

    def __init__(
        self, pair: PairGame, side: str, speed: int, paused: bool, cache: bool, events: bool
    ) -> None:
        self.clock = SideClock(pair.clock, speed, paused)
        self.ui = PairInterface(pair.world, pair.geo, pair.size, side, self.clock, pair.ais, pair.seed)
        self.renderer = Renderer(pair.geo, pair.size, cache=cache)
        self.schedule = popups.EventSchedule(pair.seed) if events else None
        self.ended = False


class PairGame:
    """One world on `arena`, `sides` played through their own screens, the others by the game's AI
    (`ai`: side -> strength). See the module docstring; the arguments are `SimGame`'s, with `sides`
    for `player` and `player_kinds` (side -> human, scripted or policy) for `player_kind`."""

    def __init__(
        self,
        arena: str | ArenaMap = ARENA,
        seed: int = 0,
        size: tuple[int, int] = (540, 960),
        sides: tuple[str, ...] | list[str] = TAGS,
        ai: dict[str, float] | None = None,
        declarer: str | None = None,
        news: bool = True,
        events: bool = True,
        userdir: str | Path | None = None,
        start_paused: bool = True,
        speed: int = 3,
        max_days: int | None = None,
        player_kinds: dict[str, str] | None = None,
        cache: bool = True,
    ) -> None:
        sides = tuple(sides)
        if not sides or len(set(sides)) != len(sides) or any(s not in TAGS for s in sides):
            raise UserError(f"sides must be one or both of {', '.join(TAGS)}, each once, not {list(sides)!r}")
        ai = {} if ai is None else dict(ai)
        if set(ai) & set(sides):
            raise UserError(f"a side is played through a screen or by the game's AI, not both: {sorted(ai)}")
        player_kinds = dict(player_kinds or {})
        for side in sides:
            SimGame._check(seed, size, side, ai, declarer, speed, player_kinds.get(side))
        self.arena = arena_of(arena)
        self.seed = int(seed)
        self.size = (int(size[0]), int(size[1]))
        self.sides = tuple(s for s in TAGS if s in sides)  # fixed order: BLU's input first at one instant
        self.lock = threading.RLock()
        self._tmp = scratch_folder("pair") if userdir is None else None
        self.userdir = Path(self._tmp.name if self._tmp is not None else userdir).expanduser()
        self.log_path = self.userdir / "logs" / "game.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text("")
        self._writer = GameLogWriter(self.log_path)
        self.world = World(self.arena, self.seed, max_days=max_days, log=self._writer)
        self.ais = {tag: GameAI(tag, AIConfig(strength=float(s))) for tag, s in sorted(ai.items())}
        for tag in self.ais:
            self.world.note_player(tag, "ai")
        for side in self.sides:
            if side in player_kinds:
                self.world.note_player(side, player_kinds[side])
        self.clock = SharedClock()
        self.geo = geometry(self.arena)
        self.screens = {side: _Screen(self, side, speed, start_paused, cache, events) for side in self.sides}
        self._log_ends: list[int] = []
        self._closed = False
        if declarer is not None:
            ui = self.screens[self.sides[0]].ui
            ui.command(Command("coin") if declarer == "coin" else Command("declare", declarer))
        if news:
            for side, screen in self.screens.items():
                screen.ui.popups.append(popups.news(side, other_tag(side)))

    def side(self, tag: str) -> SideGame:
        """The `SimGame`-like handle of side `tag`'s screen."""
        if tag not in self.screens:
            raise UserError(f"{tag} is not played through a screen in this game (sides: {list(self.sides)})")
        return SideGame(self, tag)

    # --- input and time ---------------------------------------------------------------------------

    def feed(self, tag: str, events: list[SimEvent] | tuple[SimEvent, ...]) -> int:
        """Apply input to side `tag`'s screen at the current time; how many events were used."""
        with self.lock:
            screen = self.screens[tag]
            used = sum(1 for event in events if screen.ui.handle(event))
            screen.ui.prune()
            self._check_end()
            return used

    def advance(self, ms: float) -> int:
        """Let `ms` milliseconds pass for the world and every screen; the game hours stepped."""
        with self.lock:
            clock, world, screens = self.clock, self.world, list(self.screens.values())
            before = clock.ui_ns
            hours = clock.advance(ms)
            for screen in screens:
                screen.ui.tick(clock.ui_ns - before)
            stepped = 0
            for _ in range(hours):
                if world.over:
                    break
                if world.hour % 24 == 0:
                    order = TAGS if world.day % 2 == 0 else TAGS[::-1]  # as SimGame and run_game
                    for tag in order:
                        if tag in self.ais:
                            self.ais[tag].update(world)
                world.step(1)
                stepped += 1
                for screen in screens:
                    if screen.schedule is not None and not world.over:
                        event = screen.schedule.due(world.hour, screen.ui.player)
                        if event is not None:
                            screen.ui.popups.append(event)
            if stepped:
                for screen in screens:
                    screen.ui.prune()
            self._check_end()
            return stepped

    def _check_end(self) -> None:
        if not self.world.over:
            return
        for screen in self.screens.values():
            if not screen.ended:
                screen.ended = True
                date = date_label(self.world.date_text())
                screen.ui.popups.append(popups.victory(screen.ui.player, self.world.winner, date))

    # --- reading ----------------------------------------------------------------------------------

    def frame(self, tag: str) -> np.ndarray:
        """(H, W, 3) uint8 RGB of side `tag`'s screen with its pointer drawn."""
        with self.lock:
            screen = self.screens[tag]
            frame = screen.renderer.rgb(screen.ui).copy()
            draw_pointer(frame, screen.ui.pointer)
            return frame

    def scene(self, tag: str):
        with self.lock:
            screen = self.screens[tag]
            return screen.renderer.scene(screen.ui)

    @property
    def now_ns(self) -> int:
        return self.clock.ui_ns

    @property
    def over(self) -> bool:
        return self.world.over

    @property
    def winner(self) -> str | None:
        return self.world.winner

    def log(self, offset: int = 0) -> tuple[list[str], int]:
        """ARENA lines since byte `offset` of game.log and the offset after them (as `SimGame.log`)."""
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"log offset must be a whole number >= 0, not {offset!r}")
        with self.lock:
            lines = self.world.log_lines
            ends = self._log_ends
            for line in lines[len(ends) :]:
                ends.append((ends[-1] if ends else 0) + len(line.encode("utf-8")) + 1)
            end = ends[-1] if ends else 0
            if offset > end:
                raise ValueError(f"log offset {offset} is past the end of the log")
            start = 0
            if offset:
                index = bisect_left(ends, offset)
                if index == len(ends) or ends[index] != offset:
                    raise ValueError(f"log offset {offset} is not at the start of a line")
                start = index + 1
            return list(lines[start:]), end

    def state(self, tag: str) -> dict[str, Any]:
        """The world's snapshot plus side `tag`'s interface state (training and tests only)."""
        with self.lock:
            return self.world.snapshot() | {"ui": self.screens[tag].ui.state()}

    def close(self) -> None:
        with self.lock:
            if self._closed:
                return
            self._closed = True
            self._writer.close()
            if self._tmp is not None:
                self._tmp.cleanup()
                self._tmp = None

    def __enter__(self) -> PairGame:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SideGame:
    """One side of a `PairGame`, answering as a `SimGame` does (what the screen layer's workers read).
    `advance` is not here: time belongs to the pair. `close` closes the pair (the last side to leave)."""

    def __init__(self, pair: PairGame, tag: str) -> None:
        self.pair = pair
        self.tag = tag
        self.arena = pair.arena
        self.seed = pair.seed
        self.size = pair.size
        self.world = pair.world
        self.log_path = pair.log_path
        self.ui = pair.screens[tag].ui

    def feed(self, events: list[SimEvent] | tuple[SimEvent, ...]) -> int:
        return self.pair.feed(self.tag, events)

    def frame(self) -> np.ndarray:
        return self.pair.frame(self.tag)

    def scene(self):
        return self.pair.scene(self.tag)

    @property
    def pointer(self) -> tuple[int, int]:
        return self.ui.pointer

    @property
    def cursor(self) -> tuple[np.ndarray, tuple[int, int]]:
        return cursor_sprite()

    @property
    def focus(self) -> bool:
        return True

    @property
    def over(self) -> bool:
        return self.pair.over

    @property
    def winner(self) -> str | None:
        return self.pair.winner

    @property
    def now_ns(self) -> int:
        return self.pair.now_ns

    def log(self, offset: int = 0) -> tuple[list[str], int]:
        return self.pair.log(offset)

    def state(self) -> dict[str, Any]:
        return self.pair.state(self.tag)

    def close(self) -> None:
        """Nothing to close for one side: the pair's owner closes the pair."""


if __name__ == "__main__":
    from PIL import Image

    from hoi4_arena.sim.input import press

    spec = sys.argv[1] if len(sys.argv) > 1 else ARENA
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    # Both sides idle behind their screens for 20 game days at speed 5 after one side's coin.
    with PairGame(spec, seed, declarer="coin", news=False, speed=5) as pair:
        for tag in pair.sides:
            pair.feed(tag, press("space"))
        for _ in range(100):
            pair.advance(200)
        for tag in pair.sides:
            Image.fromarray(pair.frame(tag)).save(f"pair-{tag}.png")
        print(pair.world.date_text(), "frames saved to", ", ".join(f"pair-{t}.png" for t in pair.sides))
