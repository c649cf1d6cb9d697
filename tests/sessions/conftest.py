"""Fixtures for the session tests: real sessions written with SessionWriter from synthetic frames
(session_files.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from session_files import write_session


@pytest.fixture
def make_session(tmp_path: Path) -> Callable[..., Path]:
    counter = iter(range(1000))

    def make(**kwargs) -> Path:
        return write_session(tmp_path / f"session-{next(counter)}", **kwargs)

    return make
