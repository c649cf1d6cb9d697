"""How commands talk to people and to programs.

Progress and diagnostics go to stderr (rich); machine-readable results go to stdout as one JSON
document. Every command uses these helpers so that `hoi4-arena CMD ... | jq` always works.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

stderr = Console(stderr=True)

T = TypeVar("T")

LOG_LEVELS = ("debug", "info", "warning", "error")


def setup_logging(level: str) -> None:
    """Send the package's log records to stderr through rich, at `level`."""
    from rich.logging import RichHandler

    if level not in LOG_LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
    logging.basicConfig(
        level=level.upper(),
        format="%(message)s",
        handlers=[RichHandler(console=stderr, show_path=False, rich_tracebacks=False)],
        force=True,
    )


def _json_default(value: Any) -> Any:
    # numpy scalars and arrays, paths and dataclasses reach here; keep the output strict JSON.
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "__fspath__"):
        return str(value)
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _finite(value: Any) -> Any:
    """Replace NaN and infinities by None: strict JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def print_json(result: Any) -> None:
    """Write one result document to stdout."""
    text = json.dumps(_finite(result), default=_json_default, allow_nan=False, indent=2)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


LINE_EVERY_S = 60.0
"""Where stderr is a file or a pipe: how often a running progress bar writes its plain line."""


class _Progress(Progress):
    """rich's Progress, which draws nothing to a file or a pipe until its bars stop (a background run's
    log stays empty for an epoch), and then draws them at 80 columns, cutting a long description and
    its counts to `…`. There, while it runs, it writes one plain line per unfinished bar every
    `line_every_s` seconds (`epoch 1/1000: 412/1214, 0:03:10 elapsed`), and when it stops, one plain
    line per visible bar in place of rich's drawing (unless transient: then nothing)."""

    def __init__(self, *columns: Any, line_every_s: float, **kwargs: Any) -> None:
        super().__init__(*columns, **kwargs)
        self._line_every_s = line_every_s
        self._lines_stop = threading.Event()
        self._lines: threading.Thread | None = None

    def start(self) -> None:
        super().start()
        if self._line_every_s > 0 and not self.console.is_terminal and self._lines is None:
            self._lines_stop.clear()
            self._lines = threading.Thread(target=self._write_lines, name="progress-lines", daemon=True)
            self._lines.start()

    def stop(self) -> None:
        if self._lines is not None:
            self._lines_stop.set()
            self._lines.join()
            self._lines = None
        if self.console.is_terminal or self.live.transient or not self.live.is_started or self.disable:
            super().stop()
            return
        # To a file or a pipe: rich's last drawing (cut at 80 columns) and the empty line it writes
        # after it are left out; plain lines instead.
        self.live.transient = True
        try:
            self.live.stop()
        finally:
            self.live.transient = False
        for line in self.plain_lines(finished=True):
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def plain_lines(self, finished: bool = False) -> list[str]:
        """A line for each visible bar not yet finished (`finished`: and for each finished one)."""
        lines = []
        for task in self.tasks:
            done_already = task.total is not None and task.completed >= task.total
            if not task.visible or (done_already and not finished):
                continue
            name = Text.from_markup(task.description).plain
            done = f"{task.completed:g}" + (f"/{task.total:g}" if task.total is not None else "")
            seconds = int(task.elapsed or 0)
            lines.append(
                f"{name}: {done}, {seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d} elapsed"
            )
        return lines

    def _write_lines(self) -> None:
        while not self._lines_stop.wait(self._line_every_s):
            for line in self.plain_lines():
                self.console.print(line, markup=False, highlight=False, soft_wrap=True)


def progress_bar(transient: bool = False, line_every_s: float = LINE_EVERY_S) -> Progress:
    """A rich progress bar on stderr with counts, elapsed and remaining time; to a file or a pipe, a
    plain line per bar every `line_every_s` seconds while it runs (0: none)."""
    return _Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=transient,
        line_every_s=line_every_s,
    )


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate `items` with a progress bar on stderr."""
    with progress_bar() as bar:
        yield from bar.track(items, total=total, description=description)


@contextmanager
def status(message: str) -> Iterator[None]:
    """A spinner on stderr for a step of unknown length."""
    with stderr.status(message):
        yield
