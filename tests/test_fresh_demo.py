"""scripts/fresh_demo.sh on a stand-in repository whose `make demo` writes a known report at once: the
script clones the branch into a new folder, runs `make demo` there and prints the date, commit, CPU,
wall time, weights hash, numerics and the report's tables; a failing `make demo` is its status, with the
log's end. (The real run takes 45 minutes or more: README.md quotes one.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "fresh_demo.sh"

RECORD = {"games": 20, "wins": 5, "draws": 3, "losses": 12}
RATE = {"rate": 0.25, "low": 0.11, "high": 0.47}
SETUP = {"army": 20, "front": 19, "offensive": 18, "executed": 18, "complete": 18}
REPORT = {
    "arena": "plains:0",
    "report": "demo/report.html",
    "work": {
        "weights_sha256": "ab" * 32,
        "train_steps": 3000,
        "numerics": {"pinned": True, "aten_capability": "AVX2", "settings": {"MKL_CBWR": "COMPATIBLE"}},
    },
    "players": {"learned": {**RECORD, "win_rate": RATE, "setup": SETUP}},
    "held_out": {"arena": "river:7", "players": {"scripted": {**RECORD, "win_rate": RATE, "setup": SETUP}}},
}


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def stand_in(tmp_path: Path, recipe: str) -> Path:
    """A git repository on branch main whose Makefile's demo target runs `recipe`."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "report.json").write_text(json.dumps(REPORT))
    (repo / "Makefile").write_text(f"demo:\n\t{recipe}\n")
    _git("init", "-q", "-b", "main", cwd=repo)
    _git("add", "Makefile", "report.json", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "stand-in", cwd=repo)
    return repo


def run(repo: Path, folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [SCRIPT, folder],
        env={"REPO": str(repo), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(not (shutil.which("git") and shutil.which("make")), reason="needs git and make")
def test_fresh_demo_prints_what_the_readme_quotes(tmp_path: Path) -> None:
    # The stand-in's demo makes the clone's venv python (the script reads the report with it) and copies
    # the report where the quickstart writes it.
    recipe = f"mkdir -p .venv/bin demo && ln -s {sys.executable} .venv/bin/python && cp report.json demo/"
    repo = stand_in(tmp_path, recipe)
    done = run(repo, tmp_path / "fresh")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert (tmp_path / "fresh" / "hoi4-arena" / "demo" / "report.json").is_file()  # a clone, made there
    for line in (
        "date:",
        "commit:",
        "cpu:",
        "AVX-512:",
        "wall:",
        "status:    0",
        f"sha256 {'ab' * 32} (3000 steps)",
    ):
        assert line in out, line
    assert "pinned True, ATen AVX2" in out
    assert "| learned | 5 / 3 / 12 | 25% [11%, 47%] | 18 of 20 (20, 19, 18, 18) |" in out
    assert "held-out map river:7" in out and "| scripted | 5 / 3 / 12 |" in out
    # The folder is kept and not used twice.
    again = run(repo, tmp_path / "fresh")
    assert again.returncode == 2 and "give a new folder" in again.stderr


@pytest.mark.skipif(not (shutil.which("git") and shutil.which("make")), reason="needs git and make")
def test_a_failing_make_demo_is_the_scripts_status_with_its_log(tmp_path: Path) -> None:
    repo = stand_in(tmp_path, "echo stage three broke && exit 3")
    done = run(repo, tmp_path / "fresh")
    assert done.returncode == 2  # make's status for a failed recipe
    assert "make demo failed" in done.stderr and "stage three broke" in done.stderr
    assert "stage three broke" in (tmp_path / "fresh" / "make-demo.log").read_text()
