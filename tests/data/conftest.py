"""Fixtures for the data tests: marker-game sessions written with the real SessionWriter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from marker_game import MarkerGame, write_marker_session


@pytest.fixture
def make_marker(tmp_path: Path) -> Callable[..., MarkerGame]:
    """make_marker(name, **kwargs): a marker-game session at tmp_path/data/name."""

    def make(name: str, **kwargs) -> MarkerGame:
        kwargs.setdefault("session_id", name)
        return write_marker_session(tmp_path / "data" / name, **kwargs)

    return make


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"
