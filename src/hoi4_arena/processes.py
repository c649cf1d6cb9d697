"""Background worker processes, forked from a server that has imported their modules once.

The data loader's workers and the rollout engine's processes need numpy, PyAV, numba's resampler and
the simulator, never torch. Started with `spawn`, every one of them imports all of that again (about
0.8 s of CPU a process, each time a training run or an epoch of held-out games starts its workers).
`worker_context` gives multiprocessing's `forkserver` instead: on first use it starts one clean process
(no torch, no threads, nothing of the parent's state) that imports `PRELOAD`, and each worker is forked
from it, ready in milliseconds. A worker still gets from the parent what spawn gives it: its pickled
arguments, `sys.path` and the working directory; its environment is the parent's as it was when the
first worker started. Where the platform has no fork server, `spawn` is used.

Try: python bench/worker_start.py
"""

from __future__ import annotations

import multiprocessing as mp
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
