"""The settings of `hoi4-arena import-video` and `hoi4-arena pointer`: a video file becomes a session
without inputs, and the game's cursor sprite becomes the pointer templates that find the pointer in it.

A torch- and numpy-free module: the command line builds both commands' options from these fields
(`cli_options.from_config`); `sessions/import_video.py` and `screen/pointer_templates.py` run them.

Try: hoi4-arena import-video --help
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from hoi4_arena.errors import UserError
from hoi4_arena.screen.probe_config import WorkerChoice


@dataclass(kw_only=True)
class ImportVideoConfig:
    """Settings of `hoi4-arena import-video`."""

    videos: list[Path] = field(default_factory=list)
    """Video files (mp4, mkv, webm, ...: anything PyAV reads); each becomes OUT/<file name>."""
    out: Path
    """Data folder the sessions are made in (one session folder per video)."""
    game_speed: int | None = None
    """HOI4's game speed 1..5 in the video (required: the same input means other things at other speeds)."""
    game: str = "hoi4"
    """The game the video shows: hoi4 or sim."""
    pointers: Path | None = None
    """A folder of pointer templates (hoi4-arena pointer): find the pointer in every frame."""
    start: float | None = None
    """Seconds into the video to start at (cuts the video: re-encodes)."""
    end: float | None = None
    """Seconds into the video to stop at (cuts the video: re-encodes)."""
    reencode: bool = False
    """Re-encode the video into the session (x264 4:4:4) instead of referencing the source file."""
    pad: bool = False
    """Pad a video that is not 16:9 with black to 16:9 (re-encodes); without it such a video is refused."""
    split: str = "train"
    """The sessions' split: train, val or test."""
    min_confidence: float = 0.6
    """With --pointers: the least match confidence (0..1) at which a frame's pointer counts as found."""

    def __post_init__(self) -> None:
        self.videos = [Path(v) for v in self.videos]
        self.out = Path(self.out)
        if not self.videos:
            raise UserError("give at least one video file to import, then the output folder")
        if self.game_speed is None:
            raise UserError(
                "--game-speed is required: the speed (1..5) the game ran at in the video; a session "
                "without it is refused because the same input means other things at other speeds"
            )
        if self.game_speed not in (1, 2, 3, 4, 5):
            raise UserError(f"--game-speed must be 1..5, not {self.game_speed}")
        if self.game not in ("hoi4", "sim"):
            raise UserError(f"--game must be hoi4 or sim, not {self.game!r}")
        if self.split not in ("train", "val", "test"):
            raise UserError(f"--split must be train, val or test, not {self.split!r}")
        for name in ("start", "end"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise UserError(f"--{name} must be a number of seconds >= 0, not {value}")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise UserError(f"--end ({self.end}) must come after --start ({self.start})")
        if not 0 < self.min_confidence <= 1:
            raise UserError(f"--min-confidence must lie in (0, 1], not {self.min_confidence}")
        if self.pointers is not None:
            self.pointers = Path(self.pointers)

    @property
    def cuts(self) -> bool:
        """Whether only a part of the video is imported."""
        return self.start is not None or self.end is not None


@dataclass(kw_only=True)
class PointerConfig(WorkerChoice):
    """Settings of `hoi4-arena pointer`."""

    out: Path
    """Folder of pointer templates: each distinct cursor sprite as a PNG, and pointers.json (hotspots)."""
    from_session: Path | None = None
    """Cut the sprite out of a recorded session's frames at its recorded pointer instead (no worker)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.out = Path(self.out)
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")
        if self.from_session is not None:
            self.from_session = Path(self.from_session)
            given = {"--window": self.window, "--display": self.display, **self._sim_options}
            extra = [name for name, value in given.items() if value is not None]
            if extra:
                raise UserError(f"{', '.join(extra)}: not with --from-session (no worker is opened)")

    @property
    def _sim_options(self) -> dict:
        return {"--arena": self.arena, "--seed": self.seed, "--size": self.size}
