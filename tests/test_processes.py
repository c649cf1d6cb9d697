"""Worker processes from the fork server (`processes.worker_context`): clean, preloaded, and given the
parent's working directory and import path as spawn gives them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from hoi4_arena.processes import PRELOAD, worker_context


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
