"""keep_freed_memory: glibc's malloc keeps freed large blocks for reuse, here and, when asked, in child
processes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hoi4_arena import allocator

# Three 20 MB arrays made and dropped ten times; prints the page faults it took.
CHURN = """
import resource, sys
import numpy as np
if sys.argv[1] == "kept":
    from hoi4_arena.allocator import keep_freed_memory
    keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    a, b, c = np.ones(2_500_000), np.ones(2_500_000), np.ones(2_500_000)
    del a, b, c
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}


def faults(mode: str, env: dict[str, str]) -> int:
    done = subprocess.run(
        [sys.executable, "-c", CHURN, mode], env=env, capture_output=True, text=True, check=True
    )
    return int(done.stdout.strip())


@pytest.mark.skipif(allocator._libc() is None, reason="the C library has no mallopt (not glibc)")
def test_freed_blocks_are_reused_instead_of_touching_fresh_pages() -> None:
    env = clean_env()
    default, kept = faults("default", env), faults("kept", env)
    assert kept * 3 < default, (default, kept)
    # A child started with the variables keep_freed_memory sets gets the same without calling it.
    inherited = faults(
        "default", {**env, "MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "536870912"}
    )
    assert inherited * 3 < default, (default, inherited)


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
    assert "MALLOC_TRIM_THRESHOLD_" not in done
    if allocator._libc() is not None:
        assert done == {"MALLOC_MMAP_THRESHOLD_": allocator.MMAP_THRESHOLD}
