"""The worker's refusal, apart from `screen.worker` so that light processes (the X11 input guardian) raise
it without importing numpy."""

from __future__ import annotations


class WorkerError(RuntimeError):
    """A request the worker refused or could not carry out; the message says which and why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
