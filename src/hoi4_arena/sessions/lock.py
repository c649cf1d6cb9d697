"""The recording lock: a file in a session folder that names the process recording into it.

While a recorder runs, `recording.lock` holds its pid, hostname and start time (and the process's
creation time, so a reused pid is not mistaken for the recorder). `check-session` reports such a session
as "recording" rather than broken, and `salvage` refuses to touch it. A lock whose process is gone marks
a recorder that was killed: the session needs `salvage`.

Try: python -c "from hoi4_arena.sessions.lock import read_lock; print(read_lock('runs/s1'))"
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import shutil
import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import psutil

from hoi4_arena.errors import UserError
from hoi4_arena.sessions.format import LOCK

log = logging.getLogger(__name__)

LockState = Literal["live", "dead", "foreign", "unreadable"]


@dataclass(frozen=True)
class RecordingLock:
    pid: int
    hostname: str
    started: str
    """When recording started, ISO 8601 UTC."""
    create_time: float | None
    """The process's creation time (psutil), to tell the recorder from a later process with its pid."""

    def state(self) -> LockState:
        """'live' if the named process still runs here, 'dead' if it is gone, 'foreign' on another host."""
        if self.hostname != socket.gethostname():
            return "foreign"
        try:
            process = psutil.Process(self.pid)
            created = process.create_time()
            zombie = process.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return "dead"
        except psutil.AccessDenied:
            return "live"
        if zombie:
            return "dead"
        if self.create_time is not None and abs(created - self.create_time) > 1.0:
            return "dead"
        return "live"

    def describe(self) -> str:
        return f"pid {self.pid} on {self.hostname}, started {self.started}"


def acquire_lock(folder: Path) -> RecordingLock:
    """Create the lock for this process; fails if one exists (another recorder owns the folder)."""
    pid = os.getpid()
    lock = RecordingLock(
        pid=pid,
        hostname=socket.gethostname(),
        started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        create_time=psutil.Process(pid).create_time(),
    )
    fd = os.open(folder / LOCK, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(asdict(lock), handle)
        handle.write("\n")
    return lock


def read_lock(folder: Path) -> tuple[RecordingLock | None, LockState | None]:
    """The folder's lock and its state, or (None, None) without a lock file.

    A lock file that does not parse (a recorder killed while writing it) is 'unreadable': nobody can
    be shown to own the folder, so callers treat it like a dead lock but say so.
    """
    path = Path(folder) / LOCK
    if not path.exists():
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        lock = RecordingLock(
            pid=int(data["pid"]),
            hostname=str(data["hostname"]),
            started=str(data["started"]),
            create_time=None if data.get("create_time") is None else float(data["create_time"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None, "unreadable"
    return lock, lock.state()


def remove_unfinished(folder: Path) -> None:
    """Remove the session of a game that never got a results row (its run was stopped during it), unless
    a live recorder still writes it (a UserError then)."""
    folder = Path(folder)
    if not folder.exists():
        return
    lock, state = read_lock(folder)
    if state in ("live", "foreign"):
        raise UserError(f"{folder} is being recorded by another process ({lock.describe()}); wait for it")
    log.warning("replaying the unfinished game of %s: its session is replaced", folder)
    shutil.rmtree(folder)
