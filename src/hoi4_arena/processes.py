"""Background worker processes, forked from a server that has imported their modules once.

The data loader's workers and the rollout engine's processes need numpy, PyAV, numba's resampler and
the simulator, never torch. Started with `spawn`, every one of them imports all of that again (about
0.8 s of CPU a process, each time a training run or an epoch of held-out games starts its workers).
`worker_context` gives multiprocessing's `forkserver` instead: on first use it starts one clean process
(no torch, no threads, nothing of the parent's state) that imports `PRELOAD`, and each worker is forked
from it, ready in milliseconds. A worker still gets from the parent what spawn gives it: its pickled
arguments, `sys.path` and the working directory; its environment is the parent's as it was when the
first worker started. Where the platform has no fork server, `spawn` is used.

A worker blocked on a queue never learns that its parent was killed (SIGTERM, SIGKILL): a queue's pipe
has its writing end in the worker too, so no end of file arrives, and the worker, the fork server it
keeps alive and the resource tracker would wait forever. `exit_with_parent`, called first in a worker,
ends the worker when its parent's process ends. `ending_with_parent` does the same for a program run with
`subprocess` (a private Xvfb, the simulator's window): killed outright, a run leaves none of them behind.

Try: python bench/worker_start.py
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import threading
from multiprocessing.connection import wait
from multiprocessing.context import BaseContext

PRELOAD = ("hoi4_arena.data.loader", "hoi4_arena.play.rollout_worker")
"""The modules the fork server imports before it forks a worker (none of them imports torch)."""


def worker_context(method: str | None = None) -> BaseContext:
    """The multiprocessing context for the project's worker processes (`method` overrides it)."""
    if method is None:
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    context = mp.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(list(PRELOAD))  # read only when the server starts
    return context


def exit_with_parent(code: int = 1) -> None:
    """In a worker process: end it (`os._exit(code)`) as soon as the process that started it has ended.

    A daemon thread waits on the parent's sentinel (a pipe the parent holds open while it lives); nothing
    of the worker's state is cleaned up, as after SIGKILL. Does nothing in a process not started by
    multiprocessing."""
    parent = mp.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(code)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


_EXEC_ENDING_WITH_PARENT = """\
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG, kept across exec
if os.getppid() != int(sys.argv[1]):
    sys.exit(0)  # the parent ended before the line above
os.execvp(sys.argv[2], sys.argv[2:])
"""


def ending_with_parent(argv: list[str]) -> list[str]:
    """`argv` run so that the program gets SIGTERM when this process ends, however it ends (Linux).

    The command becomes a small Python that asks the kernel for the signal (PR_SET_PDEATHSIG) and then
    becomes the program itself (exec: the same process id, the same file descriptors). The kernel sends
    it when the thread that started the program ends, so only the main thread, which ends with the
    process, asks for it; elsewhere, and on other systems, `argv` is returned as it is."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return list(argv)
    return [sys.executable, "-I", "-S", "-c", _EXEC_ENDING_WITH_PARENT, str(os.getpid()), *argv]
