"""The settings of `hoi4-arena telemetry` and `hoi4-arena live`: which game to watch, and how (numpy- and
torch-free: the command line builds their options from these fields).

Both watch through read-only access: a station's observer connection (`--peer NAME`), or a game opened
here whose worker only the game's own driver may give input to.

Try: hoi4-arena telemetry --help; hoi4-arena live --help
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hoi4_arena.cluster.station_config import is_loopback, parse_listen
from hoi4_arena.errors import UserError
from hoi4_arena.screen.probe_config import WorkerChoice

RANDOM = "random"


@dataclass(kw_only=True)
class WatchChoice(WorkerChoice):
    """A game opened here (--game), or a station's worker watched as an observer (--peer)."""

    peer: str | None = None
    """A station's worker over TLS, watched as an observer (a name in the peers file) instead of --game."""
    peers: Path | None = None
    """Peers file for --peer (default: $HOI4_ARENA_PEERS, else ~/.config/hoi4-arena/peers.json)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.peer is not None and self.game == "sim":
            raise UserError("--peer watches a station's game; --game sim opens one here: give one of them")


@dataclass(kw_only=True)
class TelemetryConfig(WatchChoice):
    """Settings of `hoi4-arena telemetry`."""

    watch: bool = False
    """A live table refreshed every --interval seconds until Ctrl+C, instead of JSON."""
    interval: float = 1.0
    """Seconds between samples (rates such as CPU % are measured over it)."""
    count: int = 0
    """Stop after this many samples (0: one sample, or until Ctrl+C with --watch)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.05 <= self.interval <= 3600:
            raise UserError(f"--interval must be in 0.05..3600 seconds, not {self.interval}")
        if not 0 <= self.count <= 1_000_000:
            raise UserError(f"--count must be in 0..1000000, not {self.count}")


@dataclass(kw_only=True)
class LiveConfig(WatchChoice):
    """Settings of `hoi4-arena live`."""

    listen: str = "127.0.0.1:8765"
    """HOST:PORT the page is served on (loopback unless --allow-remote)."""
    allow_remote: bool = False
    """Serve the page on an address other than loopback (anyone who reaches it sees the game)."""
    checkpoint: str | None = None
    """--game sim: a checkpoint file, or the word random, plays --side against the game's AI (default:
    the game's AI plays both sides)."""
    side: str = "BLU"
    """--game sim: the side the checkpoint plays."""
    speed: int = 5
    """--game sim: game speed 1..5 of the match."""
    max_days: int = 120
    """--game sim: the game's time limit in game days (a draw after it)."""
    games: int = 1
    """--game sim: games to play one after another (each on the next seed); the page stays up after."""
    pace: float = 1.0
    """--game sim: virtual seconds of play per wall second (1: as fast as a person would see it)."""
    fps: float = 5.0
    """Frames a second sent to the page."""
    quality: int = 80
    """JPEG quality of the frames (1..95)."""
    seconds: float = 0.0
    """Stop serving after this many seconds (0: until Ctrl+C or SIGTERM)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        host, _ = parse_listen(self.listen)
        if not is_loopback(host) and not self.allow_remote:
            raise UserError(
                f"--listen {self.listen} is not a loopback address; add --allow-remote to serve the page "
                "on the network"
            )
        sim_only = {"--checkpoint": self.checkpoint is not None}
        if self.game != "sim" and any(sim_only.values()):
            raise UserError("--checkpoint plays a game opened here: only with --game sim")
        if self.side not in ("BLU", "RED"):
            raise UserError(f"--side must be BLU or RED, not {self.side!r}")
        if self.speed not in (1, 2, 3, 4, 5):
            raise UserError(f"--speed must be 1..5, not {self.speed}")
        if not 1 <= self.max_days <= 10_000:
            raise UserError(f"--max-days must be in 1..10000, not {self.max_days}")
        if not 1 <= self.games <= 10_000:
            raise UserError(f"--games must be in 1..10000, not {self.games}")
        if not 0.01 <= self.pace <= 1000:
            raise UserError(f"--pace must be in 0.01..1000, not {self.pace}")
        if not 0.2 <= self.fps <= 60:
            raise UserError(f"--fps must be in 0.2..60, not {self.fps}")
        if not 1 <= self.quality <= 95:
            raise UserError(f"--quality must be in 1..95, not {self.quality}")
        if not 0 <= self.seconds <= 10**7:
            raise UserError(f"--seconds must be >= 0, not {self.seconds}")
