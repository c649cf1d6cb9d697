"""Fixtures every test folder shares: a private Xvfb, and SDL kept off any real display."""

from __future__ import annotations

import os

import pytest

from hoi4_arena.screen.xvfb import Xvfb

# No test may open a window on the developer's own display or play sound.
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")


@pytest.fixture
def xvfb() -> Xvfb:
    """A fresh private Xvfb (1920x1080x24) for one test; stopped by its PID at teardown."""
    server = Xvfb().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def xdisplay(xvfb: Xvfb, monkeypatch: pytest.MonkeyPatch) -> str:
    """A private Xvfb's DISPLAY, also set in this test's environment."""
    monkeypatch.setenv("DISPLAY", xvfb.display)
    return xvfb.display
