"""Window mode of a two-player game: one `PairGame`, two SDL windows, one per side, on the wall clock.

The window mode of `window.py`, for two players: each side's screen is its own window (titled
`<title> BLU` and `<title> RED`, side by side), SDL's events go to the side of the window they came
from (`event.window`) as the same `SimEvent`s the one-player window makes, and the world advances by
the wall-clock time that passed, once for both windows, after every input that arrived for either has
gone in (the cadence barrier of one process). Each window shows its side's `PairGame.scene` whenever
it changed; the cursor is the simulator's sprite. A person can play each window, or an X11 worker can
drive one by its title (the game.log at <userdir>/logs/game.log, where the X11 worker reads it). Two X11
workers cannot drive both at once: XTest input goes to the display's one keyboard focus, which each
would take from the other; `pair_host.py` puts each side's window on its own display for that.

The close button of either window or SIGTERM ends it; it prints the game's state as JSON. Without a
display it says so (exit 2).

Try: python -m hoi4_arena.sim.pair_window river 3
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path

from hoi4_arena.defaults import ARENA, BARE_MAP_SEED
from hoi4_arena.errors import UserError
from hoi4_arena.sim.input import SimEvent
from hoi4_arena.sim.window import IDLE_WAIT_MS, MAX_STEP_MS, sdl_keys, to_sim_events


@dataclass(frozen=True)
class PairWindowConfig:
    """One two-player game in two windows."""

    arena: str = ARENA
    """Preset:seed or a map folder (a bare preset is its map of seed 0, as in every command)."""
    seed: int = 0
    """World seed."""
    size: tuple[int, int] = (540, 960)
    """Each window's client size (height, width), 16:9; the two sit side by side."""
    speed: int = 3
    """Game speed 1..5 both sides start from."""
    paused: bool = True
    """Start paused (each side's space lets go of its hold)."""
    declarer: str | None = None
    """BLU, RED or coin declares war at the start (default: a player decides)."""
    userdir: Path | None = None
    """Write the ARENA log to USERDIR/logs/game.log (default: a temporary folder)."""
    news: bool = True
    """Show the news window on both screens at the start."""
    max_days: int = 365
    """Time limit in game days."""
    title: str = "hoi4-arena pair"
    """The windows' titles before the side (the X11 worker finds each window by its title)."""
    kinds: tuple[str, str] = ("human", "human")
    """Who plays BLU and RED (human, scripted or policy), as the ARENA log names them."""

    @property
    def arena_spec(self) -> str:
        return (
            self.arena if ":" in self.arena or Path(self.arena).is_dir() else f"{self.arena}:{BARE_MAP_SEED}"
        )


def pair_game(config: PairWindowConfig):
    """The `PairGame` of `config`, both sides played by people (or X11 workers) through windows."""
    from hoi4_arena.sim.pair import PairGame

    return PairGame(
        config.arena_spec,
        config.seed,
        size=config.size,
        declarer=config.declarer,
        news=config.news,
        userdir=config.userdir,
        start_paused=config.paused,
        speed=config.speed,
        max_days=config.max_days,
        player_kinds=dict(zip(("BLU", "RED"), config.kinds, strict=True)),
    )


def pair_report(pair) -> dict:
    """How the game stood: printed as JSON when the windows close."""
    return {
        "arena": pair.arena.preset,
        "seed": pair.seed,
        "sides": list(pair.sides),
        "date": pair.world.date_text(),
        "at_war": pair.world.at_war,
        "over": pair.world.over,
        "winner": pair.world.winner,
        "log": str(pair.log_path),
        "screens": {side: pair.state(side)["ui"] for side in pair.sides},
    }


def run_pair_window(config: PairWindowConfig) -> dict:
    """Open both windows and play until one is closed; how the game stood."""
    import os

    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame

    from hoi4_arena.sim.cursor import cursor_sprite

    pair = pair_game(config)
    h, w = config.size
    try:
        pygame.display.init()
        windows = {
            side: pygame.Window(f"{config.title} {side}", (w, h), position=(k * w, 0))
            for k, side in enumerate(pair.sides)
        }
    except pygame.error as error:
        pair.close()
        raise UserError(f"cannot open a window ({error}); is DISPLAY set to a running X server?") from None
    side_of = {window.id: side for side, window in windows.items()}
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        pygame.key.stop_text_input()  # plain key events only, as the one-player window
        rgba, hotspot = cursor_sprite()
        sprite = pygame.image.frombuffer(rgba.tobytes(), (rgba.shape[1], rgba.shape[0]), "RGBA")
        pygame.mouse.set_cursor(pygame.cursors.Cursor(hotspot, sprite))
        keys = sdl_keys(pygame)
        shown: dict[str, object] = dict.fromkeys(pair.sides)
        last = time.monotonic_ns()
        while not stopping:
            first = pygame.event.wait(IDLE_WAIT_MS)
            batches: dict[str, list[SimEvent]] = {side: [] for side in pair.sides}
            for event in [first, *pygame.event.get()]:
                window = getattr(event, "window", None)
                side = side_of.get(window.id) if window is not None else None
                if event.type in (pygame.QUIT, pygame.WINDOWCLOSE):
                    stopping = True
                elif side is None:
                    continue
                elif event.type == pygame.WINDOWLEAVE:
                    pair.screens[side].ui.inside = False
                elif event.type == pygame.WINDOWENTER:
                    pair.screens[side].ui.inside = True
                elif event.type == pygame.WINDOWFOCUSLOST:
                    pair.feed(side, batches[side])
                    batches[side] = []
                    pair.screens[side].ui.release_all()
                elif event.type in (pygame.WINDOWEXPOSED, pygame.VIDEOEXPOSE):
                    shown[side] = None
                else:
                    batches[side].extend(to_sim_events(event, pygame, keys))
            for side in pair.sides:  # every input of this instant in, BLU's first, then the world steps
                if batches[side]:
                    pair.feed(side, batches[side])
            now = time.monotonic_ns()
            pair.advance(min((now - last) / 1e6, MAX_STEP_MS))
            last = now
            for side, window in windows.items():
                screen = pair.screens[side]
                scene = pair.scene(side)
                key = screen.renderer.scene_key
                if key != shown[side]:
                    window.get_surface().blit(scene, (0, 0))
                    window.flip()
                    shown[side] = key
        return pair_report(pair)
    finally:
        signal.signal(signal.SIGTERM, previous)
        for window in windows.values():
            window.destroy()
        pygame.display.quit()
        pair.close()


if __name__ == "__main__":
    import json
    import sys

    from hoi4_arena.sim.window import parse_size

    args = sys.argv[1:]
    size = parse_size(args[2]) if len(args) > 2 else (540, 960)
    config = PairWindowConfig(
        arena=args[0] if args else ARENA,
        seed=int(args[1]) if len(args) > 1 else 0,
        size=size,
        userdir=Path(args[3]) if len(args) > 3 else None,
    )
    try:
        print(json.dumps(run_pair_window(config), default=str))
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
