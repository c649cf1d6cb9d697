"""keep_freed_memory: glibc's malloc keeps freed large blocks for reuse, here and, when asked, in child
processes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hoi4_arena import allocator

# Four 20 MB arrays made and dropped ten times, in the main thread or (argv[2] == "thread") in a thread
# of its own, as the video encoder or a Ray task allocates; prints the page faults it took.
CHURN = """
import resource, sys, threading
import numpy as np
if sys.argv[1] == "kept":
    from hoi4_arena.allocator import keep_freed_memory
    keep_freed_memory()
def churn():
    for _ in range(10):
        arrays = [np.ones(2_500_000) for _ in range(4)]
        del arrays
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
if sys.argv[2] == "thread":
    thread = threading.Thread(target=churn)
    thread.start()
    thread.join()
else:
    churn()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}


def faults(mode: str, env: dict[str, str], where: str = "main") -> int:
    done = subprocess.run(
        [sys.executable, "-c", CHURN, mode, where], env=env, capture_output=True, text=True, check=True
    )
    return int(done.stdout.strip())


@pytest.mark.skipif(allocator._libc() is None, reason="the C library has no mallopt (not glibc)")
def test_freed_blocks_are_reused_instead_of_touching_fresh_pages() -> None:
    env = clean_env()
    default, kept = faults("default", env), faults("kept", env)
    assert kept * 3 < default, (default, kept)
    # In a thread too: without one shared arena, a thread's own gave its freed pages back every time.
    in_thread = faults("default", env, "thread"), faults("kept", env, "thread")
    assert in_thread[1] * 3 < in_thread[0], in_thread
    # A child started with the variables keep_freed_memory sets gets the same without calling it.
    inherited = faults("default", {**env, **allocator.environment()}, "thread")
    assert inherited * 3 < in_thread[0], (in_thread, inherited)


def test_the_limits_go_to_children_only_when_asked_and_a_users_own_setting_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in allocator.LIMITS:
        monkeypatch.delenv(name, raising=False)
    allocator.keep_freed_memory()  # as the commands call it: the programs they start keep their own
    assert not any(name in os.environ for name in allocator.LIMITS)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1048576")
    done = allocator.keep_freed_memory(children=True)
    assert os.environ["MALLOC_MMAP_THRESHOLD_"] == str(allocator.MMAP_THRESHOLD)
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "1048576"
    assert os.environ["MALLOC_ARENA_MAX"] == "1"
    assert "MALLOC_TRIM_THRESHOLD_" not in done
    if allocator._libc() is not None:
        assert done == {"MALLOC_MMAP_THRESHOLD_": allocator.MMAP_THRESHOLD, "MALLOC_ARENA_MAX": 1}
    # What Ray's workers are started with: the same, the user's own setting kept.
    assert allocator.environment() == {
        "MALLOC_MMAP_THRESHOLD_": str(allocator.MMAP_THRESHOLD),
        "MALLOC_TRIM_THRESHOLD_": "1048576",
        "MALLOC_ARENA_MAX": "1",
    }


# Bytes in mmapped blocks (glibc's mallinfo2().hblkhd) after a 1 MB array is made inside
# large_blocks_mapped and after one made once the block has ended; prints both and what the block yielded.
MAPPED = """
import ctypes
import numpy as np
from hoi4_arena.allocator import keep_freed_memory, large_blocks_mapped
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
keep_freed_memory()
base = libc.mallinfo2().hblkhd
with large_blocks_mapped() as changed:
    inside = np.ones(1_000_000, dtype=np.uint8)
    during = libc.mallinfo2().hblkhd - base
del inside
base = libc.mallinfo2().hblkhd
after_array = np.ones(1_000_000, dtype=np.uint8)
print(changed, during, libc.mallinfo2().hblkhd - base)
"""


@pytest.mark.skipif(allocator._libc() is None, reason="the C library has no mallopt (not glibc)")
def test_large_blocks_are_mapped_inside_the_block_only() -> None:
    def run(env: dict[str, str]) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", MAPPED], env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.split()

    changed, during, after = run(clean_env())
    assert changed == "True"
    assert int(during) >= 1_000_000  # its own mapping
    assert int(after) == 0  # afterwards the heap again, as keep_freed_memory sets it
    # The user's (or the suite's) MALLOC_MMAP_THRESHOLD_ stands: the block changes nothing.
    changed, during, _ = run({**clean_env(), "MALLOC_MMAP_THRESHOLD_": str(allocator.MMAP_THRESHOLD)})
    assert (changed, during) == ("False", "0")
