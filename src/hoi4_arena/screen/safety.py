"""Input safety: the one policy every worker applies before any input reaches a game.

Input is dangerous: a key left held on a person's desktop keeps typing into whatever has focus. So
every worker (X11, the simulator, anything served over the protocol) puts an `InputGuard` between its
callers and the game, and the guard decides, not the caller:

- nothing is applied unless the worker is armed: 'match' (a policy: only `events.MATCH_KEYS`, so no
  space, Esc or speed keys) or 'setup' (a harness: `events.SETUP_KEYS`);
- a batch is checked whole before any of it is applied: one forbidden key, one position outside the
  client, one timed event outside the watchdog's window, and nothing of the batch happens;
- input only while the game has focus, checked again just before each event is applied;
- the guard tracks every key and button it let down, and releases them all (through the worker's
  release callback) on focus loss, on client disconnect, and when no request came for 750 ms (the
  watchdog: a caller that hangs or dies cannot leave a key held);
- a physical F12 stops input at once, until the worker is armed again.

The guard is pure logic over an injectable clock, so each rule is tested without a display; the
`Watchdog` thread is the only moving part, and the simulator's worker, whose clock is virtual, calls
`tick` itself instead.

Try: python -m pytest -q tests/screen/test_safety.py
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from hoi4_arena.screen.events import KEY_NAMES, MATCH_KEYS, SETUP_KEYS, InputEvent
from hoi4_arena.screen.worker import ARM_MODES, WorkerError, asked_by_observer

ALLOWED_KEYS: dict[str, frozenset[int]] = {"match": frozenset(MATCH_KEYS), "setup": frozenset(SETUP_KEYS)}

RELEASE_REASONS = ("request", "disarm", "focus", "watchdog", "disconnect", "stop", "close")

ReleaseCallback = Callable[[list[int], list[str]], None]
"""Called with (keys, buttons) to let go, buttons first then keys, each most recent first."""


@dataclass(frozen=True)
class SafetyConfig:
    """The limits an `InputGuard` enforces."""

    watchdog_ms: int = 750
    """Release everything held after this long without a request; timed events must lie this close to now."""
    poll_ms: int = 25
    """How often the watchdog thread looks at the clock and the focus."""
    max_batch: int = 256
    """The most events one apply may carry."""
    max_wheel: int = 10
    """The most wheel notches one event may carry."""

    def __post_init__(self) -> None:
        if self.watchdog_ms <= 0 or self.poll_ms <= 0:
            raise ValueError("watchdog_ms and poll_ms must be positive")
        if self.poll_ms * 4 > self.watchdog_ms:
            raise ValueError("poll_ms must be at most a quarter of watchdog_ms, or the watchdog fires late")
        if self.max_batch <= 0 or self.max_wheel <= 0:
            raise ValueError("max_batch and max_wheel must be positive")

    @property
    def watchdog_ns(self) -> int:
        return self.watchdog_ms * 1_000_000


@dataclass
class ReleaseRecord:
    """One time the guard let go of what was held (for status and for tests that watch it)."""

    reason: str
    t_ns: int
    keys: list[int] = field(default_factory=list)
    buttons: list[str] = field(default_factory=list)


class InputGuard:
    """Decides whether input may reach the game, and remembers what it let down.

    `size` is the client (height, width); `release` lets go of keys and buttons on the real target.
    Every method takes `lock` itself; a worker also holds `lock` around "admit, inject, note" so that
    a release from another thread (watchdog, F12 listener) never interleaves with an injection.
    """

    def __init__(
        self,
        size: tuple[int, int],
        release: ReleaseCallback,
        *,
        config: SafetyConfig | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.config = config or SafetyConfig()
        self.lock = threading.RLock()
        self._release = release
        self._clock = clock
        self._size = _checked_size(size)
        self.mode: str | None = None
        self.stopped = False
        self.stop_reason = ""
        self.focus = False
        self._keys: dict[int, None] = {}  # insertion-ordered sets: release undoes in reverse order
        self._buttons: dict[str, None] = {}
        self.last_request_ns = clock()
        self.releases: list[ReleaseRecord] = []

    # --- requests and modes ----------------------------------------------------------------------

    def touch(self) -> None:
        """A request arrived: feed the watchdog (an observer's request does not: it holds nothing)."""
        if asked_by_observer():
            return
        with self.lock:
            self.last_request_ns = self._clock()

    def arm(self, mode: str) -> None:
        """Allow input in `mode` from now on; clears an F12 stop."""
        if mode not in ARM_MODES:
            raise WorkerError("bad_mode", f"arm mode must be one of {', '.join(ARM_MODES)}, not {mode!r}")
        with self.lock:
            if self.mode is not None and self.mode != mode:
                # Keys held under the old whitelist must not outlive it.
                self._let_go("disarm")
            self.mode = mode
            self.stopped = False
            self.stop_reason = ""
            self.last_request_ns = self._clock()

    def disarm(self) -> None:
        """Refuse all input and release whatever is held."""
        with self.lock:
            self.mode = None
            self._let_go("disarm")

    def stop(self, reason: str = "f12") -> None:
        """Emergency stop (a physical F12, or a lost listener): release everything, refuse until re-armed."""
        with self.lock:
            self.stopped = True
            self.stop_reason = reason
            self._let_go("stop")

    def disconnect(self) -> None:
        """The client went away: release everything (the mode stays, for the next client to re-arm)."""
        with self.lock:
            self._let_go("disconnect")

    def release(self, reason: str = "request") -> None:
        """Release every held key and button now."""
        if reason not in RELEASE_REASONS:
            raise ValueError(f"unknown release reason {reason!r}")
        with self.lock:
            self._let_go(reason)

    def set_size(self, size: tuple[int, int]) -> None:
        """The client's (height, width) changed (the window was resized)."""
        with self.lock:
            self._size = _checked_size(size)

    @property
    def size(self) -> tuple[int, int]:
        return self._size

    # --- checking ---------------------------------------------------------------------------------

    def check(self, events: Iterable[InputEvent], *, focus: bool, timed: bool = False) -> list[InputEvent]:
        """Refuse the whole batch (WorkerError) if any event of it may not be applied now.

        Returns the batch as a list. Nothing is applied or remembered here: the worker applies the
        events afterwards, calling `admit` and `note` around each.
        """
        batch = list(events)
        with self.lock:
            self.focus = focus
            self._check_state()
            if len(batch) > self.config.max_batch:
                raise WorkerError(
                    "too_many", f"{len(batch)} events in one apply; at most {self.config.max_batch}"
                )
            now = self._clock()
            height, width = self._size
            allowed = ALLOWED_KEYS[self.mode]
            for index, event in enumerate(batch):
                where = f"event {index} ({event.kind})"
                if not (0 <= event.x < width and 0 <= event.y < height):
                    raise WorkerError(
                        "out_of_bounds",
                        f"{where} at ({event.x}, {event.y}) lies outside the {width}x{height} client",
                    )
                if event.kind in ("key_down", "key_up") and event.key not in allowed:
                    name = KEY_NAMES.get(event.key, hex(event.key))
                    raise WorkerError(
                        "forbidden_key", f"{where}: key {name!r} is not allowed in {self.mode} mode"
                    )
                if event.kind == "wheel" and abs(event.delta) > self.config.max_wheel:
                    raise WorkerError(
                        "bad_wheel", f"{where}: {event.delta} notches; at most {self.config.max_wheel}"
                    )
                if timed and abs(event.t_ns - now) > self.config.watchdog_ns:
                    raise WorkerError(
                        "bad_time",
                        f"{where} is timed {(event.t_ns - now) / 1e6:+.0f} ms from now on the worker's "
                        f"clock; timed events must lie within {self.config.watchdog_ms} ms of now",
                    )
        return batch

    def admit(self, event: InputEvent, *, focus: bool) -> bool:
        """Whether `event` may be applied right now (the state may have changed since `check`)."""
        with self.lock:
            self.focus = focus
            if self.mode is None or self.stopped or not focus:
                return False
            if event.kind in ("key_down", "key_up"):
                return event.key in ALLOWED_KEYS[self.mode]
            height, width = self._size
            return 0 <= event.x < width and 0 <= event.y < height

    def note(self, event: InputEvent) -> None:
        """`event` was applied: remember what it holds down."""
        with self.lock:
            if event.kind == "key_down":
                self._keys.pop(event.key, None)
                self._keys[event.key] = None
            elif event.kind == "key_up":
                self._keys.pop(event.key, None)
            elif event.kind == "button_down":
                self._buttons.pop(event.button, None)
                self._buttons[event.button] = None
            elif event.kind == "button_up":
                self._buttons.pop(event.button, None)

    # --- the watchdog -----------------------------------------------------------------------------

    def tick(self, focus: bool | None = None) -> str | None:
        """Apply the time and focus rules now; returns the release reason if this tick let go."""
        with self.lock:
            if focus is not None:
                self.focus = focus
            if not self._keys and not self._buttons:
                return None
            if focus is False:
                self._let_go("focus")
                return "focus"
            if self._clock() - self.last_request_ns >= self.config.watchdog_ns:
                self._let_go("watchdog")
                return "watchdog"
            return None

    # --- state ------------------------------------------------------------------------------------

    @property
    def held_keys(self) -> list[int]:
        with self.lock:
            return list(self._keys)

    @property
    def held_buttons(self) -> list[str]:
        with self.lock:
            return list(self._buttons)

    def status(self) -> dict:
        with self.lock:
            last = self.releases[-1] if self.releases else None
            counts: dict[str, int] = {}
            for record in self.releases:
                counts[record.reason] = counts.get(record.reason, 0) + 1
            return {
                "armed": self.mode,
                "stopped": self.stopped,
                "stop_reason": self.stop_reason,
                "focus": self.focus,
                "held": [f"key:{KEY_NAMES[key]}" for key in self._keys]
                + [f"button:{button}" for button in self._buttons],
                "releases": counts,
                "last_release": None if last is None else {"reason": last.reason, "t_ns": last.t_ns},
                "since_request_ms": (self._clock() - self.last_request_ns) / 1e6,
            }

    def _check_state(self) -> None:
        if self.stopped:
            raise WorkerError(
                "stopped", f"input is stopped ({self.stop_reason}); arm the worker again to resume"
            )
        if self.mode is None:
            raise WorkerError("not_armed", "the worker is not armed; arm it in 'match' or 'setup' mode")
        if not self.focus:
            raise WorkerError("no_focus", "the game does not have input focus; no input is applied")

    def _let_go(self, reason: str) -> None:
        # Called with the lock held. Forget the state only after the callback succeeded: if the
        # release itself fails (display gone), the next tick tries again.
        keys = list(reversed(self._keys))
        buttons = list(reversed(self._buttons))
        if not keys and not buttons:
            return
        self._release(keys, buttons)
        self._keys.clear()
        self._buttons.clear()
        self.releases.append(ReleaseRecord(reason, self._clock(), keys, buttons))
        del self.releases[:-64]


def _checked_size(size: tuple[int, int]) -> tuple[int, int]:
    height, width = (int(v) for v in size)
    if height <= 0 or width <= 0:
        raise ValueError(f"client size must be positive (height, width), got {size!r}")
    return height, width


class Watchdog:
    """A daemon thread that calls `guard.tick(focus_probe())` every `poll_ms`.

    `focus_probe` runs on this thread only, so an X11 worker gives it a connection of its own. If the
    probe raises (the display went away), the guard is stopped: fail closed.
    """

    def __init__(self, guard: InputGuard, focus_probe: Callable[[], bool] | None = None) -> None:
        self.guard = guard
        self._probe = focus_probe
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, name="input-watchdog", daemon=True)
        self.error: BaseException | None = None

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._halt.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        period = self.guard.config.poll_ms / 1000
        while not self._halt.wait(period):
            try:
                focus = None if self._probe is None else bool(self._probe())
                self.guard.tick(focus)
            except Exception as error:  # any failure here must fail closed
                self.error = error
                # The release itself may be what failed; `stopped` is set before it is tried.
                with contextlib.suppress(Exception):
                    self.guard.stop(f"watchdog failed: {error}")
                return
