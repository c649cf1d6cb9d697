"""Temporary folders that no killed process leaves behind.

Games keep their user folder (the game log, saves) in a temporary folder, and Ray tasks and rollout
workers play into one. A process killed with SIGKILL (a killed rollout actor or Ray task, a stopped run,
the kernel's out-of-memory killer) cannot remove its own, and a long run would fill the temporary
directory with them. So each folder made here names its owner, the process's id and start time and its
machine (host name and process-id namespace), in an `.owner` file, and the first folder a process makes
sweeps the temporary directory: a `hoi4-arena-*` folder whose owner has exited is removed. A folder
without an owner file (someone else's, or one being made this instant), a folder whose owner still runs
and one whose owner another machine or container runs (a shared temporary directory) are never touched.

Try: python -c "from hoi4_arena.scratch import sweep; print(sweep())"
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path

import psutil

PREFIX = "hoi4-arena-"
OWNER_FILE = ".owner"
_swept = False
_sweep_lock = threading.Lock()


def scratch_folder(kind: str) -> tempfile.TemporaryDirectory:
    """A new temporary folder `hoi4-arena-<kind>-*` owned by this process (removed by its `cleanup`, or
    by a later process's sweep once this one has exited)."""
    _sweep_once()
    folder = tempfile.TemporaryDirectory(prefix=f"{PREFIX}{kind}-")
    claim(Path(folder.name))
    return folder


def make_scratch(kind: str) -> Path:
    """`scratch_folder` for a folder its maker removes itself (`tempfile.mkdtemp`'s way)."""
    _sweep_once()
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-"))
    claim(folder)
    return folder


def claim(folder: Path) -> None:
    """Name this process as the owner of `folder` (its `.owner` file)."""
    (folder / OWNER_FILE).write_text(_owner_line(os.getpid()))


def sweep(directory: Path | None = None) -> list[Path]:
    """Remove the `hoi4-arena-*` folders in `directory` (the temporary directory) whose owner has exited;
    returns them."""
    removed = []
    for folder in sorted(Path(directory or tempfile.gettempdir()).glob(PREFIX + "*")):
        try:
            line = (folder / OWNER_FILE).read_text()
        except OSError:
            continue  # not made here, or still being made
        if not owner_runs(line):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def owner_runs(line: str) -> bool:
    """Whether the process an `.owner` line names still runs (the same process: its id and start time);
    True when that cannot be told (an unreadable line, another machine's or user's process)."""
    try:
        pid_text, started_text, machine = line.split()
        pid, started = int(pid_text), float(started_text)
    except ValueError:
        return True
    if machine != this_machine():
        return True
    try:
        return abs(psutil.Process(pid).create_time() - started) < 1.0  # a reused id starts later
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True


def _owner_line(pid: int) -> str:
    return f"{pid} {psutil.Process(pid).create_time():.3f} {this_machine()}\n"


def this_machine() -> str:
    """This machine as process ids see it: the host name and the process-id namespace (a container)."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return f"{socket.gethostname().replace(' ', '_')}/{namespace}"


def _sweep_once() -> None:
    global _swept
    with _sweep_lock:
        if _swept:
            return
        _swept = True
    sweep()
