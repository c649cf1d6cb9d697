"""The worker interface: everything above the screen boundary talks to a game only through this.

A worker captures the game's screen and applies input to it, safely. The simulator's worker runs the
headless game in-process on a virtual clock; the X11 worker drives any window on an X display (the
simulator's window or HOI4 on Linux); `protocol.py` serves any worker over a byte stream, and its client
is a worker too. The recorder, the scripted player, the policy and the trainers never know which one
they hold.

The clock is the worker's: `now_ns` is virtual time for the simulator and monotonic time for X11, and
`wait_until` advances the virtual clock or sleeps. A decision loop therefore reads the same on both:

    t0 = worker.now_ns()
    capture = worker.capture()
    worker.apply(tokens_to_events(tokens, t0, ...), timed=True)
    worker.wait_until(t0 + 200_000_000)
"""

from __future__ import annotations

import abc
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.worker_error import WorkerError  # noqa: F401  -- imported from here across the project

ArmMode = Literal["setup", "match"]
ARM_MODES = ("setup", "match")


_asking = threading.local()


@contextlib.contextmanager
def observer_requests() -> Iterator[None]:
    """Worker calls made inside (on this thread) are a read-only observer's: they read the game but do
    not feed the input watchdog, so a watcher polling a station can never keep a quiet driver's held
    keys alive (screen/protocol.py wraps every observer request in it)."""
    before = getattr(_asking, "observer", False)
    _asking.observer = True
    try:
        yield
    finally:
        _asking.observer = before


def asked_by_observer() -> bool:
    """Whether the worker call under way on this thread is an observer's (`observer_requests`)."""
    return getattr(_asking, "observer", False)


@dataclass
class CaptureRequest:
    """What a capture should return. Views are computed on the capture side."""

    views: bool = True
    """The policy views of the worker's layout (global, quadrants, fovea)."""
    full: bool = False
    """The native frame (H, W, 3) uint8 as well."""
    regions: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    """Named native crops, each (x, y, w, h) in client pixels (template matching)."""


@dataclass
class Capture:
    """One capture of the game's client area."""

    t_ns: int
    """Capture time on the worker's clock."""
    size: tuple[int, int]
    """Client size (height, width) in pixels."""
    pointer: tuple[int, int]
    """Pointer position (x, y) in client pixels at capture time (clamped inside the client)."""
    focus: bool
    """Whether the game had input focus."""
    frame: np.ndarray | None = None
    """The native frame (H, W, 3) uint8 RGB with the pointer drawn, when requested."""
    views: dict[str, np.ndarray] = field(default_factory=dict)
    """View name -> uint8 array: 'global' (h, w, 3), 'quadrants' (4, h, w, 3), 'fovea' (f, f, 3)."""
    regions: dict[str, np.ndarray] = field(default_factory=dict)
    """Requested native crops by name, (h, w, 3) uint8."""


class Worker(abc.ABC):
    """A game's screen and input, behind the safety rules of ../DESIGN.md (focus, watchdog, F12)."""

    @abc.abstractmethod
    def attach(self) -> dict:
        """Find the game and report it: {'game', 'size': [w, h], 'pid', 'protocol', 'layout'}."""

    @abc.abstractmethod
    def status(self) -> dict:
        """{'focus', 'armed': None | 'setup' | 'match', 'stopped' (F12), 'held': [...], ...}."""

    @abc.abstractmethod
    def capture(self, request: CaptureRequest | None = None) -> Capture:
        """Grab the client area now and return what `request` asks for."""

    @abc.abstractmethod
    def arm(self, mode: ArmMode) -> None:
        """Allow input in `mode` ('match' for policies, 'setup' for harnesses). Clears an F12 stop."""

    @abc.abstractmethod
    def disarm(self) -> None:
        """Refuse all input from now on and release whatever is held."""

    @abc.abstractmethod
    def apply(self, events: list[InputEvent], timed: bool = False) -> dict:
        """Apply events in order; `timed` applies each at its `t_ns` on the worker's clock.

        Refused events (not armed, no focus, a key the mode forbids, a position outside the client)
        raise `WorkerError` before any event of the batch is applied.
        """

    @abc.abstractmethod
    def release(self) -> None:
        """Release every held key and button now."""

    @abc.abstractmethod
    def focus(self) -> bool:
        """Whether the game has input focus now."""

    @abc.abstractmethod
    def events(self) -> list[InputEvent]:
        """Drain the person's input recorded since the last call (source 'human')."""

    @abc.abstractmethod
    def game_log(self, offset: int = 0) -> tuple[list[str], int]:
        """The game.log lines from byte `offset` on, and the offset after them."""

    @abc.abstractmethod
    def pointer_image(self) -> tuple[np.ndarray, tuple[int, int]]:
        """The cursor sprite as (h, w, 4) uint8 RGBA and its hotspot (x, y)."""

    @abc.abstractmethod
    def now_ns(self) -> int:
        """The worker's clock: virtual for the simulator, monotonic for a real display."""

    @abc.abstractmethod
    def wait_until(self, t_ns: int) -> None:
        """Let the game run until `t_ns` on the worker's clock (advance or sleep)."""

    def telemetry(self) -> dict:
        """Resource use of the game and the worker; empty where nothing is measured."""
        return {}

    def new_game(self, settings: dict) -> dict:
        """Close this game and open another with `settings`; what is served now. Only a worker that
        opens its games itself can (a station's, cluster/station.py); the rest refuse."""
        raise WorkerError(
            "cannot_restart", f"this worker ({type(self).__name__}) serves one game and cannot start another"
        )

    def close(self) -> None:
        """Release everything held and let go of the game."""
        self.release()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
