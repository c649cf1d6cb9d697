"""The package as a user installs it: `python -m build` makes a wheel that holds every file the package
needs, and that wheel, installed into a fresh venv, runs `hoi4-arena --help` and `hoi4-arena sim-run`.

The fresh venv borrows this environment's installed dependencies (torch and the rest) through a path
file rather than downloading them again, but not its editable install of the project: the path file adds
their folder to sys.path without running the folder's own .pth files (the editable install's finder is
one), so `hoi4_arena` can only come from the wheel (checked).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.waits  # mostly the build's and pip's processes starting: the waiting lane


def _run(*command: str | Path, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=300, **kwargs)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the project's sources (a build in the tree would write build/ and
    egg-info beside other runs' files), with this environment's setuptools (--no-isolation: no download)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = tmp_path_factory.mktemp("dist")
    done = _run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist, source)
    # The license is an SPDX expression: setuptools no longer warns that a table is deprecated.
    assert "deprecated" not in (done.stdout + done.stderr).lower()
    (found,) = dist.glob("hoi4_arena-*.whl")
    return found


def _package_files() -> list[str]:
    """Every file of the package that is not Python source, as git tracks it (the files a fresh clone has)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: which files belong to the package is git's list")
    listed = _run("git", "ls-files", "src/hoi4_arena", cwd=ROOT).stdout.split()
    return [name.removeprefix("src/") for name in listed if not name.endswith(".py")]


def test_the_wheel_holds_every_file_of_the_package(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data = _package_files()
    assert data, "the package has data files (calibration templates): git lists none"
    missing = [name for name in data if name not in names]
    assert not missing, f"package-data in pyproject.toml leaves out {missing[:10]}"
    metadata = zipfile.ZipFile(wheel).read(f"{wheel.name.split('-')[0]}-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: MIT OR Apache-2.0" in metadata
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert f"Version: {project['version']}" in metadata


def test_the_installed_wheel_runs_in_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    )
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--quiet",
        "--no-deps",
        "--no-index",
        wheel,
    )

    env = {**os.environ, "PYTHONPATH": ""}  # nothing of the tree's src on the path
    where = _run(python, "-c", "import hoi4_arena; print(hoi4_arena.__file__)", env=env, cwd=tmp_path).stdout
    assert Path(where.strip()).is_relative_to(venv), where
    command = venv / "bin" / "hoi4-arena"
    help_text = _run(command, "--help", env=env, cwd=tmp_path).stdout
    assert "quickstart" in help_text and "sim-run" in help_text
    game = json.loads(
        _run(command, "sim-run", "--preset", "plains", "--days", "5", env=env, cwd=tmp_path).stdout
    )
    assert game["arena"] == "plains" and game["days"] == 5 and game["result"] == "timeout"
