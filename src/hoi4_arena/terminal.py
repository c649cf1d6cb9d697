"""How commands talk to people and to programs.

Progress and diagnostics go to stderr (rich); machine-readable results go to stdout as one JSON
document. Every command uses these helpers so that `hoi4-arena CMD ... | jq` always works.
"""

from __future__ import annotations

import json
import logging
import math
import sys
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


def progress_bar(transient: bool = False) -> Progress:
    """A rich progress bar on stderr with counts, elapsed and remaining time."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=transient,
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
