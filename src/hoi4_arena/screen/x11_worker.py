"""The X11 worker: any game window on an X display, captured with mss and driven through XTest, safely.

It drives both the simulator's window and HOI4 on Linux. One `X11Worker` holds:

- the window, found by its process (_NET_WM_PID) or its name/class, and its client rectangle in root
  coordinates, read again before every capture and every batch (windows move);
- capture: mss's XCB backend (XShmGetImage) grabs the rectangle; the cursor image from XFixes is
  composited into it (the frame looks like a screen recording does), and the views are computed here
  from the BGRA grab as it is (RGB is copied out only for a full frame or regions), on the capture
  side, so only views need cross a process or network boundary;
- input: a dispatcher thread with its own X connection applies each batch through XTest, each event
  at its `t_ns` when timed, so the eight 25 ms slots of a decision are not stuck behind a screen grab;
- safety: an `InputGuard` (safety.py) checks every batch, re-admits every event just before it is sent
  (focus is read from the server right then), and a watchdog thread on a third connection releases
  everything on focus loss or 750 ms without a request;
- a person's input, heard through XRecord (x11_record.py) on two more connections; a physical F12
  stops input at once (the worker never injects F12, so any F12 is a person's);
- a release guardian (x11_input.py): a child process told what is held before each press, which
  releases it if this process dies without doing so (X keeps XTest's keys held after their client).

Fail closed: if the watchdog, the listener or the guardian is gone, `arm` refuses; if the game's
window disappears, input stops until the worker is armed again (`attach` follows a restarted game).

python-xlib Display objects are not thread-safe, so each thread owns its connection; the input
connection is the one thing several threads touch (dispatcher, and releases from the watchdog, the
listener or a caller), always under the guard's lock.

Why the cursor is composited here and not by `mss.MSS(with_cursor=True)`: mss blends XFixes' image as
if its alpha were straight, but XFixes returns premultiplied ARGB, and mss reads the pointer position
in a separate request from ours. For a cursor with binary alpha both composites are the same bytes
(tests/screen/test_x11_capture.py checks it); here the pointer position, the sprite and the frame's
cursor come from one XFixes reply, and partial alpha is blended as premultiplied.

Try: hoi4-arena probe --window "Hearts of Iron IV"
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
from Xlib import X
from Xlib import error as xerror
from Xlib.display import Display

from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.safety import InputGuard, SafetyConfig, Watchdog
from hoi4_arena.screen.views import compute_views_bgra
from hoi4_arena.screen.worker import ArmMode, Capture, CaptureRequest, Worker, WorkerError
from hoi4_arena.screen.x11_input import BUTTON_NUMBERS, WHEEL_DOWN, WHEEL_UP, ReleaseGuardian, XTestInput
from hoi4_arena.screen.x11_record import InjectionLedger, RecordListener

log = logging.getLogger(__name__)

DEFAULT_WINDOW = "Hearts of Iron IV"
# Errors that mean "the connection or the window is gone", as opposed to a bug of ours.
_X_ERRORS = (xerror.XError, xerror.ConnectionClosedError, OSError)
# What a request about a destroyed window raises (get_geometry names it a drawable).
_GONE = (xerror.BadWindow, xerror.BadDrawable)


@dataclass(frozen=True)
class WindowInfo:
    """The game window as the worker found it."""

    id: int
    name: str
    wm_class: tuple[str, ...]
    pid: int | None


@dataclass
class CursorImage:
    """One XFixes cursor reply: the sprite (premultiplied BGRA as the server keeps it) and where it is."""

    root_x: int
    root_y: int
    hotspot: tuple[int, int]
    argb: np.ndarray
    """(h, w) uint32, 0xAARRGGBB premultiplied."""

    def rgba(self) -> np.ndarray:
        """(h, w, 4) uint8 straight-alpha RGBA (binary alpha comes back exactly)."""
        a = (self.argb >> 24).astype(np.uint32)
        channels = [(self.argb >> shift) & 0xFF for shift in (16, 8, 0)]
        safe = np.maximum(a, 1)
        straight = [np.where(a == 0, 0, np.minimum((c * 255 + safe // 2) // safe, 255)) for c in channels]
        return np.stack([*straight, a], axis=-1).astype(np.uint8)


def bgra_to_rgb(bgra: np.ndarray) -> np.ndarray:
    """A C-contiguous (H, W, 3) RGB copy of an (H, W, 4) BGRA image.

    One strided copy per channel: `bgra[..., ::-1]`-style indexing is 3x slower to copy, and fancy
    indexing (`bgra[..., [2, 1, 0]]`) returns a channel-planar array that makes the views 3x slower.
    """
    rgb = np.empty((*bgra.shape[:2], 3), dtype=np.uint8)
    for channel in range(3):
        rgb[..., channel] = bgra[..., 2 - channel]
    return rgb


def composite_cursor(frame: np.ndarray, cursor: CursorImage, origin: tuple[int, int]) -> None:
    """Draw `cursor` into `frame` (whose top-left is `origin` in root coordinates), in place: an RGB
    (H, W, 3) frame, or the (H, W, 4) BGRA grab itself (its fourth byte is left as it is).

    Premultiplied "over": out = c + dst * (255 - a) / 255, rounded half up; alpha 255 copies the
    sprite's colour and alpha 0 leaves the frame, so a binary-alpha cursor is composited exactly.
    Only the sprite's rectangle is touched, so compositing into the grab costs no frame copy.
    """
    height, width = frame.shape[:2]
    left = cursor.root_x - cursor.hotspot[0] - origin[0]
    top = cursor.root_y - cursor.hotspot[1] - origin[1]
    ch, cw = cursor.argb.shape
    x0, y0 = max(left, 0), max(top, 0)
    x1, y1 = min(left + cw, width), min(top + ch, height)
    if x0 >= x1 or y0 >= y1:
        return
    argb = cursor.argb[y0 - top : y1 - top, x0 - left : x1 - left]
    alpha = (argb >> 24).astype(np.uint32)
    if not alpha.any():
        return
    shifts = (0, 8, 16) if frame.shape[2] == 4 else (16, 8, 0)  # BGRA or RGB byte order
    sprite = np.stack([(argb >> shift) & 0xFF for shift in shifts], axis=-1).astype(np.uint32)
    region = frame[y0:y1, x0:x1, :3]
    under = region.astype(np.uint32)
    blended = sprite + (under * (255 - alpha)[..., None] + 127) // 255
    out = np.where(alpha[..., None] == 0, under, np.minimum(blended, 255))
    region[...] = out.astype(np.uint8)


def find_window(conn: Display, target: str | int) -> WindowInfo:
    """The viewable window with the largest area whose _NET_WM_PID is `target` (an int), or whose name
    or WM_CLASS is `target` (a str; case-insensitive; exact matches first, then names containing it)."""
    net_pid = conn.intern_atom("_NET_WM_PID")
    net_name = conn.intern_atom("_NET_WM_NAME")
    root = conn.screen().root
    exact, partial, seen = [], [], []
    stack = [root]
    while stack:
        window = stack.pop()
        try:
            children = window.query_tree().children
        except _GONE:
            continue  # it went away while we looked
        stack.extend(children)
        if window.id == root.id:
            continue
        try:
            info = _describe(window, net_pid, net_name)
            attributes = window.get_attributes()
            geometry = window.get_geometry()
        except _GONE:
            continue
        if attributes.map_state != X.IsViewable or attributes.win_class != X.InputOutput:
            continue
        if info.name or info.wm_class:
            seen.append(info.name or "/".join(info.wm_class))
        area = geometry.width * geometry.height
        if isinstance(target, int):
            if info.pid == target:
                exact.append((area, info))
            continue
        wanted = target.casefold()
        names = [info.name.casefold(), *(c.casefold() for c in info.wm_class)]
        if wanted in names:
            exact.append((area, info))
        elif any(wanted in name for name in names if name):
            partial.append((area, info))
    found = exact or partial
    if not found:
        what = f"process {target}" if isinstance(target, int) else f"name or class {target!r}"
        listing = ", ".join(repr(name) for name in sorted(set(seen))[:12]) or "none"
        raise WorkerError(
            "no_window",
            f"no viewable window of {what} on display {conn.get_display_name()}; "
            f"named windows there: {listing}",
        )
    return max(found, key=lambda pair: pair[0])[1]


def _describe(window, net_pid: int, net_name: int) -> WindowInfo:
    name = ""
    prop = window.get_full_property(net_name, X.AnyPropertyType)
    if prop is not None and prop.value:
        value = prop.value
        name = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if not name:
        legacy = window.get_wm_name()
        if legacy:
            name = legacy.decode("latin-1") if isinstance(legacy, bytes) else str(legacy)
    wm_class = tuple(window.get_wm_class() or ())
    prop = window.get_full_property(net_pid, X.AnyPropertyType)
    pid = int(prop.value[0]) if prop is not None and len(prop.value) else None
    return WindowInfo(window.id, name, wm_class, pid)


class Dispatched(NamedTuple):
    """One event the dispatcher sent: its kind, when it was due (timed batches), when it went out."""

    kind: str
    planned_ns: int
    sent_ns: int
    timed: bool


def _check_regions(regions: dict, size: tuple[int, int]) -> None:
    height, width = size
    for name, box in regions.items():
        valid = len(box) == 4 and all(isinstance(v, int) and not isinstance(v, bool) for v in box)
        x, y, w, h = box if valid else (0, 0, 0, 0)
        if not valid or w <= 0 or h <= 0 or x < 0 or y < 0 or x + w > width or y + h > height:
            raise WorkerError(
                "bad_region",
                f"region {name!r} {tuple(box)} is not (x, y, w, h) inside the {width}x{height} client",
            )


@dataclass
class _Batch:
    events: list[InputEvent]
    timed: bool
    done: threading.Event = field(default_factory=threading.Event)
    applied: int = 0
    dropped: int = 0
    error: BaseException | None = None


class X11Worker(Worker):
    """A `Worker` over one window of an X display.

    `window` is a window name or class (str) or a process id (int). `layout` is the view layout of
    captures ('full' when None). `game_log_path` is the game's game.log, tailed by `game_log`.
    """

    def __init__(
        self,
        display: str | None = None,
        window: str | int = DEFAULT_WINDOW,
        layout: ViewLayout | None = None,
        game_log_path: str | Path | None = None,
        *,
        safety: SafetyConfig | None = None,
        listen: bool = True,
    ) -> None:
        self.display_name = display or os.environ.get("DISPLAY", "")
        if not self.display_name:
            raise WorkerError("no_display", "no X display: set DISPLAY or pass the display (e.g. ':0')")
        self.target = window
        self._layout = layout if layout is not None else ViewLayout.named("full")
        self.game_log_path = Path(game_log_path).expanduser() if game_log_path is not None else None
        self._closed = False
        self._conns: list[Display] = []
        try:
            self._open(safety or SafetyConfig(), listen)
        except _GONE as error:
            # A game may replace its window while starting (the simulator's SDL window does): the one
            # found was destroyed before we could read it. A WorkerError lets the caller find it again.
            self._shutdown()
            raise WorkerError(
                "window",
                f"the window of {window!r} went away while attaching ({type(error).__name__}): try again",
            ) from None
        except BaseException:
            self._shutdown()
            raise
        atexit.register(self.close)

    # --- setup ------------------------------------------------------------------------------------

    def _connect(self) -> Display:
        try:
            conn = Display(self.display_name)
        except (xerror.DisplayError, xerror.DisplayConnectionError, OSError) as error:
            raise WorkerError("no_display", f"cannot open X display {self.display_name}: {error}") from None
        self._conns.append(conn)
        return conn

    def _open(self, safety: SafetyConfig, listen: bool) -> None:
        import mss

        self._x = self._connect()  # the callers' connection: capture, focus, attach, status
        self._x_lock = threading.RLock()  # in case a caller uses the worker from several threads
        for extension in ("XFIXES", "XTEST"):
            if not self._x.has_extension(extension):
                raise WorkerError("x_extension", f"the X server lacks {extension}")
        self._x.xfixes_query_version()  # XFixes answers nothing before its version is asked
        self.window = find_window(self._x, self.target)
        self._win = self._x.create_resource_object("window", self.window.id)
        self._rect = self._read_rect(self._x, self._win)
        self._sct = mss.MSS(display=self.display_name, backend="xshmgetimage", with_cursor=False)
        self.ledger = InjectionLedger()

        self._input_conn = self._connect()  # dispatcher + releases, always under guard.lock
        self._input_win = self._input_conn.create_resource_object("window", self.window.id)
        self._input = XTestInput(self._input_conn, on_send=self.ledger.add)
        self._guardian = ReleaseGuardian(self.display_name)
        self.guard = InputGuard((self._rect[3], self._rect[2]), self._release_on_x, config=safety)

        self._watch_conn = self._connect()
        self._watch_win = self._watch_conn.create_resource_object("window", self.window.id)
        self.watchdog = Watchdog(self.guard, focus_probe=self._watch_probe)

        self.dispatch_log: collections.deque[Dispatched] = collections.deque(maxlen=4096)
        self._batches: queue.Queue[_Batch | None] = queue.Queue()
        self._dispatcher = threading.Thread(target=self._dispatch_loop, name="x11-apply", daemon=True)

        self.listener: RecordListener | None = None
        if listen:
            self.listener = RecordListener(
                self.display_name,
                client_rect=lambda: self._rect,
                focus=lambda: self.guard.focus,
                on_stop=lambda: self.guard.stop("f12"),
                on_lost=lambda error: self.guard.stop(f"input listener lost: {error}"),
                ledger=self.ledger,
            )
        self.guard.focus = self._has_focus(self._x, self._win)
        self._dispatcher.start()
        self.watchdog.start()
        if self.listener is not None:
            self.listener.start()

    # --- geometry and focus (each takes the connection of the calling thread) ---------------------

    @staticmethod
    def _read_rect(conn: Display, win) -> tuple[int, int, int, int]:
        geometry = win.get_geometry()
        origin = conn.screen().root.translate_coords(win, 0, 0)
        return origin.x, origin.y, geometry.width, geometry.height

    def _has_focus(self, conn: Display, win) -> bool:
        """Whether the X input focus is the game window or inside it (PointerRoot: the pointer is)."""
        try:
            return self._focus_walk(conn, win)
        except _GONE:  # the game window, or the focused one, went away while we looked
            return False

    def _focus_walk(self, conn: Display, win) -> bool:
        focus = conn.get_input_focus().focus
        if focus == X.PointerRoot:
            reply = conn.screen().root.query_pointer()
            if not reply.same_screen:
                return False
            rx, ry = reply.root_x, reply.root_y
            left, top, width, height = self._read_rect(conn, win)
            return left <= rx < left + width and top <= ry < top + height
        if isinstance(focus, int):  # None (0): nothing has focus
            return False
        root_id = conn.screen().root.id
        node = focus
        for _ in range(64):  # a window tree deeper than this is not a game's
            if node.id == win.id:
                return True
            if node.id == root_id:
                return False
            parent = node.query_tree().parent
            if isinstance(parent, int) or parent is None:
                return False
            node = parent
        return False

    def _watch_probe(self) -> bool:
        """The watchdog's look at the server: refresh the rectangle, and return the focus."""
        try:
            rect = self._read_rect(self._watch_conn, self._watch_win)
        except _GONE:
            # The game closed. Stop, not just "no focus": X reuses window ids, and a restarted game
            # may come back under this one; input resumes only when someone arms the worker again.
            self.guard.stop("the game window is gone")
            return False
        self._update_rect(rect)
        return self._has_focus(self._watch_conn, self._watch_win)

    def _update_rect(self, rect: tuple[int, int, int, int]) -> None:
        if rect != self._rect:
            self._rect = rect
            self.guard.set_size((rect[3], rect[2]))

    @property
    def client_rect(self) -> tuple[int, int, int, int]:
        """The client rectangle (x, y, width, height) in root coordinates, as last read."""
        return self._rect

    # --- Worker: attach, status, focus -----------------------------------------------------------

    def attach(self) -> dict:
        """Find the game's window again and report it; if the game restarted, follow it there.

        The window is looked up afresh rather than trusted by id: X reuses ids, and a restarted game's
        window can get the id its old one had.
        """
        self.guard.touch()
        with self._x_lock:
            found = find_window(self._x, self.target)
            if (found.id, found.pid) != (self.window.id, self.window.pid):
                self._switch_window(found)
            self.window = found  # the title may have changed
            self._update_rect(self._read_rect(self._x, self._win))
        return {
            "game": "x11",
            "size": [self._rect[2], self._rect[3]],
            "pid": self.window.pid,
            "window": {"id": self.window.id, "name": self.window.name, "class": list(self.window.wm_class)},
            "origin": [self._rect[0], self._rect[1]],
            "display": self.display_name,
            "layout": self.layout.version,
        }

    def _switch_window(self, info: WindowInfo) -> None:
        """Follow the game to a new window. Input is disarmed: a new game is armed deliberately."""
        with self.guard.lock:
            self.guard.disarm()
            self.window = info
            self._win = self._x.create_resource_object("window", info.id)
            self._input_win = self._input_conn.create_resource_object("window", info.id)
            self._watch_win = self._watch_conn.create_resource_object("window", info.id)
            self._update_rect(self._read_rect(self._x, self._win))
        log.info("following the game to window %#x (%s)", info.id, info.name)

    def status(self) -> dict:
        self.guard.touch()
        state = self.guard.status()
        state.update(
            focus=self.focus(),
            window=self.window.id,
            size=[self._rect[2], self._rect[3]],
            origin=[self._rect[0], self._rect[1]],
            watchdog=self.watchdog.alive,
            listener=None if self.listener is None else self.listener.alive,
            guardian=self._guardian.alive,
            pending_batches=self._batches.qsize(),
            capture_notes=self._sct.performance_status,  # e.g. whether MIT-SHM works
        )
        return state

    def focus(self) -> bool:
        self.guard.touch()
        with self._x_lock:
            return self._has_focus(self._x, self._win)

    # --- capture ----------------------------------------------------------------------------------

    @property
    def layout(self) -> ViewLayout:
        return self._layout

    def grab(self) -> tuple[np.ndarray, CursorImage, int]:
        """The client area as (H, W, 3) RGB with the cursor drawn, the cursor reply, and the grab time."""
        with self._x_lock:
            bgra, cursor, t_ns, _ = self._grab()
        return bgra_to_rgb(bgra), cursor, t_ns

    def _grab(self) -> tuple[np.ndarray, CursorImage, int, tuple[int, int]]:
        try:
            self._update_rect(self._read_rect(self._x, self._win))
        except _GONE:
            raise WorkerError(
                "window_gone", f"window {self.window.id:#x} is gone; attach again once the game is back"
            ) from None
        left, top, width, height = self._rect
        screen = self._x.screen()
        if (
            left < 0
            or top < 0
            or left + width > screen.width_in_pixels
            or top + height > screen.height_in_pixels
        ):
            raise WorkerError(
                "offscreen",
                f"the {width}x{height} client at ({left}, {top}) is not wholly on the "
                f"{screen.width_in_pixels}x{screen.height_in_pixels} screen; move the window onto it",
            )
        t_ns = time.monotonic_ns()
        shot = self._sct.grab({"left": left, "top": top, "width": width, "height": height})
        cursor = self._cursor()
        # mss hands over a fresh bytearray: the cursor goes straight into the grab, and the views
        # read it as BGRA (compute_views_bgra); an RGB copy is made only when a caller wants pixels.
        bgra = np.frombuffer(shot.raw, dtype=np.uint8).reshape(height, width, 4)
        composite_cursor(bgra, cursor, (left, top))
        return bgra, cursor, t_ns, (left, top)

    def capture(self, request: CaptureRequest | None = None) -> Capture:
        self.guard.touch()
        request = request or CaptureRequest()
        _check_regions(request.regions, (self._rect[3], self._rect[2]))
        with self._x_lock:
            bgra, cursor, t_ns, (left, top) = self._grab()
        # The watchdog reads the focus every 25 ms; asking again here would add round trips to the X
        # server, which a busy machine (the game itself) makes slow, for a flag a recorder reads.
        focus = self.guard.focus
        height, width = bgra.shape[:2]
        _check_regions(request.regions, (height, width))  # the window may have been resized meanwhile
        pointer = (
            min(max(cursor.root_x - left, 0), width - 1),
            min(max(cursor.root_y - top, 0), height - 1),
        )
        capture = Capture(t_ns=t_ns, size=(height, width), pointer=pointer, focus=focus)
        if request.views:
            try:
                capture.views = compute_views_bgra(bgra, pointer, self.layout)
            except ValueError as error:  # a client too small for the layout
                raise WorkerError("bad_size", str(error)) from None
        for name, (x, y, w, h) in request.regions.items():
            capture.regions[name] = bgra_to_rgb(bgra[y : y + h, x : x + w])
        if request.full:
            capture.frame = bgra_to_rgb(bgra)
        return capture

    def _cursor(self) -> CursorImage:
        reply = self._x.xfixes_get_cursor_image(self._win)
        argb = np.asarray(reply.cursor_image, dtype=np.uint32).reshape(reply.height, reply.width)
        return CursorImage(reply.x, reply.y, (reply.xhot, reply.yhot), argb)

    def pointer_image(self) -> tuple[np.ndarray, tuple[int, int]]:
        self.guard.touch()
        with self._x_lock:
            cursor = self._cursor()
        return cursor.rgba(), cursor.hotspot

    # --- input ------------------------------------------------------------------------------------

    def arm(self, mode: ArmMode) -> None:
        self.guard.touch()
        if not self.watchdog.alive:
            raise WorkerError(
                "unsafe", f"the watchdog is not running ({self.watchdog.error}); open a new worker"
            )
        if self.listener is not None and not self.listener.alive:
            raise WorkerError("unsafe", "the input listener is not running, so F12 cannot be heard")
        if not self._guardian.alive:
            raise WorkerError("unsafe", "the release guardian is not running; open a new worker")
        self.guard.arm(mode)

    def disarm(self) -> None:
        self.guard.touch()
        self.guard.disarm()

    def release(self) -> None:
        self.guard.touch()
        self.guard.release("request")

    def apply(self, events: list[InputEvent], timed: bool = False) -> dict:
        self.guard.touch()
        batch = _Batch(self.guard.check(events, focus=self.focus(), timed=timed), timed)
        if not batch.events:
            return {"applied": 0, "dropped": 0}
        self._batches.put(batch)
        if timed:
            return {"queued": len(batch.events)}
        batch.done.wait()
        if batch.error is not None:
            raise WorkerError("apply_failed", f"the X server refused input: {batch.error}")
        return {"applied": batch.applied, "dropped": batch.dropped}

    def _dispatch_loop(self) -> None:
        while True:
            batch = self._batches.get()
            if batch is None:
                return
            try:
                self._dispatch(batch)
            except _X_ERRORS as error:
                batch.error = error
                log.warning("applying input failed: %s", error)
            finally:
                batch.done.set()

    def _dispatch(self, batch: _Batch) -> None:
        with self.guard.lock:
            left, top, _, _ = self._read_rect(self._input_conn, self._input_win)
        for index, event in enumerate(batch.events):
            if batch.timed:
                self._sleep_until(event.t_ns)
            with self.guard.lock:
                focus = self._has_focus(self._input_conn, self._input_win)
                if self._closed or not self.guard.admit(event, focus=focus):
                    batch.dropped = len(batch.events) - index
                    break
                self._tell_guardian(pressing=event)
                self._send(event, left, top)
                self.guard.note(event)
                self._tell_guardian()
                self._input.flush()
                self.dispatch_log.append(Dispatched(event.kind, event.t_ns, time.monotonic_ns(), batch.timed))
                batch.applied += 1
        with self.guard.lock:
            self._input.sync()

    def _send(self, event: InputEvent, left: int, top: int) -> None:
        if event.kind == "move":
            self._input.move(left + event.x, top + event.y)
        elif event.kind in ("button_down", "button_up"):
            self._input.button(event.button, event.kind == "button_down")
        elif event.kind == "wheel":
            self._input.wheel(event.delta)
        else:
            self._input.key(event.key, event.kind == "key_down")

    @staticmethod
    def _sleep_until(t_ns: int) -> None:
        while True:
            left = t_ns - time.monotonic_ns()
            if left <= 0:
                return
            time.sleep(left / 1e9)

    def _tell_guardian(self, pressing: InputEvent | None = None) -> None:
        """Tell the guardian what is held, counting `pressing` before it is sent (under guard.lock)."""
        keys = [self._input.keycodes[vk] for vk in self.guard.held_keys]
        buttons = [BUTTON_NUMBERS[name] for name in self.guard.held_buttons]
        if pressing is not None:
            if pressing.kind == "key_down":
                keys.append(self._input.keycodes[pressing.key])
            elif pressing.kind == "button_down":
                buttons.append(BUTTON_NUMBERS[pressing.button])
            elif pressing.kind == "wheel":
                buttons.append(WHEEL_UP if pressing.delta > 0 else WHEEL_DOWN)
            else:
                return
        self._guardian.hold(keys, buttons)

    def _release_on_x(self, keys: list[int], buttons: list[str]) -> None:
        # Runs under guard.lock, on whichever thread decided to release.
        for button in buttons:
            self._input.button(button, False)
        for key in keys:
            self._input.key(key, False)
        self._input.sync()
        self._guardian.hold((), ())

    # --- the rest of Worker -----------------------------------------------------------------------

    def events(self) -> list[InputEvent]:
        self.guard.touch()
        return [] if self.listener is None else self.listener.drain()

    def game_log(self, offset: int = 0) -> tuple[list[str], int]:
        """Complete lines from byte `offset`; a file shorter than `offset` was restarted, so from 0."""
        self.guard.touch()
        if offset < 0:
            raise WorkerError("bad_offset", f"game_log offset must be >= 0, not {offset}")
        if self.game_log_path is None or not self.game_log_path.exists():
            return [], offset
        with open(self.game_log_path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if offset > size:
                offset = 0
            handle.seek(offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next call
        lines = data[:end].decode("utf-8", "replace").splitlines()
        return lines, offset + end

    def now_ns(self) -> int:
        return time.monotonic_ns()

    def wait_until(self, t_ns: int) -> None:
        self._sleep_until(t_ns)

    def telemetry(self) -> dict:
        self.guard.touch()
        import psutil

        lateness = sorted((d.sent_ns - d.planned_ns) / 1e6 for d in list(self.dispatch_log) if d.timed)
        result: dict = {
            "worker": {"rss_mb": psutil.Process().memory_info().rss / 2**20},
            "apply_lateness_ms": {
                "count": len(lateness),
                "p50": lateness[len(lateness) // 2] if lateness else None,
                "max": lateness[-1] if lateness else None,
            },
            "human_events_dropped": 0 if self.listener is None else self.listener.dropped,
        }
        if self.window.pid is not None:
            try:
                game = psutil.Process(self.window.pid)
                result["game"] = {
                    "pid": self.window.pid,
                    "cpu_percent": game.cpu_percent(interval=None),
                    "rss_mb": game.memory_info().rss / 2**20,
                }
            except psutil.Error:
                result["game"] = {"pid": self.window.pid, "running": False}
        return result

    def close(self) -> None:
        """Release everything held, stop the threads, close the connections. Safe to call twice."""
        if self._closed:
            return
        try:
            self.guard.disarm()
        except _X_ERRORS as error:
            log.warning("releasing input at close failed: %s", error)
        self._closed = True
        self._shutdown()
        atexit.unregister(self.close)

    def _shutdown(self) -> None:
        self._closed = True
        if getattr(self, "listener", None) is not None:
            self.listener.stop()
        if getattr(self, "watchdog", None) is not None:
            self.watchdog.stop()
        dispatcher = getattr(self, "_dispatcher", None)
        if dispatcher is not None and dispatcher.is_alive():
            self._batches.put(None)
            dispatcher.join(timeout=2.0)
        if getattr(self, "_sct", None) is not None:
            self._sct.close()
        if getattr(self, "_guardian", None) is not None:
            self._guardian.close()
        for conn in self._conns:
            with contextlib.suppress(Exception):
                conn.close()
        self._conns.clear()
