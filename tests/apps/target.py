"""Start `pattern_window.py` on an X display and read what it received (test and bench helper)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

APP = Path(__file__).with_name("pattern_window.py")


class PatternApp:
    """A running pattern window: its pid, X window id, and the events it logged."""

    def __init__(
        self,
        display: str,
        log: Path,
        *,
        width: int = 640,
        height: int = 360,
        seed: int = 0,
        title: str = "hoi4-arena pattern window",
    ) -> None:
        self.display = display
        self.log = Path(log)
        self.size = (height, width)
        self.seed = seed
        self.title = title
        self.log.write_text("")
        env = {**os.environ, "DISPLAY": display, "SDL_VIDEODRIVER": "x11", "SDL_AUDIODRIVER": "dummy"}
        self.process = subprocess.Popen(
            [sys.executable, str(APP), "--log", str(self.log), "--width", str(width), "--height", str(height)]
            + ["--seed", str(seed), "--title", title],
            env=env,
            stdin=subprocess.DEVNULL,
        )
        try:
            ready = self.wait_for(lambda event: event["type"] == "ready", timeout=20.0)
            # The first expose means the pattern is on the screen, not just the window mapped.
            self.wait_for(lambda event: event["type"] in ("VideoExpose", "WindowExposed"), timeout=20.0)
        except BaseException:
            self.stop()
            raise
        self.pid = ready["pid"]
        self.window = ready["window"]

    def _lines(self) -> list[str]:
        # The window may be halfway through writing a line: only complete lines count.
        text = self.log.read_text()
        return text[: text.rfind("\n") + 1].splitlines()

    def records(self, since: int = 0) -> list[dict]:
        """Every logged event from record index `since` on."""
        return [json.loads(line) for line in self._lines()[since:]]

    def mark(self) -> int:
        """The index the next event will have: pass it to `records` or `inputs` to see only newer ones."""
        return len(self._lines())

    def settled_mark(self, quiet: float = 0.15, timeout: float = 5.0) -> int:
        """`mark` once the log has not grown for `quiet` seconds (events of earlier steps all logged)."""
        deadline = time.monotonic() + timeout
        mark, still_since = self.mark(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.02)
            now = self.mark()
            if now != mark:
                mark, still_since = now, time.monotonic()
            elif time.monotonic() - still_since >= quiet:
                return mark
        raise TimeoutError(f"the pattern window kept logging for {timeout} s")

    def inputs(self, since: int = 0) -> list[dict]:
        """Only the input events (keys, buttons, wheel, motion), from `since` on."""
        kinds = {"KeyDown", "KeyUp", "MouseButtonDown", "MouseButtonUp", "MouseWheel", "MouseMotion"}
        return [event for event in self.records(since) if event["type"] in kinds]

    def wait_for(self, predicate: Callable[[dict], bool], since: int = 0, timeout: float = 5.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.records(since):
                if predicate(event):
                    return event
            if self.process.poll() is not None:
                raise RuntimeError(f"the pattern window exited with status {self.process.returncode}")
            time.sleep(0.01)
        raise TimeoutError(f"the pattern window logged no such event within {timeout} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def __enter__(self) -> PatternApp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
