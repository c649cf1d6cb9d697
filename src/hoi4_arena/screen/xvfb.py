"""A private X server (Xvfb) on a free display number, started and stopped by PID.

Tests use it through the `xvfb` fixture; `record-ai --game x11` uses it to run the simulator's window
without taking the user's display. Xvfb picks the display number itself (`-displayfd`), so two
servers started at once never race for the same number.

Try: python -m hoi4_arena.screen.xvfb   # starts one, prints its DISPLAY, stops it
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

from hoi4_arena.errors import UserError
from hoi4_arena.processes import ending_with_parent


@dataclass
class Xvfb:
    """A running Xvfb; use as a context manager or call `start` and `stop`."""

    width: int = 1920
    height: int = 1080
    depth: int = 24
    process: subprocess.Popen | None = field(default=None, init=False, repr=False)
    display: str = field(default="", init=False)

    def start(self, timeout: float = 10.0) -> Xvfb:
        binary = shutil.which("Xvfb")
        if binary is None:
            raise UserError(
                "Xvfb is not installed: run `make test` (it installs it) or `apt-get install xvfb`"
            )
        read_fd, write_fd = os.pipe()
        self.process = subprocess.Popen(
            ending_with_parent(
                [
                    binary,
                    "-displayfd",
                    str(write_fd),
                    "-screen",
                    "0",
                    f"{self.width}x{self.height}x{self.depth}",
                    "-nolisten",
                    "tcp",
                    "-noreset",
                    "+extension",
                    "XFIXES",
                    "+extension",
                    "XTEST",
                    "+extension",
                    "RECORD",
                ]
            ),
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        os.close(write_fd)
        number = b""
        deadline = time.monotonic() + timeout
        try:
            os.set_blocking(read_fd, False)
            while not number.endswith(b"\n"):
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"Xvfb exited with status {self.process.returncode} before it was ready"
                    )
                if time.monotonic() > deadline:
                    raise RuntimeError("Xvfb did not report a display number in time")
                try:
                    chunk = os.read(read_fd, 16)
                except BlockingIOError:
                    time.sleep(0.01)
                    continue
                if not chunk:
                    raise RuntimeError("Xvfb closed its display pipe without a number")
                number += chunk
        except BaseException:
            self.stop()
            raise
        finally:
            os.close(read_fd)
        self.display = f":{int(number.strip())}"
        return self

    def stop(self) -> None:
        """Stop the server by its PID (TERM, then KILL after two seconds)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=2.0)

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def env(self) -> dict[str, str]:
        """The current environment with DISPLAY pointing at this server."""
        return {**os.environ, "DISPLAY": self.display}

    def __enter__(self) -> Xvfb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":
    with Xvfb() as server:
        print(f"DISPLAY={server.display} pid={server.pid}")
