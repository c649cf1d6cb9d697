"""Worker processes from the fork server (`processes.worker_context`): clean, preloaded, and given the
parent's working directory and import path as spawn gives them; programs started with
`processes.ending_with_parent` end when the process that started them is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hoi4_arena.processes import PRELOAD, ending_with_parent, worker_context


def report(results) -> None:
    """A worker's view of itself, put on `results`."""
    results.put(
        {
            "pid": os.getpid(),
            "cwd": os.getcwd(),
            "path": list(sys.path),
            "torch": "torch" in sys.modules,
            "preloaded": [m for m in PRELOAD if m in sys.modules],
        }
    )


def run_one(context) -> dict:
    results = context.Queue()
    process = context.Process(target=report, args=(results,), daemon=True)
    process.start()
    try:
        return results.get(timeout=60)
    finally:
        process.join(timeout=30)
        assert process.exitcode == 0


@pytest.mark.skipif(sys.platform != "linux", reason="the fork server is a Linux start method here")
def test_a_worker_is_forked_clean_from_the_preloaded_server(tmp_path: Path, monkeypatch) -> None:
    import torch  # noqa: F401  -- the parent has torch; a worker must not

    context = worker_context()
    assert context.get_start_method() == "forkserver"
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path / "extra"))
    first, second = run_one(context), run_one(context)
    for seen in (first, second):
        assert seen["cwd"] == str(tmp_path)  # the parent's, as it is at each start
        assert str(tmp_path / "extra") in seen["path"]
        assert not seen["torch"]
        assert seen["preloaded"] == list(PRELOAD)  # imported by the server before the fork
    assert first["pid"] != second["pid"] != os.getpid()


def test_spawn_can_still_be_asked_for() -> None:
    context = worker_context("spawn")
    assert context.get_start_method() == "spawn"
    seen = run_one(context)
    assert not seen["torch"] and seen["pid"] != os.getpid()


# A parent that starts `sleep` (ending with it when asked), says the sleeper's id and waits to be killed.
PARENT = """\
import subprocess, sys, time
from hoi4_arena.processes import ending_with_parent
argv = ["sleep", "300"]
sleeper = subprocess.Popen(ending_with_parent(argv) if sys.argv[1] == "ending" else argv)
print(sleeper.pid, flush=True)
time.sleep(300)
"""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def sleeper_left_by_a_killed_parent(how: str, wait_s: float) -> bool:
    """Whether `sleep`, started by a parent that SIGKILL then ends, still runs `wait_s` later (then ended)."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT, how], stdout=subprocess.PIPE, text=True)
    sleeper = int(parent.stdout.readline())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{sleeper}/cmdline").read_bytes().split(b"\0")[0] != b"sleep":
        assert time.monotonic() < deadline, "the sleeper never became `sleep`"
        time.sleep(0.02)  # still the small Python before exec
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + wait_s
    while _running(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = _running(sleeper)
    if left:
        os.kill(sleeper, signal.SIGKILL)
    return left


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_program_started_ending_with_parent_ends_when_the_parent_is_killed() -> None:
    assert not sleeper_left_by_a_killed_parent("ending", wait_s=10)
    assert sleeper_left_by_a_killed_parent("plain", wait_s=1)  # without it the sleeper outlives its parent


def test_off_the_main_thread_the_command_is_left_as_it_is() -> None:
    # The kernel would signal when the starting thread ends, not the process: no asking from a thread.
    seen = []
    thread = threading.Thread(target=lambda: seen.append(ending_with_parent(["Xvfb", ":9"])))
    thread.start()
    thread.join()
    assert seen == [["Xvfb", ":9"]]
    on_main = ending_with_parent(["Xvfb", ":9"])
    assert on_main[-2:] == ["Xvfb", ":9"] and (on_main[0] == sys.executable) == sys.platform.startswith(
        "linux"
    )
