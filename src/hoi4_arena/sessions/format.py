"""The session folder format: file names, the manifest, frame records, and strict JSON-lines reading.

A session is one folder (DESIGN.md "Sessions on disk"):

    manifest.json     SessionManifest: schema version, id, source, split, screen, hz, codec, game speed, ...
    frames.jsonl      one FrameRecord a line: index, t_ns (worker clock), pointer (lattice), pointer_px, focus
    inputs.jsonl      one InputEvent.to_dict() a line, on the same clock as the frames
    screen.mkv        the video; frame i of the video is line i of frames.jsonl
    arena-log.jsonl   {"frame": i, "line": "ARENA ..."}: each game.log line with the frame it was read at
    views-cpu.bin     the policy's views of every frame, stored at capture time (stored_views.py)
    recording.lock    names the recording process (pid, hostname, start) while it runs

Everything here reads strictly: a bad line is a `UserError` naming the file, the line and the problem.
Only an unfinished session (killed recorder) may end in a torn line, and only `salvage` cuts it.

Try: hoi4-arena check-session runs/my-session
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import subprocess
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.lattice import LATTICE

SCHEMA_VERSION = 1
"""Bumped whenever a reader of the previous version would misread a new session."""

MANIFEST = "manifest.json"
FRAMES = "frames.jsonl"
INPUTS = "inputs.jsonl"
VIDEO = "screen.mkv"
ARENA_LOG = "arena-log.jsonl"
LOCK = "recording.lock"
BACKUP = "salvage-backup"
"""Inside a salvaged session: what salvage replaced, so that `salvage --undo` can put it back."""

SOURCES = ("human", "scripted", "ai", "policy", "video")
"""Who made a session's inputs; `video` is a video imported without any (sessions/import_video.py)."""
SPLITS = ("train", "val", "test")
GAMES = ("sim", "hoi4")
CODECS = ("x264", "ffv1", "nvenc")
SOURCE_CODEC = "source"
"""The codec of an imported video kept as it was (its manifest's `video` names the real one)."""
GAME_SPEEDS = (1, 2, 3, 4, 5)


def code_version() -> str:
    """The package version, plus the git commit when the code runs from a checkout."""
    from hoi4_arena import __version__

    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return __version__
    commit = out.stdout.strip()
    return f"{__version__}+git.{commit}" if out.returncode == 0 and commit else __version__


def _now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclass
class SessionManifest:
    """What a session is: written at the start of a recording and completed by `close` or `salvage`."""

    source: str
    """Who made the inputs: human, scripted, ai, policy, or video (imported, no inputs)."""
    game_speed: int
    """HOI4's game speed 1..5 during the recording; required, because it changes what an input means."""
    screen: tuple[int, int]
    """Client size [width, height] in pixels."""
    hz: float
    """Nominal capture rate. Frame timing lives in frames.jsonl, never in the video's rate."""
    game: str = "sim"
    """sim (the built-in simulator) or hoi4."""
    codec: str = "x264"
    """x264 (CRF 4:4:4), ffv1 (lossless), nvenc, or source (an imported video kept as it was)."""
    split: str = "train"
    """train, val or test; a data folder's splits.json overrides it."""
    id: str = ""
    """Unique session id; generated from the creation time when empty."""
    arena: str | None = None
    """The arena map spec (preset, preset:seed or map folder) on an arena game."""
    players: dict[str, str] = field(default_factory=dict)
    """Who controlled each side, e.g. {"BLU": "human", "RED": "ai"}."""
    side: str | None = None
    """The side whose inputs this session records."""
    declarer: str | None = None
    """The side that declared war."""
    winner: str | None = None
    """The side that won, "draw", or None when the game did not end."""
    complete: bool = False
    """True once `close` or `salvage` finished the session; training skips incomplete sessions."""
    frames: int = 0
    """Frames in the video (= lines of frames.jsonl) once complete."""
    dropped_frames: int = 0
    """Frames the encoder could not keep up with; they are in neither the video nor frames.jsonl."""
    ended: dict[str, Any] | None = None
    """Why the recording ended: {"reason": ..., ...}."""
    focus_pauses: list[dict[str, int]] = field(default_factory=list)
    """Intervals {"start_ns", "end_ns"} while the game had no focus and recording paused."""
    orders: list[Any] | None = None
    """The orders a scripted player gave, in order."""
    video: dict[str, Any] = field(default_factory=dict)
    """Encoder settings the writer used (codec name, pixel format, quality)."""
    created: str = ""
    """Creation time, ISO 8601 UTC."""
    code_version: str = ""
    """hoi4-arena version (and git commit) that wrote the session."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Anything else a recorder wants to keep (worker details, notes)."""
    schema: int = SCHEMA_VERSION
    """Format version of the session folder."""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {self.source!r}")
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {self.split!r}")
        if self.game not in GAMES:
            raise ValueError(f"game must be one of {', '.join(GAMES)}, not {self.game!r}")
        if self.codec not in (*CODECS, SOURCE_CODEC):
            raise ValueError(f"codec must be one of {', '.join((*CODECS, SOURCE_CODEC))}, not {self.codec!r}")
        if isinstance(self.game_speed, bool) or self.game_speed not in GAME_SPEEDS:
            raise ValueError(f"game_speed must be one of 1..5, not {self.game_speed!r}")
        screen = tuple(self.screen) if isinstance(self.screen, list | tuple) else ()
        if len(screen) != 2 or not all(_is_int(v) and 16 <= v <= 16384 for v in screen):
            raise ValueError(f"screen must be [width, height] in pixels (16..16384), not {self.screen!r}")
        self.screen = (int(screen[0]), int(screen[1]))
        if isinstance(self.hz, bool) or not isinstance(self.hz, int | float) or not 0.1 <= self.hz <= 240:
            raise ValueError(f"hz must be a number in 0.1..240, not {self.hz!r}")
        for name in ("frames", "dropped_frames"):
            value = getattr(self, name)
            if not _is_int(value) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
        if not isinstance(self.complete, bool):
            raise ValueError(f"complete must be true or false, not {self.complete!r}")
        if not isinstance(self.players, dict) or not all(
            isinstance(k, str) and v in SOURCES for k, v in self.players.items()
        ):
            raise ValueError(f"players must map a side to one of {', '.join(SOURCES)}, not {self.players!r}")
        if self.ended is not None and not (
            isinstance(self.ended, dict) and isinstance(self.ended.get("reason"), str)
        ):
            raise ValueError(f"ended must be an object with a reason, not {self.ended!r}")
        if not isinstance(self.focus_pauses, list) or not all(
            isinstance(p, dict) and _is_int(p.get("start_ns")) and _is_int(p.get("end_ns"))
            for p in self.focus_pauses
        ):
            raise ValueError("focus_pauses must be a list of {start_ns, end_ns} objects")
        if not _is_int(self.schema) or self.schema < 1:
            raise ValueError(f"schema must be a positive integer, not {self.schema!r}")
        if not self.id:
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
            self.id = f"{stamp}-{secrets.token_hex(3)}"
        if not isinstance(self.id, str) or any(c in self.id for c in "/\\\n"):
            raise ValueError(f"id must be a plain string without slashes, not {self.id!r}")
        if not self.created:
            self.created = _now_iso()
        if not self.code_version:
            self.code_version = code_version()

    @property
    def size(self) -> tuple[int, int]:
        """Client size as (height, width), the Python convention."""
        return (self.screen[1], self.screen[0])

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["screen"] = list(self.screen)
        return data

    @classmethod
    def from_dict(cls, data: Any, where: str = MANIFEST) -> SessionManifest:
        """Validate a manifest read from disk; `UserError` naming `where` and the problem otherwise."""
        if not isinstance(data, dict):
            raise UserError(f"{where}: expected a JSON object, found {type(data).__name__}")
        schema = data.get("schema")
        if _is_int(schema) and schema > SCHEMA_VERSION:
            raise UserError(
                f"{where}: session schema {schema} is newer than this hoi4-arena understands "
                f"({SCHEMA_VERSION}); update hoi4-arena to read it"
            )
        if "game_speed" not in data or data["game_speed"] is None:
            raise UserError(
                f"{where}: no game_speed; a session without its game speed is refused because the same "
                "input means different things at different speeds (re-record with --game-speed, or add "
                '"game_speed": 1..5 to the manifest if you know it)'
            )
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise UserError(f"{where}: unknown fields {', '.join(unknown)} (schema {SCHEMA_VERSION})")
        missing = sorted(n for n in ("source", "screen", "hz") if n not in data)
        if missing:
            raise UserError(f"{where}: missing required fields {', '.join(missing)}")
        try:
            return cls(**data)
        except (TypeError, ValueError) as error:
            raise UserError(f"{where}: {error}") from None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def write_json_atomic(path: Path, data: Any) -> None:
    """Replace `path` with `data` so a reader (or a kill) never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, allow_nan=False)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def session_folder(folder: str | os.PathLike) -> Path:
    """`folder` as a Path, or a `UserError` saying why it is not a session folder."""
    path = Path(folder)
    if not path.exists():
        raise UserError(f"{path}: no such folder")
    if not path.is_dir():
        raise UserError(f"{path}: not a folder (a session is a folder with {MANIFEST} in it)")
    if not (path / MANIFEST).is_file():
        raise UserError(f"{path}: not a session folder (no {MANIFEST})")
    return path


def load_manifest(folder: str | os.PathLike) -> SessionManifest:
    path = session_folder(folder) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise UserError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    return SessionManifest.from_dict(data, where=str(path))


# --- JSON lines -----------------------------------------------------------------------------------


@dataclass
class JsonLines:
    """A JSON-lines file split into complete lines, plus a torn tail a killed writer may leave."""

    path: Path
    lines: list[bytes]
    """Complete lines, each without its newline."""
    torn: bytes = b""
    """Bytes after the last newline: the start of a line that was never finished."""

    @classmethod
    def read(cls, path: Path) -> JsonLines:
        if not path.is_file():
            raise UserError(f"{path}: missing")
        data = path.read_bytes()
        body, newline, torn = data.rpartition(b"\n")
        if not newline:
            return cls(path, [], torn)
        return cls(path, body.split(b"\n"), torn)

    def records(self, *, allow_torn: bool = False) -> list[Any]:
        """The parsed lines; a torn tail is an error unless `allow_torn` (then it is left out)."""
        if self.torn and not allow_torn:
            raise UserError(
                f"{self.path}: line {len(self.lines) + 1} is cut short (no newline at the end of the file); "
                "the recorder was killed mid-line: run `hoi4-arena salvage` on the session"
            )
        out = []
        for number, line in enumerate(self.lines, start=1):
            try:
                out.append(json.loads(line.decode("utf-8")))
            except UnicodeDecodeError:
                raise UserError(f"{self.path}: line {number} is not UTF-8 text") from None
            except json.JSONDecodeError as error:
                raise UserError(f"{self.path}: line {number} is not valid JSON ({error.msg})") from None
        return out


@dataclass(frozen=True, slots=True)
class FrameRecord:
    """One line of frames.jsonl: frame `index` of the video, captured at `t_ns` on the worker's clock."""

    index: int
    t_ns: int
    pointer: tuple[int, int]
    """Pointer on the LATTICE x LATTICE lattice."""
    pointer_px: tuple[int, int]
    """Pointer in client pixels (x, y)."""
    focus: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "t_ns": self.t_ns,
            "pointer": list(self.pointer),
            "pointer_px": list(self.pointer_px),
            "focus": self.focus,
        }


def parse_frames(raw: list[Any], path: Path, screen: tuple[int, int]) -> list[FrameRecord]:
    """Validate frames.jsonl records: fields, indices 0..n-1 in order, strictly increasing times."""
    width, height = screen
    out: list[FrameRecord] = []
    previous_t = None
    for number, data in enumerate(raw, start=1):
        where = f"{path}: line {number}"
        if not isinstance(data, dict) or set(data) != {"index", "t_ns", "pointer", "pointer_px", "focus"}:
            raise UserError(f"{where}: expected an object with index, t_ns, pointer, pointer_px, focus")
        index, t_ns, focus = data["index"], data["t_ns"], data["focus"]
        pointer, pointer_px = data["pointer"], data["pointer_px"]
        if index != number - 1 or not _is_int(index):
            raise UserError(f"{where}: frame index {index!r} out of order (expected {number - 1})")
        if not _is_int(t_ns):
            raise UserError(f"{where}: t_ns must be an integer (nanoseconds), not {t_ns!r}")
        if previous_t is not None and t_ns <= previous_t:
            raise UserError(
                f"{where}: capture time {t_ns} does not increase (previous frame at {previous_t})"
            )
        if not _is_pair(pointer, LATTICE, LATTICE):
            raise UserError(f"{where}: pointer must be [x, y] on the {LATTICE} lattice, not {pointer!r}")
        if not _is_pair(pointer_px, width, height):
            raise UserError(f"{where}: pointer_px must be [x, y] inside {width}x{height}, not {pointer_px!r}")
        if not isinstance(focus, bool):
            raise UserError(f"{where}: focus must be true or false, not {focus!r}")
        out.append(FrameRecord(index, t_ns, tuple(pointer), tuple(pointer_px), focus))
        previous_t = t_ns
    return out


def _is_pair(value: Any, width: int, height: int) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(_is_int(v) for v in value)
        and 0 <= value[0] < width
        and 0 <= value[1] < height
    )


def parse_inputs(raw: list[Any], path: Path) -> list[InputEvent]:
    """Validate inputs.jsonl records as InputEvents with non-decreasing times."""
    out: list[InputEvent] = []
    previous_t = None
    for number, data in enumerate(raw, start=1):
        where = f"{path}: line {number}"
        if not isinstance(data, dict):
            raise UserError(f"{where}: expected an input event object")
        try:
            event = InputEvent.from_dict(data)
        except (TypeError, ValueError) as error:
            raise UserError(f"{where}: {error}") from None
        if not _is_int(event.t_ns):
            raise UserError(f"{where}: t_ns must be an integer (nanoseconds), not {event.t_ns!r}")
        if previous_t is not None and event.t_ns < previous_t:
            raise UserError(f"{where}: event time {event.t_ns} goes back (previous event at {previous_t})")
        out.append(event)
        previous_t = event.t_ns
    return out


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One line of arena-log.jsonl: a game.log line and the frame index it was read at."""

    frame: int
    line: str


def parse_arena_log(raw: list[Any], path: Path) -> list[LogRecord]:
    out: list[LogRecord] = []
    previous = 0
    for number, data in enumerate(raw, start=1):
        where = f"{path}: line {number}"
        if not isinstance(data, dict) or set(data) != {"frame", "line"}:
            raise UserError(f'{where}: expected {{"frame": i, "line": "ARENA ..."}}')
        frame, line = data["frame"], data["line"]
        if not _is_int(frame) or frame < previous:
            raise UserError(f"{where}: frame {frame!r} must be an integer that never goes back")
        if not isinstance(line, str):
            raise UserError(f"{where}: line must be a string")
        out.append(LogRecord(frame, line))
        previous = frame
    return out
