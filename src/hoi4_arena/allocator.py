"""Keep freed memory for reuse instead of handing it back to the kernel at once (glibc's malloc).

On this project's machines (small virtual machines) a fresh page's first touch can be slow: with the
machine busy, writing a new 29 MB array cost about 0.35 s of kernel time, rewriting it once touched
about 5 ms. glibc's malloc serves large blocks with their own mmap and unmaps them when freed, and trims
the top of its heap past a threshold, so a loop that builds and drops large arrays (a HOI4 map raster:
3.6 million pixels as int64; a batch of frames) touches fresh pages every time.

`keep_freed_memory()` raises both limits in this process (`mallopt`): blocks up to 32 MiB (glibc's
largest mmap threshold) come from the heap, and up to 512 MiB of freed heap stays mapped for the next
allocation. It also gives every thread the one heap (one arena): glibc gives each thread that allocates
an arena of its own, and those hand freed memory back to the kernel whatever the trim limit says, so
the video encoder's, a capture's or a Ray task's thread touched fresh pages every time (a thread that
built and dropped arrays took 80,000 page faults a round where the main thread took none). A thread
that allocated before the call keeps its own arena, so it is called first thing. With `children=True`
it also sets the same limits in the environment (`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`,
`MALLOC_ARENA_MAX`), so the processes this one starts start with them
(the test suite does this); the commands keep it to their own process, so a game or program they start
keeps its own malloc settings. A limit the environment already sets is left as the user set it. It does
nothing where the C library has no `mallopt` (not glibc).

One loop is the opposite: a loader filling its store of compressed windows (`data/held.py`) allocates
each window's raw views (hundreds of kB), keeps a frame of a few kB and frees the views. From the heap,
the long-lived frames land between the freed blocks and the heap only grows: train-bc on 1,536
demonstrations of 30 days (about 1.3 GiB compressed) grew past 17 GiB while filling and was killed for
memory on a 24 GiB machine. `large_blocks_mapped()` lowers the mmap threshold to 64 KiB for such a
loop, so each view is its own mapping, unmapped when freed, and puts the 32 MiB back after it
(`WindowLoader.hold` uses it; `bench/hold_memory.py` measures the process's peak with and without).

What it costs: a process keeps up to 512 MiB more resident after a peak. What it buys is measured by
`bench/allocator.py`: less kernel time and fewer page faults, but no wall-clock gain on a quiet machine.

Try: python -c "from hoi4_arena.allocator import keep_freed_memory; print(keep_freed_memory())"
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Iterator
from contextlib import contextmanager

MMAP_THRESHOLD = 32 * 1024 * 1024
"""Blocks up to this size come from the heap (glibc accepts at most 32 MiB on 64-bit machines)."""
MAPPED_THRESHOLD = 64 * 1024
"""Inside `large_blocks_mapped`: blocks from this size up get their own mapping."""
TRIM_THRESHOLD = 512 * 1024 * 1024
"""Freed memory at the top of the heap kept mapped, in bytes."""

ARENAS = 1
"""Arenas (heaps) the threads of a process share: one, so the two limits hold in every thread."""

_M_TRIM_THRESHOLD = -1  # glibc's malloc.h
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
LIMITS = {
    "MALLOC_MMAP_THRESHOLD_": (_M_MMAP_THRESHOLD, MMAP_THRESHOLD),
    "MALLOC_TRIM_THRESHOLD_": (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
    "MALLOC_ARENA_MAX": (_M_ARENA_MAX, ARENAS),
}


def keep_freed_memory(children: bool = False) -> dict[str, int]:
    """Set the limits in this process, and with `children` for the processes it starts (see the module
    docstring); returns what was set in this process, by variable name (empty where the C library has
    no mallopt)."""
    libc = _libc()
    done: dict[str, int] = {}
    for name, (param, value) in LIMITS.items():
        if name in os.environ:
            continue  # the user's setting: glibc read it at start-up, children inherit it
        if children:
            os.environ[name] = str(value)
        if libc is not None and libc.mallopt(param, value) == 1:
            done[name] = value
    return done


@contextmanager
def large_blocks_mapped(threshold: int = MAPPED_THRESHOLD) -> Iterator[bool]:
    """Blocks of `threshold` bytes or more get their own mapping while the block runs (given back to the
    kernel when freed), then the mmap threshold is `MMAP_THRESHOLD` again, as `keep_freed_memory` sets
    it. Yields whether it changed anything: not where the C library has no mallopt, nor where the
    environment sets MALLOC_MMAP_THRESHOLD_ (the user's setting, or the test suite's for its
    processes)."""
    libc = None if "MALLOC_MMAP_THRESHOLD_" in os.environ else _libc()
    changed = libc is not None and libc.mallopt(_M_MMAP_THRESHOLD, threshold) == 1
    try:
        yield changed
    finally:
        if changed:
            libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def environment() -> dict[str, str]:
    """The variables that start a process with the limits (the user's own settings where they are set),
    for processes started by others on this one's behalf: Ray's workers (`play/ray_games.py`)."""
    return {name: os.environ.get(name, str(value)) for name, (_, value) in LIMITS.items()}


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    if libc is None or not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):
        return None
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    libc.mallopt.restype = ctypes.c_int
    return libc
