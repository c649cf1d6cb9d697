"""A STAND-IN for HOI4 in tests: not the game. It opens an X window named like the game's, writes a
game.log with an ARENA line into the user folder, and exits when the window is asked to close.

The control tests put it in a fake Steam tree as the `hoi4` binary (see test_control.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from Xlib import X, Xatom, display


def main() -> None:
    userdir = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("-userdir=")), None)
    userdir = Path(userdir or os.environ["HOI4_STANDIN_DEFAULT_USERDIR"])
    (userdir / "logs").mkdir(parents=True, exist_ok=True)
    conn = display.Display()
    screen = conn.screen()
    window = screen.root.create_window(
        0,
        0,
        640,
        360,
        0,
        screen.root_depth,
        X.InputOutput,
        X.CopyFromParent,
        background_pixel=screen.black_pixel,
        event_mask=X.StructureNotifyMask,
    )
    window.set_wm_name("Hearts of Iron IV")
    window.set_wm_class("hoi4", "hoi4")
    window.change_property(conn.intern_atom("_NET_WM_PID"), Xatom.CARDINAL, 32, [os.getpid()])
    delete = conn.intern_atom("WM_DELETE_WINDOW")
    window.change_property(conn.intern_atom("WM_PROTOCOLS"), Xatom.ATOM, 32, [delete])
    window.map()
    conn.sync()
    with open(userdir / "logs" / "game.log", "a", encoding="utf-8") as log:
        log.write("[00:00:01][standin.cpp:1]: stand-in for HOI4 started\n")
        log.write(
            "[00:00:02][effectbase.cpp:95]: ARENA start date=1936.01.01.00 h=0 arena=bay seed=1 tags=BLU,RED version=1\n"
        )
    while True:
        event = conn.next_event()
        if event.type == X.ClientMessage and event.data[1][0] == delete:
            window.destroy()
            conn.sync()
            return


if __name__ == "__main__":
    main()
