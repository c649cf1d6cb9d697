"""Fixtures for the training tests: marker-game sessions (tests/data/marker_game.py), one torch thread."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

# The marker game lives beside the data tests, which use it too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))

from marker_game import write_marker_session  # noqa: E402


@pytest.fixture(scope="session")
def marker_sessions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The marker sessions of `marker_data`, written (encoded) once for the whole run."""
    data = tmp_path_factory.mktemp("marker") / "data"
    write_marker_session(data / "train", seed=1, frames=120, session_id="train")
    write_marker_session(data / "held", seed=1, frames=120, session_id="held", split="val")
    return data


@pytest.fixture
def marker_data(marker_sessions: Path, tmp_path: Path) -> Path:
    """A data folder: one marker session to train on and the same game again, held out (split val).

    Each test gets its own copy under tmp_path, so a test may add or damage sessions in it."""
    return Path(shutil.copytree(marker_sessions, tmp_path / "data"))


@pytest.fixture(scope="session")
def recorded_games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four tiny scripted games recorded once per test session (tests/training/recorded_games.py)."""
    from recorded_games import record_games

    return record_games(tmp_path_factory.mktemp("recorded") / "games")
