"""Window mode: the simulator in a real SDL window, played with the mouse and keyboard on the wall clock.

One code path with the headless game: the window owns a `SimGame`, turns SDL's events into `SimEvent`s
and feeds them to it, advances it by the wall-clock time that passed, and shows `SimGame.scene()` (the
same surface the headless frame is read from). The window's cursor is the simulator's sprite set as an
SDL colour cursor, so a capture of the window with the X server's cursor composited (the X11 worker,
or mss with XFixes) equals the headless frame for the same state and pointer.

The window closes cleanly on its close button or SIGTERM and reports the game as JSON. The ARENA log
goes to <userdir>/logs/game.log, where the X11 worker reads it.

Try: hoi4-arena sim --preset river --size 1280x720
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path

from hoi4_arena.defaults import ARENA, BARE_MAP_SEED
from hoi4_arena.errors import UserError
from hoi4_arena.sim.clock import SPEEDS
from hoi4_arena.sim.input import SimEvent

MAX_STEP_MS = 250  # a stall (the process was stopped, the machine swapped) does not jump the game ahead
IDLE_WAIT_MS = 16  # about 60 frames a second at most


@dataclass(frozen=True)
class WindowConfig:
    """One game in a window."""

    arena: str = ARENA
    """Preset name, preset:seed, or a map folder (a bare preset is its map of seed 0, as in every command)."""
    seed: int = 0
    """World seed (battle luck, events, the console's coin); the map's seed is the arena's."""
    size: tuple[int, int] = (1080, 1920)
    """Window client size (height, width), 16:9."""
    player: str = "BLU"
    """The side you play: BLU or RED."""
    ai: tuple[str, ...] | None = None
    """Sides the game's AI plays: both, BLU, RED or none (default: the player's enemy)."""
    ai_strength: float = 0.5
    """Strength of the game's AI, 0..1."""
    speed: int = 3
    """Game speed 1..5 (1, 3, 6, 12 or 24 game hours per second)."""
    paused: bool = False
    """Start paused (space unpauses)."""
    declarer: str | None = None
    """BLU, RED or coin declares war at the start (default: you decide, by the flag or the console)."""
    userdir: Path | None = None
    """Write the ARENA log to USERDIR/logs/game.log (default: a temporary folder)."""
    news: bool = True
    """Show the news window at the start."""
    events: bool = True
    """Open event windows every 20-40 game days."""
    max_days: int = 365
    """Time limit in game days (a draw when reached)."""
    title: str = "hoi4-arena sim"
    """The window's title (the X11 worker finds the window by it)."""
    save: Path | None = None
    """Go on from this simulator save (.simsave); the game's settings, its size included, are the save's."""

    def __post_init__(self) -> None:
        # Here, not at the top: the command line builds its options from this config without numpy.
        from hoi4_arena.maps.model import TAGS

        h, w = self.size
        if w * 9 != h * 16 and abs(w * 9 - h * 16) > 16:
            raise UserError(f"--size {w}x{h} is not 16:9 (e.g. 1920x1080, 1280x720, 960x540)")
        if self.player not in TAGS:
            raise UserError(f"--player is {' or '.join(TAGS)}, not {self.player!r}")
        if self.ai is None:
            object.__setattr__(self, "ai", tuple(tag for tag in TAGS if tag != self.player))
        for tag in self.ai:
            if tag not in TAGS:
                raise UserError(f"--ai sides must be among {', '.join(TAGS)}")
        if self.speed not in SPEEDS:
            raise UserError(f"--speed must be 1..5, not {self.speed}")
        if not 0.0 <= self.ai_strength <= 1.0:
            raise UserError("--ai-strength must be within 0..1")
        if self.declarer not in (None, *TAGS, "coin"):
            raise UserError(f"--declarer must be BLU, RED or coin, not {self.declarer!r}")
        if self.max_days < 1:
            raise UserError("--days must be at least 1")

    @property
    def arena_spec(self) -> str:
        """The map to load: a bare preset is its map of seed 0 (maps/specs.py)."""
        return (
            self.arena if ":" in self.arena or Path(self.arena).is_dir() else f"{self.arena}:{BARE_MAP_SEED}"
        )


def parse_size(text: str) -> tuple[int, int]:
    """'1920x1080' -> (1080, 1920)."""
    width, sep, height = text.lower().partition("x")
    if not sep or not width.isdigit() or not height.isdigit():
        raise UserError(f"--size must look like 1920x1080, not {text!r}")
    return int(height), int(width)


def sdl_keys(pygame) -> dict[int, str]:
    """SDL key codes -> the simulator's key names (both shifts are shift, both ctrls ctrl)."""
    keys = {getattr(pygame, f"K_{c}"): c for c in "abcdefghijklmnopqrstuvwxyz0123456789"}
    keys.update(
        {
            pygame.K_LSHIFT: "shift",
            pygame.K_RSHIFT: "shift",
            pygame.K_LCTRL: "ctrl",
            pygame.K_RCTRL: "ctrl",
            pygame.K_LEFT: "left",
            pygame.K_RIGHT: "right",
            pygame.K_UP: "up",
            pygame.K_DOWN: "down",
            pygame.K_TAB: "tab",
            pygame.K_RETURN: "enter",
            pygame.K_KP_ENTER: "enter",
            pygame.K_SPACE: "space",
            pygame.K_ESCAPE: "escape",
            pygame.K_BACKSPACE: "backspace",
            pygame.K_EQUALS: "=",
            pygame.K_PLUS: "=",
            pygame.K_KP_PLUS: "=",
            pygame.K_MINUS: "-",
            pygame.K_KP_MINUS: "-",
            pygame.K_PERIOD: ".",
            pygame.K_BACKQUOTE: "`",
            pygame.K_F12: "f12",
        }
    )
    return keys


BUTTON_NAMES = {1: "left", 2: "middle", 3: "right"}


def to_sim_events(event, pygame, keys: dict[int, str]) -> list[SimEvent]:
    """One SDL event as SimEvents (none for events the game does not take, e.g. unknown keys)."""
    kind = event.type
    if kind == pygame.MOUSEMOTION:
        return [SimEvent("move", int(event.pos[0]), int(event.pos[1]))]
    if kind in (pygame.MOUSEBUTTONDOWN, pygame.MOUSEBUTTONUP):
        button = BUTTON_NAMES.get(event.button)  # 4 and up are the wheel, reported again as MOUSEWHEEL
        if button is None:
            return []
        edge = "button_down" if kind == pygame.MOUSEBUTTONDOWN else "button_up"
        return [SimEvent("move", int(event.pos[0]), int(event.pos[1])), SimEvent(edge, button=button)]
    if kind == pygame.MOUSEWHEEL:
        notches = int(event.y)
        return [SimEvent("wheel", delta=notches)] if notches else []
    if kind in (pygame.KEYDOWN, pygame.KEYUP):
        name = keys.get(event.key)
        if name is None:
            return []
        return [SimEvent("key_down" if kind == pygame.KEYDOWN else "key_up", key=name)]
    return []


def run_window(config: WindowConfig) -> dict:
    """Open the window and play until it is closed; returns how the game stood."""
    import os

    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame

    from hoi4_arena.sim.cursor import cursor_sprite
    from hoi4_arena.sim.headless import SimGame

    if config.save is not None:
        from hoi4_arena.sim.save import load_game

        game = load_game(config.save, config.userdir)
    else:
        game = None
    game = game or SimGame(
        config.arena_spec,
        config.seed,
        size=config.size,
        player=config.player,
        ai={tag: config.ai_strength for tag in config.ai},
        declarer=config.declarer,
        news=config.news,
        events=config.events,
        userdir=config.userdir,
        start_paused=config.paused,
        speed=config.speed,
        max_days=config.max_days,
        player_kind="human",
    )
    try:
        pygame.display.init()
        h, w = game.size  # a save's size when restored from one
        screen = pygame.display.set_mode((w, h))
    except pygame.error as error:
        game.close()
        raise UserError(f"cannot open a window ({error}); is DISPLAY set to a running X server?") from None
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        pygame.display.set_caption(config.title)
        # pygame starts SDL's text input, which routes key strokes through an input method; the game
        # reads plain key events only (the console included), so keys go straight to it.
        pygame.key.stop_text_input()
        rgba, hotspot = cursor_sprite()
        sprite = pygame.image.frombuffer(rgba.tobytes(), (rgba.shape[1], rgba.shape[0]), "RGBA")
        pygame.mouse.set_cursor(pygame.cursors.Cursor(hotspot, sprite))
        keys = sdl_keys(pygame)
        game.ui.inside = bool(pygame.mouse.get_focused())
        shown = None
        frames = 0
        last = time.monotonic_ns()
        while not stopping:
            first = pygame.event.wait(IDLE_WAIT_MS)
            batch: list[SimEvent] = []
            for event in [first, *pygame.event.get()]:
                if event.type == pygame.QUIT:
                    stopping = True
                elif event.type == pygame.WINDOWLEAVE:
                    game.ui.inside = False
                elif event.type == pygame.WINDOWENTER:
                    game.ui.inside = True
                elif event.type == pygame.WINDOWFOCUSLOST:
                    game.feed(batch)
                    batch = []
                    game.ui.release_all()  # keys released elsewhere never reach us: nothing stays held
                elif event.type in (pygame.WINDOWEXPOSED, pygame.VIDEOEXPOSE):
                    shown = None
                else:
                    if event.type == pygame.MOUSEMOTION:
                        game.ui.inside = True
                    batch.extend(to_sim_events(event, pygame, keys))
            if batch:
                game.feed(batch)
            now = time.monotonic_ns()
            game.advance(min((now - last) / 1e6, MAX_STEP_MS))
            last = now
            scene = game.scene()
            key = game.renderer.scene_key
            if key != shown:
                screen.blit(scene, (0, 0))
                pygame.display.flip()
                shown = key
                frames += 1
        return {
            "arena": game.arena.preset,
            "seed": game.seed,
            "player": game.ui.player,
            "date": game.world.date_text(),
            "at_war": game.world.at_war,
            "over": game.world.over,
            "winner": game.world.winner,
            "result": game.world.end_reason,
            "frames_shown": frames,
            "log": str(game.log_path) if config.userdir is not None else None,
        }
    finally:
        signal.signal(signal.SIGTERM, previous)
        pygame.display.quit()
        game.close()
