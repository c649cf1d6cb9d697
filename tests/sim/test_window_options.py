"""`hoi4-arena sim`'s options: bad input is a one-line message (exit 2), never a traceback, and the
SDL-to-SimEvent conversion covers every key of the vocabulary."""

from __future__ import annotations

import os
import subprocess
import sys

import pygame
import pytest
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.sim.input import KEYS, SimEvent
from hoi4_arena.sim.window import parse_size, sdl_keys, to_sim_events

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--size", "big"], "--size must look like 1920x1080"),
        (["--size", "1000x1000"], "not 16:9"),
        (["--player", "GRN"], "--player is BLU or RED"),
        (["--ai", "everyone"], "--ai is both, BLU, RED or none"),
        (["--speed", "7"], "--speed must be 1..5"),
        (["--declarer", "GRN"], "--declarer must be BLU, RED or coin"),
        (["--ai-strength", "3"], "--ai-strength must be within 0..1"),
        (["--preset", "atlantis"], "neither a preset"),
    ],
)
def test_bad_options_are_messages(args, words) -> None:
    result = runner.invoke(app, ["sim", *args])
    assert result.exit_code != 0
    assert words in str(result.exception) or words in result.output


def test_no_display_is_a_message_not_a_traceback(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["SDL_VIDEODRIVER"] = "x11"
    done = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "sim", "--size", "640x360", "--userdir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "cannot open a window" in done.stderr and "Traceback" not in done.stderr


def test_parse_size() -> None:
    assert parse_size("1920x1080") == (1080, 1920) and parse_size("960X540") == (540, 960)


def test_every_key_name_has_an_sdl_key() -> None:
    assert set(sdl_keys(pygame).values()) == KEYS


def test_sdl_events_become_sim_events() -> None:
    keys = sdl_keys(pygame)
    motion = pygame.event.Event(pygame.MOUSEMOTION, pos=(5, 6), rel=(1, 1), buttons=(0, 0, 0))
    assert to_sim_events(motion, pygame, keys) == [SimEvent("move", 5, 6)]
    down = pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=(7, 8), button=3)
    assert to_sim_events(down, pygame, keys) == [
        SimEvent("move", 7, 8),
        SimEvent("button_down", button="right"),
    ]
    wheel_button = pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=(7, 8), button=4)
    assert to_sim_events(wheel_button, pygame, keys) == []  # reported again as MOUSEWHEEL
    wheel = pygame.event.Event(pygame.MOUSEWHEEL, x=0, y=-1)
    assert to_sim_events(wheel, pygame, keys) == [SimEvent("wheel", delta=-1)]
    shift = pygame.event.Event(pygame.KEYDOWN, key=pygame.K_RSHIFT, mod=0)
    assert to_sim_events(shift, pygame, keys) == [SimEvent("key_down", key="shift")]
    grave = pygame.event.Event(pygame.KEYUP, key=pygame.K_BACKQUOTE, mod=0)
    assert to_sim_events(grave, pygame, keys) == [SimEvent("key_up", key="`")]
    f5 = pygame.event.Event(pygame.KEYDOWN, key=pygame.K_F5, mod=0)
    assert to_sim_events(f5, pygame, keys) == []  # not in the vocabulary: ignored
