"""Temporary folders no killed process leaves behind (`hoi4_arena.scratch`): a killed owner's folder is
swept by the next process's first folder; a running owner's, a reused process id's and a foreign folder
are told apart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from hoi4_arena.scratch import OWNER_FILE, owner_runs, sweep, this_machine

MAKE = """
import sys, time
from hoi4_arena.scratch import make_scratch, scratch_folder
held = scratch_folder("sim")  # a game's user folder, as SimGame makes it
print(make_scratch("rollout"), held.name, flush=True)
if sys.argv[1] == "wait":
    time.sleep(60)
"""


def make_in_child(tmp: Path, then: str) -> tuple[subprocess.Popen, list[Path]]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    child = subprocess.Popen([sys.executable, "-c", MAKE, then], stdout=subprocess.PIPE, text=True, env=env)
    return child, [Path(p) for p in child.stdout.readline().split()]


def test_a_killed_owners_folders_go_with_the_next_process_and_a_running_ones_stay(tmp_path: Path) -> None:
    killed, killed_folders = make_in_child(tmp_path, "wait")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    running, running_folders = make_in_child(tmp_path, "wait")
    foreign = tmp_path / "hoi4-arena-test-cache-x"  # no owner file: never touched
    foreign.mkdir()
    try:
        assert len(killed_folders) == len(running_folders) == 2
        assert all(p.parent == tmp_path for p in killed_folders + running_folders)
        # The running child's first folder swept the killed one's; its own stay while it runs.
        assert not any(p.exists() for p in killed_folders)
        assert all(p.is_dir() for p in running_folders) and foreign.is_dir()
        assert sweep(tmp_path) == []
    finally:
        running.kill()
        running.wait()
    assert sorted(sweep(tmp_path)) == sorted(running_folders) and foreign.is_dir()


def test_a_reused_process_id_does_not_keep_a_folder_alive_and_another_machines_owner_is_kept(
    tmp_path: Path,
) -> None:
    started, here = psutil.Process().create_time(), this_machine()
    assert owner_runs(f"{os.getpid()} {started:.3f} {here}\n")
    assert not owner_runs(f"{os.getpid()} {started - 100:.3f} {here}\n")  # another process had this id
    assert owner_runs(f"{os.getpid()} {started - 100:.3f} {here}0\n")  # another container's: kept
    assert owner_runs("not an owner line")  # what cannot be told is kept
    gone = tmp_path / "hoi4-arena-sim-gone"
    gone.mkdir()
    (gone / OWNER_FILE).write_text(f"{os.getpid()} {started - 100:.3f} {here}\n")
    (gone / "logs").mkdir()
    assert sweep(tmp_path) == [gone] and not gone.exists()
