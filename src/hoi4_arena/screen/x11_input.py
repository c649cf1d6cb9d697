"""Input on an X display through XTest: virtual-key codes to keysyms to keycodes, buttons, wheel, motion.

The wire speaks Windows virtual-key codes (`events.py`); X speaks keycodes, which depend on the
server's keyboard map. This module holds the one table between them (`VK_KEYSYMS`), the reverse
mapping for input a person makes (`keycode_to_vk`), and `XTestInput`, which sends fake device events
on one python-xlib connection. It knows nothing about safety: `x11_worker.py` calls it only for events
the `InputGuard` admitted.

An X server keeps a key that XTest pressed held after the client that pressed it is gone, so a worker
killed outright (SIGKILL, the OOM killer) would leave its keys down. `ReleaseGuardian` is the answer: a
small child process, in a session of its own, that the worker tells what it holds (before each press)
over a pipe; when the pipe closes, however the worker ended, the guardian releases what was last held.

Try: DISPLAY=:N python -m hoi4_arena.screen.x11_input   # prints the server's keycode for every key
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterable

from Xlib import XK, X
from Xlib.display import Display
from Xlib.ext import xtest

from hoi4_arena.screen.events import (
    KEY_NAMES,
    VK_BACK,
    VK_CONTROL,
    VK_DIGITS,
    VK_DOWN,
    VK_ESCAPE,
    VK_F12,
    VK_LEFT,
    VK_LETTERS,
    VK_OEM_3,
    VK_OEM_MINUS,
    VK_OEM_PERIOD,
    VK_OEM_PLUS,
    VK_RETURN,
    VK_RIGHT,
    VK_SHIFT,
    VK_SPACE,
    VK_TAB,
    VK_UP,
)
from hoi4_arena.screen.worker_error import WorkerError

# The keysym each virtual-key code presses: the unshifted symbol of a US layout, left-hand modifiers.
VK_KEYSYMS: dict[int, int] = {
    VK_BACK: XK.XK_BackSpace,
    VK_TAB: XK.XK_Tab,
    VK_RETURN: XK.XK_Return,
    VK_SHIFT: XK.XK_Shift_L,
    VK_CONTROL: XK.XK_Control_L,
    VK_ESCAPE: XK.XK_Escape,
    VK_SPACE: XK.XK_space,
    VK_LEFT: XK.XK_Left,
    VK_UP: XK.XK_Up,
    VK_RIGHT: XK.XK_Right,
    VK_DOWN: XK.XK_Down,
    VK_F12: XK.XK_F12,
    VK_OEM_PLUS: XK.XK_equal,
    VK_OEM_MINUS: XK.XK_minus,
    VK_OEM_PERIOD: XK.XK_period,
    VK_OEM_3: XK.XK_grave,
    **{vk: XK.XK_0 + (vk - VK_DIGITS[0]) for vk in VK_DIGITS},
    **{vk: XK.XK_a + (vk - VK_LETTERS[0]) for vk in VK_LETTERS},
}
assert set(VK_KEYSYMS) == set(KEY_NAMES), "every named key needs a keysym"

# What a person's key means as a virtual-key code: both hands' modifiers, both cases, keypad Enter.
KEYSYM_VKS: dict[int, int] = {
    **{keysym: vk for vk, keysym in VK_KEYSYMS.items()},
    XK.XK_Shift_R: VK_SHIFT,
    XK.XK_Control_R: VK_CONTROL,
    XK.XK_KP_Enter: VK_RETURN,
    **{XK.XK_A + (vk - VK_LETTERS[0]): vk for vk in VK_LETTERS},
}

# X's pointer buttons: 1 left, 2 middle, 3 right; the wheel is buttons 4 (up) and 5 (down).
BUTTON_NUMBERS: dict[str, int] = {"left": 1, "middle": 2, "right": 3}
BUTTON_NAMES: dict[int, str] = {number: name for name, number in BUTTON_NUMBERS.items()}
WHEEL_UP, WHEEL_DOWN = 4, 5

Sent = tuple[int, int, int, int]
"""(X event type, detail, root x, root y) of one fake event, for telling our own input from a person's."""


def vk_keycodes(conn: Display) -> dict[int, int]:
    """The server's keycode for every virtual-key code; refuses a keyboard map that lacks one."""
    keycodes = {}
    missing = []
    for vk, keysym in VK_KEYSYMS.items():
        keycode = conn.keysym_to_keycode(keysym)
        if keycode == 0:
            missing.append(KEY_NAMES[vk])
        keycodes[vk] = keycode
    if missing:
        raise WorkerError(
            "keymap", f"the X keyboard map has no key for {', '.join(missing)}; use a US-like layout"
        )
    return keycodes


def keycode_to_vk(conn: Display, keycode: int) -> int | None:
    """The virtual-key code of a keycode on this server, or None for keys the wire cannot express."""
    for index in (0, 1):
        vk = KEYSYM_VKS.get(conn.keycode_to_keysym(keycode, index))
        if vk is not None:
            return vk
    return None


class XTestInput:
    """Fake device events on one connection. Not thread-safe: the caller serialises all use.

    `on_send` hears about every event just before it is sent, so the XRecord listener can tell these
    events from a person's.
    """

    def __init__(self, conn: Display, on_send: Callable[[Sent], None] | None = None) -> None:
        if not conn.has_extension("XTEST"):
            raise WorkerError("no_xtest", "the X server lacks the XTEST extension; input cannot be applied")
        self.conn = conn
        self.keycodes = vk_keycodes(conn)
        self._on_send = on_send

    def move(self, root_x: int, root_y: int) -> None:
        self._send(X.MotionNotify, 0, root_x, root_y)

    def button(self, button: str, down: bool) -> None:
        self._send(X.ButtonPress if down else X.ButtonRelease, BUTTON_NUMBERS[button])

    def wheel(self, delta: int) -> None:
        """`delta` notches: each a press and release of button 4 (up, delta > 0) or 5 (down)."""
        number = WHEEL_UP if delta > 0 else WHEEL_DOWN
        for _ in range(abs(delta)):
            self._send(X.ButtonPress, number)
            self._send(X.ButtonRelease, number)

    def key(self, vk: int, down: bool) -> None:
        self._send(X.KeyPress if down else X.KeyRelease, self.keycodes[vk])

    def flush(self) -> None:
        self.conn.flush()

    def sync(self) -> None:
        self.conn.sync()

    def _send(self, event_type: int, detail: int, root_x: int = 0, root_y: int = 0) -> None:
        if self._on_send is not None:
            self._on_send((event_type, detail, root_x, root_y))
        if event_type == X.MotionNotify:
            xtest.fake_input(self.conn, event_type, detail, x=root_x, y=root_y)
        else:
            xtest.fake_input(self.conn, event_type, detail)


class ReleaseGuardian:
    """A child process that releases what the worker holds once the worker is gone, however it went."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hoi4_arena.screen.x11_input", "--guardian", "--display", display],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            # Its own session: a signal to the worker's process group (Ctrl-C) must not take it too.
            start_new_session=True,
        )
        self._last: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
        self.error: BaseException | None = None

    def hold(self, keycodes: Iterable[int], buttons: Iterable[int]) -> None:
        """What would need releasing if the worker died now (say it before pressing, not after)."""
        state = (tuple(sorted(set(keycodes))), tuple(sorted(set(buttons))))
        if state == self._last or self.error is not None:
            return
        try:
            self.process.stdin.write((json.dumps({"keys": state[0], "buttons": state[1]}) + "\n").encode())
            self.process.stdin.flush()
        except OSError as error:
            self.error = error
            return
        self._last = state

    @property
    def alive(self) -> bool:
        return self.error is None and self.process.poll() is None

    def close(self, timeout: float = 5.0) -> None:
        """End the guardian (it releases whatever it was last told, normally nothing)."""
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=timeout)


def guard_until_eof(display: str, lines: Iterable[bytes]) -> dict:
    """The guardian's life: follow the held state from `lines`; at their end, release it."""
    conn = Display(display)
    held: dict = {"keys": [], "buttons": []}
    for line in lines:
        if line.strip():
            held = json.loads(line)
    for number in held["buttons"]:
        xtest.fake_input(conn, X.ButtonRelease, int(number))
    for keycode in held["keys"]:
        xtest.fake_input(conn, X.KeyRelease, int(keycode))
    conn.sync()
    conn.close()
    return held


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m hoi4_arena.screen.x11_input", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--display", default=None, help="X display (default: $DISPLAY)")
    parser.add_argument("--guardian", action="store_true", help="run as a worker's release guardian")
    args = parser.parse_args()
    if args.guardian:
        released = guard_until_eof(args.display, sys.stdin.buffer)
        if released["keys"] or released["buttons"]:
            logging.basicConfig(stream=sys.stderr, format="x11 guardian: %(message)s")
            logging.getLogger(__name__).warning(
                "the worker ended holding input; released keycodes %s, buttons %s",
                released["keys"],
                released["buttons"],
            )
        return
    conn = Display(args.display)
    for code, keycode in sorted(vk_keycodes(conn).items()):
        print(f"{KEY_NAMES[code]:>10}  vk=0x{code:02X}  keycode={keycode}")
    conn.close()


if __name__ == "__main__":
    main()
