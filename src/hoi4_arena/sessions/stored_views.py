"""The views stored at capture time: the policy's views of every recorded frame, beside the video.

A recorder already has each frame's views (the workers compute them before transport) or computes them
from the frame it stores, with the exact integer area average (`screen/resample.py`). Stored, they let
training skip video decoding for the games the project recorded itself, and they are what the policy
saw while playing: live frames, not lossy decoded ones. The video can always recompute them (from an
ffv1 video exactly), so the file is a cache: a session without one, or with a damaged one, is decoded.

One file per view layout, `views-<layout name>.bin`:

    header   b"HOI4VIEW", uint32 JSON length, uint32 crc32 of the JSON, the JSON (utf-8):
             {"format": 1, "identity": "views1-g72x128-q90x160-f64", "layout": {...}, "screen": [w, h],
              "arrays": [["global", [72, 128, 3]], ["quadrants", [4, 90, 160, 3]], ["fovea", [64, 64, 3]]],
              "frame_bytes": 212736, "keyframe_every": 32, "compression": "zlib-1"}
    records  one per frame, in frame order: 16 bytes b"VR", kind (0 key, 1 delta), 0, uint32 frame index,
             uint32 payload length, uint32 crc32 (of the 12 bytes before it and the payload), then the
             payload: zlib of the frame's arrays, flattened and concatenated in header order; a delta
             record holds their uint8 difference (mod 256) from the previous frame's. Frames whose index
             is a multiple of `keyframe_every` are keys, so any frame is at most 31 deltas from one.

The identity is what decides a frame's views: the view algorithm and the sizes of the global view, the
quadrants and the fovea (the clip length and template regions do not change them). Each record is
written and flushed before its frame's line goes into frames.jsonl, so a killed recorder leaves at
least as many whole records as frames.jsonl lists (perhaps one torn record more); `salvage` cuts the
file to the frames the session keeps. Same frames, same bytes: nothing in the file depends on the clock.

Try: .venv/bin/python -m hoi4_arena.sessions.stored_views runs/s1     # what each views file holds
"""

from __future__ import annotations

import json
import logging
import os
import re
import struct
import sys
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.screen.layout import VERSION_PREFIX, ViewLayout

log = logging.getLogger(__name__)

FORMAT = 1
MAGIC = b"HOI4VIEW"
_HEADER = struct.Struct("<II")  # JSON length, crc32 of the JSON
_RECORD = struct.Struct("<2sBBIII")  # b"VR", kind, 0, frame index, payload length, crc32
_TAG = b"VR"
KEY, DELTA = 0, 1
KEYFRAME_EVERY = 32
"""A key record every 32 frames: reading any frame costs at most 31 deltas, and a damaged record
spoils only the frames up to the next key."""
ZLIB_LEVEL = 1
FILE_RE = re.compile(r"^views-[a-z0-9_-]+\.bin$")
MANIFEST_KEY = "stored_views"
"""The manifest's `extra[MANIFEST_KEY]` maps each views file a recorder writes to its identity, so a
reader can tell a missing file from a session that never had one."""
_MAX_HEADER = 1 << 16
_ORDER = ("global", "quadrants", "fovea")  # screen.views.VIEW_NAMES, without importing the resampler


class StoredViewsError(Exception):
    """A views file that cannot be used: the message says which file and why."""


def identity(layout: ViewLayout) -> str:
    """What decides one frame's views under `layout`, e.g. views1-g72x128-q90x160-f64."""
    (gh, gw), (qh, qw) = layout.global_size, layout.quadrant_size
    return f"{VERSION_PREFIX}-g{gh}x{gw}-q{qh}x{qw}-f{layout.fovea}"


def file_name(layout: ViewLayout) -> str:
    return f"views-{layout.name}.bin"


def view_shapes(layout: ViewLayout) -> list[tuple[str, tuple[int, ...]]]:
    """Each view's name and shape, in the order a record holds them."""
    f = layout.fovea
    shapes = {
        "global": (*layout.global_size, 3),
        "quadrants": (4, *layout.quadrant_size, 3),
        "fovea": (f, f, 3),
    }
    return [(name, shapes[name]) for name in _ORDER]


def layouts_to_store(names: Any, size: tuple[int, int]) -> list[ViewLayout]:
    """The layouts (names or `ViewLayout`s) whose views a recording of a `size` screen stores.

    An unknown name is a `UserError`; a layout the screen is too small for is left out with a warning
    (training refuses such a session anyway, and a recording should not fail for it).
    """
    if isinstance(names, str | ViewLayout):
        names = (names,)
    out: dict[str, ViewLayout] = {}
    for name in names:
        layout = name if isinstance(name, ViewLayout) else ViewLayout.named(name)
        try:
            layout.check_screen(size)
        except ValueError as error:
            log.warning("not storing the views of layout %s: %s", layout.name, error)
            continue
        out.setdefault(layout.name, layout)
    return list(out.values())


def views_of(
    layout: ViewLayout, frame: np.ndarray, pointer: tuple[int, int], computed: Mapping[str, np.ndarray] | None
) -> dict[str, np.ndarray]:
    """`computed` (a capture's views) when they are this layout's, else the views of `frame`."""
    if computed and all(
        isinstance(computed.get(name), np.ndarray)
        and computed[name].dtype == np.uint8
        and computed[name].shape == shape
        for name, shape in view_shapes(layout)
    ):
        return dict(computed)
    from hoi4_arena.screen.views import compute_views

    return compute_views(frame, pointer, layout)


def _crc(head: bytes, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(head))


# --- writing ---------------------------------------------------------------------------------------


class ViewsWriter:
    """Appends one record per frame to a new views file; every record is flushed as it is written."""

    def __init__(self, path: str | os.PathLike, layout: ViewLayout, size: tuple[int, int]) -> None:
        self.path = Path(path)
        self.layout = layout
        self.shapes = view_shapes(layout)
        self.frame_bytes = sum(int(np.prod(shape)) for _, shape in self.shapes)
        height, width = size
        header = {
            "format": FORMAT,
            "identity": identity(layout),
            "layout": layout.to_dict(),
            "screen": [width, height],
            "arrays": [[name, list(shape)] for name, shape in self.shapes],
            "frame_bytes": self.frame_bytes,
            "keyframe_every": KEYFRAME_EVERY,
            "compression": f"zlib-{ZLIB_LEVEL}",
        }
        text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        self._file: IO[bytes] = open(self.path, "xb")  # noqa: SIM115 -- open for the writer's lifetime
        self._file.write(MAGIC + _HEADER.pack(len(text), zlib.crc32(text)) + text)
        self._file.flush()
        self._previous: np.ndarray | None = None
        self.frames = 0

    def add(self, index: int, views: Mapping[str, np.ndarray]) -> None:
        """Store frame `index`'s views (it must be the next frame: 0, 1, 2, ...)."""
        if index != self.frames:
            raise ValueError(f"{self.path}: frame {index} stored after {self.frames} frames")
        parts = []
        for name, shape in self.shapes:
            array = views[name]
            if array.dtype != np.uint8 or array.shape != shape:
                raise ValueError(f"view {name!r} must be {shape} uint8, got {array.shape} {array.dtype}")
            parts.append(array.reshape(-1))
        flat = np.concatenate(parts)
        kind = KEY if index % KEYFRAME_EVERY == 0 else DELTA
        data = flat if kind == KEY else np.subtract(flat, self._previous, dtype=np.uint8)
        payload = zlib.compress(data.tobytes(), ZLIB_LEVEL)
        head = _RECORD.pack(_TAG, kind, 0, index, len(payload), 0)[:12]
        self._file.write(head + struct.pack("<I", _crc(head, payload)) + payload)
        self._file.flush()
        self._previous = flat
        self.frames += 1

    def close(self) -> None:
        """Flush, fsync and close (idempotent)."""
        if self._file.closed:
            return
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()


# --- reading ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Record:
    offset: int
    """Where the record's payload starts."""
    kind: int
    length: int
    crc: int


class StoredViews:
    """A views file opened for reading: its header, and where each whole record lies.

    `open` reads the header and the 16-byte record heads (not the payloads): a file that does not start
    with a valid header, or with anything but records in frame order, is a `StoredViewsError`; a torn
    last record (a killed recorder) only ends the prefix (`torn`). `views_at(i)` checks the crc32 of
    every record it reads; it is fastest in increasing order (a session's decisions).
    """

    def __init__(
        self, path: Path, header: dict[str, Any], header_end: int, records: list[_Record], end: int, size: int
    ) -> None:
        self.path = path
        self.header = header
        self.header_end = header_end
        self.records = records
        self.end = end
        """Offset just past the last whole record."""
        self.torn = size > end
        self.shapes = [(str(name), tuple(int(v) for v in shape)) for name, shape in header["arrays"]]
        self.frame_bytes = int(header["frame_bytes"])
        self.keyframe_every = int(header["keyframe_every"])
        self._file: IO[bytes] | None = None
        self._current: tuple[int, np.ndarray] | None = None

    @property
    def frames(self) -> int:
        return len(self.records)

    @property
    def identity(self) -> str:
        return str(self.header["identity"])

    @property
    def screen(self) -> tuple[int, int]:
        width, height = self.header["screen"]
        return int(width), int(height)

    @classmethod
    def open(cls, path: str | os.PathLike) -> StoredViews:
        path = Path(path)
        try:
            handle = open(path, "rb")  # noqa: SIM115 -- closed below
        except OSError as error:
            raise StoredViewsError(f"{path.name}: cannot be read ({error.strerror})") from None
        with handle:
            size = os.fstat(handle.fileno()).st_size
            start = handle.read(len(MAGIC) + _HEADER.size)
            if len(start) < len(MAGIC) + _HEADER.size or not start.startswith(MAGIC):
                raise StoredViewsError(f"{path.name}: not a views file (no header)")
            length, crc = _HEADER.unpack_from(start, len(MAGIC))
            text = handle.read(length) if length <= _MAX_HEADER else b""
            if len(text) != length or zlib.crc32(text) != crc:
                raise StoredViewsError(f"{path.name}: its header fails its checksum")
            try:
                header = json.loads(text)
                if header["format"] != FORMAT:
                    raise StoredViewsError(
                        f"{path.name}: views format {header['format']}, this code reads {FORMAT}; "
                        "update hoi4-arena"
                    )
                shapes = [(str(n), tuple(int(v) for v in s)) for n, s in header["arrays"]]
                every = int(header["keyframe_every"])
                frame_bytes = int(header["frame_bytes"])
                str(header["identity"])
                width, height = (int(v) for v in header["screen"])
            except (ValueError, KeyError, TypeError) as error:
                raise StoredViewsError(f"{path.name}: unreadable header ({error})") from None
            if every < 1 or frame_bytes != sum(int(np.prod(s)) for _, s in shapes):
                raise StoredViewsError(f"{path.name}: its header's sizes disagree")
            records: list[_Record] = []
            offset = header_end = handle.tell()
            while offset + _RECORD.size <= size:
                head = handle.read(_RECORD.size)
                tag, kind, zero, index, length, crc = _RECORD.unpack(head)
                if tag != _TAG or zero != 0 or index != len(records):
                    raise StoredViewsError(
                        f"{path.name}: no record of frame {len(records)} at byte {offset} (damaged)"
                    )
                if kind != (KEY if index % every == 0 else DELTA) or length > 2 * frame_bytes + 1024:
                    raise StoredViewsError(f"{path.name}: record of frame {index} is damaged")
                if offset + _RECORD.size + length > size:
                    break  # torn: the recorder was killed while writing it
                records.append(_Record(offset + _RECORD.size, kind, length, crc))
                offset += _RECORD.size + length
                handle.seek(offset)
        return cls(path, header, header_end, records, offset, size)

    def matches(self, layout: ViewLayout) -> bool:
        """Whether these are `layout`'s views (same identity and shapes)."""
        return self.identity == identity(layout) and self.shapes == view_shapes(layout)

    def _payload(self, index: int) -> tuple[int, bytes]:
        record = self.records[index]
        if self._file is None:
            try:
                self._file = open(self.path, "rb")  # noqa: SIM115 -- closed by close()
            except OSError as error:
                raise StoredViewsError(f"{self.path.name}: cannot be read ({error.strerror})") from None
        self._file.seek(record.offset)
        payload = self._file.read(record.length)
        head = _RECORD.pack(_TAG, record.kind, 0, index, record.length, 0)[:12]
        if len(payload) != record.length or _crc(head, payload) != record.crc:
            raise StoredViewsError(f"{self.path.name}: the record of frame {index} fails its checksum")
        return record.kind, payload

    def _flat(self, index: int) -> np.ndarray:
        kind, payload = self._payload(index)
        try:
            data = zlib.decompress(payload)
        except zlib.error:
            raise StoredViewsError(
                f"{self.path.name}: the record of frame {index} does not decompress"
            ) from None
        if len(data) != self.frame_bytes:
            raise StoredViewsError(
                f"{self.path.name}: the record of frame {index} holds {len(data)} bytes, not {self.frame_bytes}"
            )
        array = np.frombuffer(data, np.uint8)
        if kind == KEY:
            return array.copy()
        assert self._current is not None and self._current[0] == index - 1
        return np.add(self._current[1], array, dtype=np.uint8)

    def views_at(self, index: int) -> dict[str, np.ndarray]:
        """Frame `index`'s views: 'global', 'quadrants', 'fovea', uint8 (views into one buffer per frame,
        which no other frame's reading changes)."""
        if not 0 <= index < len(self.records):
            raise StoredViewsError(f"{self.path.name}: holds {len(self.records)} frames, not frame {index}")
        current = self._current
        if current is None or not (
            current[0] <= index and current[0] // self.keyframe_every == index // self.keyframe_every
        ):
            current = None
            first = index - index % self.keyframe_every
        else:
            first = current[0] + 1
        for i in range(first, index + 1):
            self._current = current = (i, self._flat(i))
        flat = current[1]
        out, at = {}, 0
        for name, shape in self.shapes:
            size = int(np.prod(shape))
            out[name] = flat[at : at + size].reshape(shape)
            at += size
        return out

    def check(self, index: int) -> None:
        """Check frame `index`'s record against its checksum (`StoredViewsError` when it fails)."""
        self._payload(index)

    def verify(self) -> None:
        """Check every record's checksum (reads the whole file); `StoredViewsError` at the first bad one."""
        for index in range(len(self.records)):
            self._payload(index)

    def prefix_end(self, frames: int) -> int:
        """The file's length cut to its first `frames` records (what salvage keeps)."""
        if not 0 <= frames <= len(self.records):
            raise StoredViewsError(f"{self.path.name}: holds {len(self.records)} frames, not {frames}")
        if frames == 0:
            return self.header_end
        last = self.records[frames - 1]
        return last.offset + last.length

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._current = None

    def __enter__(self) -> StoredViews:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def views_files(folder: str | os.PathLike) -> list[Path]:
    """The views files of a session folder, by name."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if FILE_RE.match(p.name) and p.is_file())


def for_layout(
    folder: str | os.PathLike, layout: ViewLayout, frames: int, screen: tuple[int, int], expected: Any = None
) -> tuple[StoredViews | None, str | None]:
    """The session's stored views of `layout` when they can stand in for its video, or why not.

    `frames` and `screen` ([width, height]) are the session's; `expected` is the manifest's
    `extra["stored_views"]` (the files its recorder wrote). The reason is None when there is nothing
    to say: the session never had stored views (an imported video, an older recording).
    """
    folder = Path(folder)
    found, reasons = [], []
    for path in views_files(folder):
        try:
            stored = StoredViews.open(path)
        except StoredViewsError as error:
            reasons.append(str(error))
            continue
        if stored.matches(layout):
            found.append(stored)
        else:
            reasons.append(
                f"{path.name} holds views of layout {stored.identity}, training uses {identity(layout)}"
            )
    for stored in found:
        if stored.screen != tuple(screen):
            reasons.append(f"{stored.path.name} was made from a {stored.screen[0]}x{stored.screen[1]} screen")
        elif stored.frames != frames or stored.torn:
            torn = " and a torn record" if stored.torn else ""
            reasons.append(f"{stored.path.name} holds {stored.frames} frames{torn}, the session {frames}")
        else:
            return stored, None
    if reasons:
        return None, "; ".join(reasons)
    wanted = identity(layout)
    if isinstance(expected, dict) and wanted in expected.values():
        names = ", ".join(name for name, value in expected.items() if value == wanted)
        return None, f"its stored views ({names}) are missing"
    return None, None


SAMPLES = 8
"""Frames check-session compares: keyframes of the video spread over the session (one decode each)."""
LOSSY_TOLERANCE = 4.0
"""The mean absolute difference (levels of 0..255) allowed per view between the stored views and those
of the decoded video with a lossy codec. x264 CRF 18 4:4:4 on the simulator at 960x540 measured at most
0.8 (global), 0.9 (quadrants) and 2.1 (fovea, native pixels around the pointer); a stored view of another
frame or another pointer position differs by far more wherever the screen changes. ffv1 must be equal."""


def sample_frames(video: Path, count: int = SAMPLES) -> list[tuple[int, np.ndarray]]:
    """Up to `count` keyframes of the video, spread evenly, as (frame index, RGB image).

    Only keyframes: each costs one seek and one decoded frame, never the frames before it.
    """
    import av

    from hoi4_arena.sessions.video import to_rgb

    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        packets = (packet for packet in container.demux(stream) if packet.size)
        keys = [(i, packet.pts) for i, packet in enumerate(packets) if packet.is_keyframe]
        if len(keys) > count:
            keys = (
                [keys[round(k * (len(keys) - 1) / (count - 1))] for k in range(count)]
                if count > 1
                else keys[:1]
            )
        out = []
        for index, pts in keys:
            container.seek(pts, stream=stream, backward=True, any_frame=False)
            image = None
            for packet in container.demux(stream):
                for frame in packet.decode():
                    if frame.pts == pts:
                        image = to_rgb(frame)
                    if frame.pts is not None and frame.pts >= pts:
                        break
                if image is not None or (packet.pts is not None and packet.pts > pts):
                    break
            if image is not None:
                out.append((index, image))
    return out


def check_session_views(folder: Path, frames: list, screen: tuple[int, int], codec: str) -> dict[str, Any]:
    """check-session's look at a complete session's views files; {"files", "problems", "warnings"}.

    Each file: its header and every record's checksum, its frame count and screen against the
    session's, then a sample of frames compared with the views of the decoded video (`sample_frames`):
    equal with ffv1, within `LOSSY_TOLERANCE` with a lossy codec. A file training cannot use is a
    warning (training decodes the video instead); stored views that drift from their video are a
    problem, since training would use them.
    """
    from hoi4_arena.screen.views import compute_views
    from hoi4_arena.sessions.format import VIDEO

    out: dict[str, Any] = {"files": [], "problems": [], "warnings": []}
    files = views_files(folder)
    samples: list[tuple[int, np.ndarray]] | None = None
    tolerance = 0.0 if codec == "ffv1" else LOSSY_TOLERANCE
    for path in files:
        entry: dict[str, Any] = {"file": path.name, "bytes": path.stat().st_size}
        out["files"].append(entry)
        try:
            with StoredViews.open(path) as stored:
                entry.update(identity=stored.identity, frames=stored.frames)
                stored.verify()
                if stored.screen != tuple(screen) or stored.frames != len(frames) or stored.torn:
                    raise StoredViewsError(
                        f"{path.name}: {stored.frames} frames of a {stored.screen[0]}x{stored.screen[1]} screen"
                        f"{' and a torn record' if stored.torn else ''}; the session has {len(frames)} of "
                        f"{screen[0]}x{screen[1]}"
                    )
                layout = ViewLayout.from_dict(stored.header["layout"])
                if samples is None:
                    samples = sample_frames(folder / VIDEO)
                mean: dict[str, float] = {}
                worst: dict[str, int] = {}
                for index, image in samples:
                    if index >= len(frames):
                        continue
                    decoded = compute_views(image, frames[index].pointer_px, layout)
                    for name, view in stored.views_at(index).items():
                        diff = np.abs(view.astype(np.int16) - decoded[name].astype(np.int16))
                        mean[name] = max(mean.get(name, 0.0), float(diff.mean()))
                        worst[name] = max(worst.get(name, 0), int(diff.max()))
        except (StoredViewsError, UserError, ValueError) as error:  # UserError: a layout the code refuses
            entry["verdict"] = "unusable"
            out["warnings"].append(f"{error}; training decodes this session's video instead")
            continue
        entry.update(
            sampled=[index for index, _ in samples or []],
            mean_abs_diff={k: round(v, 3) for k, v in mean.items()},
            max_abs_diff=worst,
            tolerance=tolerance,
        )
        drift = {k: v for k, v in mean.items() if v > tolerance}
        entry["verdict"] = "drift" if drift else ("equal" if not any(worst.values()) else "within")
        if drift:
            listed = ", ".join(f"{k} {v:.2f}" for k, v in sorted(drift.items()))
            out["problems"].append(
                f"{path.name}: the stored views drift from the video's ({codec}) at the sampled frames: "
                f"mean |difference| {listed} levels, allowed {tolerance:g}"
            )
    return out


def describe(folder: str | os.PathLike) -> list[dict[str, Any]]:
    """What each views file of a session holds (for people and check-session)."""
    out = []
    for path in views_files(folder):
        entry: dict[str, Any] = {"file": path.name, "bytes": path.stat().st_size}
        try:
            stored = StoredViews.open(path)
        except StoredViewsError as error:
            entry["error"] = str(error)
        else:
            entry.update(identity=stored.identity, frames=stored.frames, torn=stored.torn)
        out.append(entry)
    return out


if __name__ == "__main__":
    for entry in describe(sys.argv[1]):
        print(json.dumps(entry))
