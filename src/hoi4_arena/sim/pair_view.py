"""One side's window of a two-display pair game: shows the frames the world sends, sends back its input.

`pair_host.py` starts one of these per side on that side's X display (DISPLAY set), with one end of a
Unix socket pair as file descriptor FD. The window holds no game: it draws each `frame` message (the
side's scene, without the pointer; the cursor is the simulator's sprite, as in `window.py`) and sends
its SDL events to the world as the same `SimEvent`s the one-player window makes (`pair_wire.py`), with
`inside` when the pointer enters or leaves it and `focus_lost` when it loses the keyboard (the world
then lets go of that side's held keys and buttons). It acknowledges each frame shown (`shown`), so the
world never queues frames faster than the window draws them.

It ends, exit 0, when the world goes away (end of file), when its close button is pressed (it says
`closed` first) or on SIGTERM; without a display it says so on stderr (exit 2).

Not run by hand: python -m hoi4_arena.sim.pair_host plains:1 2 640x360 --displays :1 :2 starts two.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys

from hoi4_arena.sim.pair_wire import Link, events_to_wire
from hoi4_arena.sim.window import IDLE_WAIT_MS, parse_size, sdl_keys, to_sim_events


def run_view(fd: int, title: str, size: tuple[int, int]) -> int:
    """Show the world's frames in a window titled `title` until either end closes; the exit status."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame

    from hoi4_arena.sim.cursor import cursor_sprite

    link = Link(socket.socket(fileno=fd))
    h, w = size
    try:
        pygame.display.init()
        # SDL replaces a window at its first get_surface: do that while it is hidden, so an X11 worker
        # looking for a viewable window by title only ever finds the one that stays.
        window = pygame.Window(title, (w, h), position=(0, 0), hidden=True)
        window.get_surface()
        window.show()
    except pygame.error as error:
        print(
            f"error: cannot open a window ({error}); is DISPLAY set to a running X server?", file=sys.stderr
        )
        link.close()
        return 2
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    try:
        pygame.key.stop_text_input()  # plain key events only, as the one-player window
        rgba, hotspot = cursor_sprite()
        sprite = pygame.image.frombuffer(rgba.tobytes(), (rgba.shape[1], rgba.shape[0]), "RGBA")
        pygame.mouse.set_cursor(pygame.cursors.Cursor(hotspot, sprite))
        keys = sdl_keys(pygame)
        link.send({"kind": "ready", "size": [h, w]})
        frame = None  # the last frame, drawn again when the window is exposed
        while not stopping and not link.closed:
            first = pygame.event.wait(IDLE_WAIT_MS)
            batch = []
            for event in [first, *pygame.event.get()]:
                if event.type in (pygame.QUIT, pygame.WINDOWCLOSE):
                    stopping = True
                elif event.type in (pygame.WINDOWENTER, pygame.WINDOWLEAVE):
                    link.send({"kind": "input", "events": events_to_wire(batch)})
                    batch = []
                    link.send({"kind": "inside", "value": event.type == pygame.WINDOWENTER})
                elif event.type == pygame.WINDOWFOCUSLOST:
                    link.send({"kind": "input", "events": events_to_wire(batch)})
                    batch = []
                    link.send({"kind": "focus_lost"})
                elif event.type in (pygame.WINDOWEXPOSED, pygame.VIDEOEXPOSE) and frame is not None:
                    window.get_surface().blit(frame, (0, 0))
                    window.flip()
                else:
                    batch.extend(to_sim_events(event, pygame, keys))
            if batch:
                link.send({"kind": "input", "events": events_to_wire(batch)})
            if stopping:
                link.send({"kind": "closed"})
            newest = None
            for header, body in link.read():
                if header["kind"] == "frame" and tuple(header["size"]) == (h, w) and len(body) == h * w * 3:
                    newest = body
            if newest is not None:
                frame = pygame.image.frombytes(newest, (w, h), "RGB")
                window.get_surface().blit(frame, (0, 0))
                window.flip()
                link.send({"kind": "shown"})
        # Hand the world our last words (a `closed`) before the socket goes.
        for _ in range(10):
            if not link.pending or link.closed:
                break
            select.select([], [link], [], 0.5)
            link.flush()
        return 0
    finally:
        window.destroy()
        pygame.display.quit()
        link.close()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: python -m hoi4_arena.sim.pair_view FD WIDTHxHEIGHT TITLE", file=sys.stderr)
        sys.exit(2)
    sys.exit(run_view(int(sys.argv[1]), sys.argv[3], parse_size(sys.argv[2])))
