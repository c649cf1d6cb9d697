"""The match harness: start an arena match the same way for every player, through any worker, with raw input.

A match begins the same whoever plays (the scripted player, a policy, a random policy, a person at the
X11 worker): the harness arms the worker in setup mode and types, as a person would,

    `                  open the console (the news window stays: closing it is the player's job)
    coin | declare TAG  a fair coin from the game's seeded generator picks the declarer, or TAG declares
    Enter, `           run it, close the console
    - - - - then = x (speed - 1)   the requested game speed (from any speed: - stops at 1)
    space              unpause

then reads who declared from the game's ARENA log and disarms. Events go out as timed batches of at most
eight, 25 ms apart on the worker's clock (one decision's slots), so the simulator's window never sees a
key released and pressed again within SDL's 2 ms auto-repeat window, and the headless worker spends
200 ms of virtual time per batch. The game must start paused, as HOI4 does (`hoi4-arena sim --paused`,
or the headless default): the match then runs at the requested speed from its first decision, and the
player's setup (closing the news, forming armies) happens while the game runs.

Nothing here knows which worker it holds: the sim worker, the X11 worker driving the simulator's
window (it needs the window's game.log, `X11Worker(game_log_path=...)`), or a protocol client.
Afterwards the player arms the worker in match mode (no space, Esc or speed keys), and `finish_match`
lets go of everything at the end. `MatchLog` tails the ARENA log for the winner.

Try: python -m hoi4_arena.screen.sim_worker river 3
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from hoi4_arena.gamelog import ArenaLine, ArenaState, GameLogError, parse_line
from hoi4_arena.maps.model import TAGS
from hoi4_arena.screen.events import (
    KEY_CODES,
    VK_OEM_3,
    VK_OEM_MINUS,
    VK_OEM_PLUS,
    VK_RETURN,
    VK_SPACE,
    InputEvent,
)
from hoi4_arena.screen.tokens import SLOT_NS, SLOTS
from hoi4_arena.screen.worker import CaptureRequest, Worker, WorkerError

SPEEDS = range(1, 6)  # HOI4's five speeds, and the simulator's
SOURCE = "harness"
POLL_NS = 50_000_000  # how often the harness looks at the log while it waits for the declaration


@dataclass(frozen=True)
class MatchConfig:
    """How the harness starts a match."""

    speed: int = 3
    """Game speed 1..5 the match runs at from its first decision."""
    declarer: str | None = None
    """BLU or RED declares war; None: the console's fair coin picks (`coin`)."""
    timeout_s: float = 10.0
    """How long (on the worker's clock) to wait for the ARENA declare line before giving up."""

    def __post_init__(self) -> None:
        if self.speed not in SPEEDS:
            raise ValueError(f"speed must be 1..5, not {self.speed!r}")
        if self.declarer not in (None, *TAGS):
            raise ValueError(f"declarer must be BLU, RED or None (a coin), not {self.declarer!r}")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, not {self.timeout_s!r}")

    @property
    def command(self) -> str:
        """What the harness types into the console."""
        return "coin" if self.declarer is None else f"declare {self.declarer.lower()}"


@dataclass
class MatchStart:
    """What the harness did and read."""

    declarer: str
    """Who declared war, read from the ARENA log."""
    speed: int
    """The game speed the harness set."""
    t_ns: int
    """When the game was unpaused (the worker's clock): the match's first decision starts here."""
    events: list[InputEvent] = field(default_factory=list)
    """Every event the harness sent (source 'harness'), for a recording's inputs."""
    log_offset: int = 0
    """game.log's byte offset after the lines read so far."""
    log_lines: list[str] = field(default_factory=list)
    """The ARENA log lines read so far."""


def press(vk: int) -> list[tuple[str, int]]:
    return [("key_down", vk), ("key_up", vk)]


def typed(text: str) -> list[tuple[str, int]]:
    """Key presses that type `text` (lower-case letters, digits, spaces) into the console."""
    out: list[tuple[str, int]] = []
    for char in text:
        vk = VK_SPACE if char == " " else KEY_CODES.get(char)
        if vk is None:
            raise ValueError(f"the harness cannot type {char!r}")
        out += press(vk)
    return out


def console_keys(config: MatchConfig) -> list[tuple[str, int]]:
    """Open the console, run the declaration, close the console."""
    return press(VK_OEM_3) + typed(config.command) + press(VK_RETURN) + press(VK_OEM_3)


def speed_keys(speed: int) -> list[tuple[str, int]]:
    """The requested speed from any speed (HOI4 and the simulator clamp at 1 and 5), then unpause."""
    return press(VK_OEM_MINUS) * (max(SPEEDS) - 1) + press(VK_OEM_PLUS) * (speed - 1) + press(VK_SPACE)


def send_keys(worker: Worker, keys: list[tuple[str, int]], pointer: tuple[int, int]) -> list[InputEvent]:
    """Send key events in timed batches of eight, 25 ms apart; returns the events sent."""
    sent: list[InputEvent] = []
    for start in range(0, len(keys), SLOTS):
        t0 = worker.now_ns()
        batch = [
            InputEvent(t0 + i * SLOT_NS, kind, *pointer, key=vk, source=SOURCE)
            for i, (kind, vk) in enumerate(keys[start : start + SLOTS])
        ]
        worker.apply(batch, timed=True)
        worker.wait_until(t0 + SLOTS * SLOT_NS)
        sent += batch
    return sent


class MatchLog:
    """The game's ARENA log, tailed through a worker and folded into an `ArenaState`."""

    def __init__(self, worker: Worker, offset: int = 0, lines: list[str] | None = None) -> None:
        self.worker = worker
        self.offset = offset
        self.state = ArenaState()
        self.lines: list[str] = []
        self._take(lines or [])

    def poll(self) -> list[ArenaLine]:
        """Read the lines written since the last poll; returns the ARENA lines among them."""
        lines, self.offset = self.worker.game_log(self.offset)
        return self._take(lines)

    def _take(self, lines: list[str]) -> list[ArenaLine]:
        parsed = []
        for line in lines:
            try:
                arena = parse_line(line)
            except GameLogError:
                continue  # a line the schema refuses says nothing the harness can use
            if arena is not None:
                self.state.update(arena)
                self.lines.append(line)
                parsed.append(arena)
        return parsed

    @property
    def declarer(self) -> str | None:
        return self.state.attacker

    @property
    def over(self) -> bool:
        return self.state.over

    @property
    def winner(self) -> str | None:
        return self.state.winner

    def result_for(self, side: str) -> float:
        """+1 if `side` won, -1 if it lost, 0 for a draw or a game still running."""
        if self.state.winner is None:
            return 0.0
        return 1.0 if self.state.winner == side else -1.0


def start_match(worker: Worker, config: MatchConfig | None = None) -> MatchStart:
    """Start the match on a paused game (see the module docstring); the worker is left disarmed.

    Raises `WorkerError` (after disarming) when the worker refuses input or no declaration shows up in
    the ARENA log within `config.timeout_s` on the worker's clock.
    """
    config = config or MatchConfig()
    worker.arm("setup")
    try:
        pointer = worker.capture(CaptureRequest(views=False)).pointer
        events = send_keys(worker, console_keys(config), pointer)
        log = MatchLog(worker)
        deadline = worker.now_ns() + int(config.timeout_s * 1e9)
        log.poll()
        while log.declarer is None:
            if worker.now_ns() >= deadline:
                raise WorkerError(
                    "no_declaration",
                    f"no ARENA declare line in the game log {config.timeout_s:g} s after typing "
                    f"{config.command!r} in the console: is the game paused at its start, and its "
                    "game.log readable by the worker?",
                )
            worker.wait_until(worker.now_ns() + POLL_NS)
            log.poll()
        events += send_keys(worker, speed_keys(config.speed), pointer)
        unpaused = events[-2].t_ns  # space goes down, the game runs
        log.poll()
    except BaseException:
        # Let go even if the worker is half broken; the error that stopped the start is the one to see.
        with contextlib.suppress(WorkerError):
            finish_match(worker)
        raise
    worker.disarm()
    return MatchStart(
        declarer=log.declarer,
        speed=config.speed,
        t_ns=unpaused,
        events=events,
        log_offset=log.offset,
        log_lines=list(log.lines),
    )


def finish_match(worker: Worker) -> None:
    """The end of a match (or a failed start): let go of everything and refuse further input."""
    try:
        worker.release()
    finally:
        worker.disarm()
