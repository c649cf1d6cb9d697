"""Listening to a person's input on an X display through the RECORD extension.

The recorder stores what a person does while they play, and the worker must hear a physical F12 even
while it is injecting input itself. `RecordListener` runs one thread on two X connections of its own
(RECORD's data connection blocks for its whole life; the control connection starts and stops it) and
records every KeyPress, KeyRelease, ButtonPress, ButtonRelease and MotionNotify the server processes,
from every client and every device.

Telling our own input from a person's: XTest events reach RECORD exactly like a keyboard's (the core
protocol carries no device), so the worker writes each fake event into an `InjectionLedger` just before
it sends it, and the listener claims recorded events against it in order: same type and detail (and, for
motion, the same root position) within two seconds. What the ledger claims is the worker's; the rest is
the person's (or another program's: tests press F12 through a second XTest connection, and that counts
as physical, as it should). The one confusion left: a person pressing the very key (or button) the
worker is pressing at the same moment may swap which of the two is called ours.

Timestamps: X server time is milliseconds in 32 bits that wrap every 49.7 days, on the server's clock.
`ServerClock` pairs one server timestamp (read from a PropertyNotify) with `time.monotonic_ns` at start,
and maps later server times by their signed 32-bit difference; on one machine Xorg and Xvfb use
CLOCK_MONOTONIC in ms, so the mapping is exact to the millisecond and does not drift.

Try: DISPLAY=:N python -m hoi4_arena.screen.x11_record   # prints what you type and click for 10 s
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from Xlib import X, Xatom
from Xlib.display import Display
from Xlib.ext import record
from Xlib.protocol import rq

from hoi4_arena.screen.events import VK_F12, InputEvent
from hoi4_arena.screen.worker import WorkerError
from hoi4_arena.screen.x11_input import BUTTON_NAMES, WHEEL_DOWN, WHEEL_UP, Sent, keycode_to_vk

LEDGER_HORIZON_NS = 2_000_000_000
QUEUE_LIMIT = 100_000
CLOCK_READINGS = 8
"""Round trips `ServerClock.calibrate` takes to find one the scheduler did not stretch."""

Rect = tuple[int, int, int, int]
"""A client rectangle (x, y, width, height) in root coordinates."""


class ServerClock:
    """X server milliseconds (32-bit, wrapping) -> the worker's monotonic nanoseconds."""

    def __init__(self, server_ms: int, mono_ns: int, uncertainty_ns: int = 0) -> None:
        self.server_ms = server_ms & 0xFFFFFFFF
        self.mono_ns = mono_ns
        self.uncertainty_ns = uncertainty_ns
        """How far from `mono_ns` the server's reading may have been taken (half the round trip)."""

    def to_ns(self, server_ms: int) -> int:
        delta = ((server_ms - self.server_ms + 2**31) & 0xFFFFFFFF) - 2**31
        return self.mono_ns + delta * 1_000_000

    @classmethod
    def calibrate(cls, conn: Display, readings: int = CLOCK_READINGS) -> ServerClock:
        """Read the server's time by touching a property of a throwaway window of our own, `readings`
        times, and keep the reading with the shortest round trip: one reading taken while this process
        was preempted would put every event it maps tens of milliseconds off."""
        window = conn.screen().root.create_window(
            -10, -10, 1, 1, 0, X.CopyFromParent, X.InputOnly, event_mask=X.PropertyChangeMask
        )
        atom = conn.intern_atom("HOI4_ARENA_CLOCK")
        conn.sync()
        best: ServerClock | None = None
        for _ in range(max(1, readings)):
            reading = cls._read(conn, window, atom)
            if best is None or reading.uncertainty_ns < best.uncertainty_ns:
                best = reading
        window.destroy()
        conn.sync()
        return best

    @classmethod
    def _read(cls, conn: Display, window, atom: int) -> ServerClock:
        before = time.monotonic_ns()
        window.change_property(atom, Xatom.STRING, 8, b"t")
        conn.sync()
        after = time.monotonic_ns()
        server_ms = None
        while conn.pending_events():
            event = conn.next_event()
            if event.type == X.PropertyNotify and event.window.id == window.id:
                server_ms = event.time
        if server_ms is None:
            window.destroy()
            conn.sync()
            raise WorkerError("clock", "the X server sent no PropertyNotify; cannot read its clock")
        return cls(server_ms, (before + after) // 2, (after - before + 1) // 2)


@dataclass
class _Entry:
    sent: Sent
    t_ns: int


class InjectionLedger:
    """The fake events our own XTest connection sent and RECORD has not yet shown us."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: collections.deque[_Entry] = collections.deque()

    def add(self, sent: Sent) -> None:
        with self._lock:
            self._entries.append(_Entry(sent, time.monotonic_ns()))

    def claim(self, event_type: int, detail: int, root_x: int, root_y: int) -> bool:
        """Whether this recorded event is one of ours; a claimed entry is used up."""
        now = time.monotonic_ns()
        with self._lock:
            while self._entries and now - self._entries[0].t_ns > LEDGER_HORIZON_NS:
                self._entries.popleft()
            for index, entry in enumerate(self._entries):
                sent_type, sent_detail, sent_x, sent_y = entry.sent
                if sent_type != event_type:
                    continue
                if event_type == X.MotionNotify:
                    if (sent_x, sent_y) != (root_x, root_y):
                        continue
                elif sent_detail != detail:
                    continue
                del self._entries[index]
                return True
            return False

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


_RANGE = {
    "core_requests": (0, 0),
    "core_replies": (0, 0),
    "ext_requests": (0, 0, 0, 0),
    "ext_replies": (0, 0, 0, 0),
    "delivered_events": (0, 0),
    "device_events": (X.KeyPress, X.MotionNotify),
    "errors": (0, 0),
    "client_started": False,
    "client_died": False,
}


class RecordListener:
    """A thread that turns a person's device events into `InputEvent`s relative to the game window.

    `client_rect()` gives the game's client rectangle in root coordinates, `focus()` whether it has the
    keyboard focus (both may be read from other threads' latest values: they are called on the record
    thread). Key events count while the game has focus; pointer events while the press (or the motion)
    is inside the client, with positions clamped into it. A physical F12 press calls `on_stop` at once,
    wherever the focus is, and is not recorded. If the connection dies, `on_lost` is called.
    """

    def __init__(
        self,
        display: str,
        *,
        client_rect: Callable[[], Rect],
        focus: Callable[[], bool],
        on_stop: Callable[[], None],
        on_lost: Callable[[BaseException], None] | None = None,
        ledger: InjectionLedger | None = None,
    ) -> None:
        self.display = display
        self.ledger = ledger if ledger is not None else InjectionLedger()
        self._client_rect = client_rect
        self._focus = focus
        self._on_stop = on_stop
        self._on_lost = on_lost
        self._queue: collections.deque[InputEvent] = collections.deque(maxlen=QUEUE_LIMIT)
        self._queue_lock = threading.Lock()
        self._buttons: set[int] = set()
        self._keys: set[int] = set()  # virtual keys whose press was recorded
        self.dropped = 0
        self.f12_presses = 0
        self.error: BaseException | None = None
        self._stopping = False
        self._control = Display(display)
        self._data = Display(display)
        if not self._control.has_extension("RECORD"):
            self._close_connections()
            raise WorkerError("no_record", "the X server lacks the RECORD extension; cannot hear input")
        self.clock = ServerClock.calibrate(self._control)
        # Keycode -> virtual key, read once here: the record thread sends no requests of its own.
        self._vks = {kc: keycode_to_vk(self._control, kc) for kc in range(8, 256)}
        self._f12_keycodes = {kc for kc, vk in self._vks.items() if vk == VK_F12}
        self._context = self._control.record_create_context(0, [record.AllClients], [_RANGE])
        # The data connection must see the context, so the create must reach the server first.
        self._control.sync()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="x11-record", daemon=True)

    def start(self) -> RecordListener:
        self._thread.start()
        # RECORD starts intercepting when EnableContext is processed; wait for its first reply
        # (StartOfData) so that nothing pressed after `start` returns can be missed.
        if not self._started.wait(5.0):
            raise WorkerError("record", "the RECORD context did not start within 5 s")
        return self

    def stop(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        try:
            self._control.record_disable_context(self._context)
            self._control.flush()
        except Exception:  # the display may already be gone; the thread then ends on its own
            pass
        self._thread.join(timeout=2.0)
        try:
            self._control.record_free_context(self._context)
            self._control.sync()
        except Exception:
            pass
        self._close_connections()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def drain(self) -> list[InputEvent]:
        """The person's events since the last drain, oldest first."""
        with self._queue_lock:
            events = list(self._queue)
            self._queue.clear()
        return events

    # --- the record thread ------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._data.record_enable_context(self._context, self._on_reply)
        except Exception as error:
            if not self._stopping:
                self.error = error
                if self._on_lost is not None:
                    self._on_lost(error)
        finally:
            self._started.set()

    def _on_reply(self, reply) -> None:
        if reply.category == record.StartOfData:
            self._started.set()
            return
        if reply.category != record.FromServer or reply.client_swapped or not reply.data:
            return
        data = reply.data
        field = rq.EventField(None)
        while len(data):
            event, data = field.parse_binary_value(data, self._data.display, None, None)
            self._on_event(event)

    def _on_event(self, event) -> None:
        event_type = event.type & 0x7F
        root_x, root_y = getattr(event, "root_x", 0), getattr(event, "root_y", 0)
        if self.ledger.claim(event_type, event.detail, root_x, root_y):
            return
        if event_type == X.KeyPress and event.detail in self._f12_keycodes:
            self.f12_presses += 1
            self._on_stop()
            return
        made = self._convert(event_type, event.detail, root_x, root_y, self.clock.to_ns(event.time))
        if made is not None:
            with self._queue_lock:
                if len(self._queue) == self._queue.maxlen:
                    self.dropped += 1
                self._queue.append(made)

    def _convert(
        self, event_type: int, detail: int, root_x: int, root_y: int, t_ns: int
    ) -> InputEvent | None:
        left, top, width, height = self._client_rect()
        x, y = root_x - left, root_y - top
        inside = 0 <= x < width and 0 <= y < height
        cx, cy = min(max(x, 0), width - 1), min(max(y, 0), height - 1)
        if event_type in (X.KeyPress, X.KeyRelease):
            vk = self._vks.get(detail)
            if vk is None or vk == VK_F12:
                return None
            if event_type == X.KeyPress:
                if not self._focus():
                    return None
                self._keys.add(vk)
                return InputEvent(t_ns, "key_down", cx, cy, key=vk, source="human")
            # A release counts when its press did (as a button's does): one that arrives while the
            # focus just came back, its press made elsewhere, is not half a keystroke in the session.
            if vk not in self._keys:
                return None
            self._keys.discard(vk)
            return InputEvent(t_ns, "key_up", cx, cy, key=vk, source="human")
        if event_type == X.MotionNotify:
            return InputEvent(t_ns, "move", x, y, source="human") if inside else None
        if detail in (WHEEL_UP, WHEEL_DOWN):
            if event_type != X.ButtonPress or not inside:
                return None
            return InputEvent(t_ns, "wheel", x, y, delta=1 if detail == WHEEL_UP else -1, source="human")
        button = BUTTON_NAMES.get(detail)
        if button is None:
            return None
        if event_type == X.ButtonPress:
            if not inside:
                return None
            self._buttons.add(detail)
            return InputEvent(t_ns, "button_down", x, y, button=button, source="human")
        # A release counts when its press did, wherever the pointer went meanwhile (X's implicit grab
        # sends it to the game too).
        if detail not in self._buttons:
            return None
        self._buttons.discard(detail)
        return InputEvent(t_ns, "button_up", cx, cy, button=button, source="human")

    def _close_connections(self) -> None:
        for conn in (self._data, self._control):
            with contextlib.suppress(Exception):
                conn.close()


if __name__ == "__main__":
    import os

    root = Display()
    screen = root.screen()
    full = (0, 0, screen.width_in_pixels, screen.height_in_pixels)
    listener = RecordListener(
        os.environ.get("DISPLAY", ""),
        client_rect=lambda: full,
        focus=lambda: True,
        on_stop=lambda: print("F12: stop"),
    ).start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for seen in listener.drain():
            print(seen.to_json())
        time.sleep(0.1)
    listener.stop()
    root.close()
