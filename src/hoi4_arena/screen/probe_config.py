"""The settings of `hoi4-arena capture` and `hoi4-arena probe`: which game's worker to open, and what to do.

A torch- and numpy-free module: the command line builds the two commands' options from these fields
(`cli_options.from_config`), and `screen/probe.py` runs them.

Try: hoi4-arena probe --help
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.screen.backends import backend, refuse_foreign_options


@dataclass(kw_only=True)
class WorkerChoice:
    """The game a command looks at: a window on an X display, or a new headless simulator game."""

    game: str = "x11"
    """Which game's worker: x11 (a window on an X display) or sim (a new headless simulator game)."""
    window: str | None = None
    """Window name or class, or a process id (default: Hearts of Iron IV)."""
    display: str | None = None
    """X display such as :0 (default: $DISPLAY)."""
    layout: str = "full"
    """View layout: full or cpu."""
    arena: str | None = None
    """--game sim: preset, preset:seed or map folder (default plains)."""
    seed: int | None = None
    """--game sim: the game's seed (default 0)."""
    size: tuple[int, int] | None = None
    """--game sim: screen size (height, width), typed as 960x540 (the default)."""

    def __post_init__(self) -> None:
        backend(self.game)
        refuse_foreign_options(self.game, {"--arena": self.arena, "--seed": self.seed, "--size": self.size})

    @property
    def sim(self) -> dict[str, Any]:
        """The SimWorker keywords of --arena, --seed and --size (empty unless --game sim)."""
        if self.game != "sim":
            return {}
        return {
            "arena": self.arena or ARENA,
            "seed": 0 if self.seed is None else self.seed,
            "size": list(self.size or (540, 960)),
        }


@dataclass(kw_only=True)
class CaptureConfig(WorkerChoice):
    """Settings of `hoi4-arena capture`."""

    out: Path
    """PNG file for the full frame, the cursor drawn in."""
    views_dir: Path | None = None
    """Folder for the views as PNGs (global, the four quadrants, fovea)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.out = Path(self.out)
        if self.out.suffix.lower() != ".png":
            raise UserError(f"the frame is written as PNG: {self.out} should end in .png")
        if self.views_dir is not None and self.views_dir.exists() and not self.views_dir.is_dir():
            raise UserError(f"--views {self.views_dir} exists and is not a folder")


@dataclass(kw_only=True)
class ProbeConfig(WorkerChoice):
    """Settings of `hoi4-arena probe`."""

    captures: int = 20
    """How many captures to time."""
    apply: bool = True
    """Time applies too (a move to where the pointer already is), when the game has focus."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.captures <= 10_000:
            raise UserError(f"--captures must be between 1 and 10000, not {self.captures}")
