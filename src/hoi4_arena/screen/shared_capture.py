"""A worker whose last capture serves every later request of the same instant that it covers.

In one decision the player's capture and the recorder's frame are one grab (one render on the
simulator), and the session stores the very frame the player saw. Anything that moves time or the
game (input, waiting, arming, releasing) forgets the capture.
"""

from __future__ import annotations

from hoi4_arena.screen.worker import ArmMode, Capture, CaptureRequest, Worker


def covers(last: Capture, request: CaptureRequest) -> bool:
    """Whether `last` holds everything `request` asks for (views, the full frame, every region)."""
    return (
        (last.views or not request.views)
        and (last.frame is not None or not request.full)
        and all(last.regions.get(name) is not None for name in request.regions)
    )


class SharedCapture(Worker):
    """A worker whose last capture serves every request of the same instant that it covers: the player's
    capture and the recorder's frame are one grab (one render on the simulator), and the session
    stores the very frame the player saw. Input, time and arming forget it."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self._last: Capture | None = None

    def capture(self, request: CaptureRequest | None = None) -> Capture:
        request = request or CaptureRequest()
        last = self._last
        if last is not None and covers(last, request):
            return last
        self._last = self.worker.capture(request)
        return self._last

    def _forget(self) -> None:
        self._last = None

    def apply(self, events: list, timed: bool = False) -> dict:
        self._forget()
        return self.worker.apply(events, timed)

    def wait_until(self, t_ns: int) -> None:
        self._forget()
        self.worker.wait_until(t_ns)

    def arm(self, mode: ArmMode) -> None:
        self._forget()
        self.worker.arm(mode)

    def disarm(self) -> None:
        self._forget()
        self.worker.disarm()

    def release(self) -> None:
        self._forget()
        self.worker.release()

    def attach(self) -> dict:
        return self.worker.attach()

    def status(self) -> dict:
        return self.worker.status()

    def focus(self) -> bool:
        return self.worker.focus()

    def events(self) -> list:
        return self.worker.events()

    def game_log(self, offset: int = 0) -> tuple[list[str], int]:
        return self.worker.game_log(offset)

    def pointer_image(self):
        return self.worker.pointer_image()

    def now_ns(self) -> int:
        return self.worker.now_ns()

    def telemetry(self) -> dict:
        return self.worker.telemetry()

    def close(self) -> None:
        self._forget()
        self.worker.close()
