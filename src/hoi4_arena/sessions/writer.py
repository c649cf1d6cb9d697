"""The session writer: what a recorder calls to turn captures, inputs and log lines into a session folder.

A recorder loop drives it from a worker (`Worker.capture` for frames, `Worker.events` for the person's
input, `Worker.game_log` for ARENA lines):

    with SessionWriter("runs/s1", SessionManifest(source="human", game_speed=4, screen=(960, 540), hz=10)) as w:
        offset = 0
        while recording:
            capture = worker.capture(CaptureRequest(views=False, full=True))
            index = w.add_frame(capture.frame, capture.t_ns, capture.pointer, capture.focus)
            w.add_inputs(worker.events())
            lines, offset = worker.game_log(offset)
            w.add_log_lines(lines, index)
            worker.wait_until(capture.t_ns + 100_000_000)
        w.close("seconds")

Every JSON line is flushed as it is written and the video is flushed packet by packet, so a recorder
killed at any moment leaves a session that `salvage` completes. Encoding runs on a background thread
behind a bounded queue: in realtime mode (the default) `add_frame` never waits for it, and a frame
that finds the queue full is dropped (neither in the video nor in frames.jsonl) and counted in the
manifest's `dropped_frames`; with `realtime=False` (the simulator's virtual clock) it waits instead,
until the frame is encoded.

What a SIGKILL loses: a frame's frames.jsonl line is written once its packet is in the muxer, which
holds the newest packet until the next one arrives, so frames.jsonl is at most one frame ahead of the
video and never behind it (salvage cuts at most that frame). With `realtime=False`, `add_frame` returns
only when its frame is in the muxer: a kill loses at most the newest frame. In realtime mode it also
loses the frames still queued behind a busy encoder (none while the encoder keeps up; at most
`VideoConfig.queue_frames`), and those have no line.

Try: python -m pytest tests/sessions/test_session_writer.py -q
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.lattice import to_lattice
from hoi4_arena.sessions import stored_views
from hoi4_arena.sessions.format import (
    ARENA_LOG,
    FRAMES,
    INPUTS,
    LOCK,
    MANIFEST,
    VIDEO,
    FrameRecord,
    SessionManifest,
    write_json_atomic,
)
from hoi4_arena.sessions.lock import acquire_lock
from hoi4_arena.sessions.video import VideoConfig, VideoEncoder

# Fields the writer owns: a recorder may not set them through update_manifest.
_WRITER_FIELDS = frozenset(
    {"schema", "complete", "frames", "dropped_frames", "video", "created", "code_version", "ended"}
)


class SessionWriter:
    """Writes one session folder; see the module docstring. Not thread-safe beyond one producer.

    `realtime` (a live game on the wall clock): a frame the encoder cannot take at once is dropped, so
    capture never stalls. Without it (a virtual clock, offline writing) `add_frame` waits for the
    encoder and drops nothing.

    `views` names the view layouts (screen/layout.py) whose views of every frame are stored beside the
    video (`sessions/stored_views.py`), so that training need not decode it; none by default.
    """

    def __init__(
        self,
        folder: str | os.PathLike,
        manifest: SessionManifest | dict,
        *,
        video: VideoConfig | None = None,
        realtime: bool = True,
        views: tuple[str, ...] = (),
    ) -> None:
        self.folder = Path(folder)
        self.realtime = realtime
        if self.folder.exists() and (not self.folder.is_dir() or any(self.folder.iterdir())):
            raise UserError(f"{self.folder}: already exists and is not an empty folder; choose a new one")
        if isinstance(manifest, dict):
            manifest = SessionManifest.from_dict(manifest, where="manifest")
        if video is None:
            video = VideoConfig(codec=manifest.codec)
        elif video.codec != manifest.codec:
            raise ValueError(f"video codec {video.codec!r} differs from the manifest's {manifest.codec!r}")
        self.manifest = dataclasses.replace(manifest, complete=False, frames=0, dropped_frames=0, ended=None)
        self._size = self.manifest.size
        layouts = stored_views.layouts_to_store(views, self._size)
        if layouts:
            names = {stored_views.file_name(layout): stored_views.identity(layout) for layout in layouts}
            self.manifest.extra = {**self.manifest.extra, stored_views.MANIFEST_KEY: names}
        missing = [p for p in (self.folder, *self.folder.parents) if not p.exists()]
        self.folder.mkdir(parents=True, exist_ok=True)
        self._files: list[IO[bytes]] = []
        self._encoder: VideoEncoder | None = None
        self._views: list[stored_views.ViewsWriter] = []
        try:
            self.lock = acquire_lock(self.folder)
            self._encoder = VideoEncoder(
                self.folder / VIDEO, self._size, self.manifest.hz, video, on_encoded=self._frame_encoded
            )
            self.manifest.video = self._encoder.settings
            self._write_manifest()
            self._frames_file = self._open(FRAMES)
            self._inputs_file = self._open(INPUTS)
            self._log_file = self._open(ARENA_LOG)
            for layout in layouts:
                path = self.folder / stored_views.file_name(layout)
                self._views.append(stored_views.ViewsWriter(path, layout, self._size))
        except BaseException:
            # Refused before anything was recorded: leave the disk as it was.
            for handle in self._files:
                handle.close()
            for store in self._views:
                store.close()
            for layout in layouts:
                (self.folder / stored_views.file_name(layout)).unlink(missing_ok=True)
            if self._encoder is not None:
                with contextlib.suppress(Exception):
                    self._encoder.close()
            for name in (FRAMES, INPUTS, ARENA_LOG, VIDEO, MANIFEST, MANIFEST + ".tmp", LOCK):
                (self.folder / name).unlink(missing_ok=True)
            if missing:
                shutil.rmtree(missing[-1], ignore_errors=True)
            raise
        self._mutex = threading.Lock()
        self.frames = 0
        self.dropped_frames = 0
        self.inputs = 0
        self.log_lines = 0
        self._first_t: int | None = None
        self._last_t: int | None = None
        self._last_input_t: int | None = None
        self._last_log_frame = 0
        self.closed = False
        self.summary: dict[str, Any] = {}

    def _open(self, name: str) -> IO[bytes]:
        handle = open(self.folder / name, "xb")  # noqa: SIM115 -- open for the writer's lifetime
        self._files.append(handle)
        return handle

    def _write_manifest(self) -> None:
        write_json_atomic(self.folder / MANIFEST, self.manifest.to_dict())

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"{self.folder}: the session writer is closed")

    # --- recording ---------------------------------------------------------------------------------

    def add_frame(
        self,
        frame: np.ndarray,
        t_ns: int,
        pointer: tuple[int, int],
        focus: bool = True,
        views: dict[str, np.ndarray] | None = None,
    ) -> int | None:
        """Record a capture taken at `t_ns` with the pointer at `pointer` (x, y) client pixels.

        `views` are the capture's views (`Capture.views`), stored for a layout they belong to instead of
        being computed again from `frame`. Returns the frame's index, or None when the encoder's queue
        was full and the frame was dropped.
        """
        self._check_open()
        height, width = self._size
        if not (
            isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.shape == (height, width, 3)
        ):
            shape = getattr(frame, "shape", None)
            raise ValueError(
                f"a frame must be ({height}, {width}, 3) uint8 RGB, got {shape} {getattr(frame, 'dtype', '')}"
            )
        t_ns = int(t_ns)
        if self._last_t is not None and t_ns <= self._last_t:
            raise ValueError(f"frame time {t_ns} does not increase (previous frame at {self._last_t})")
        x, y = int(pointer[0]), int(pointer[1])
        if not (0 <= x < width and 0 <= y < height):
            raise ValueError(f"pointer {pointer} is outside the {width}x{height} client")
        with self._mutex:
            if self.realtime and not self._encoder.has_room():
                self.dropped_frames += 1
                return None
            index = self.frames
            record = FrameRecord(index, t_ns, to_lattice(x, y, self._size), (x, y), bool(focus))
            # The stored views go out before the frame's line, so a kill never leaves a frame the views
            # files lack (salvage only cuts them).
            for store in self._views:
                store.add(index, stored_views.views_of(store.layout, frame, (x, y), views))
            # The encoding thread writes the line once the frame's packet is in the muxer (see the
            # module docstring): frames.jsonl leads the video by at most the packet the muxer holds.
            line = json.dumps(record.to_dict(), separators=(",", ":")).encode() + b"\n"
            self._encoder.submit(np.array(frame, copy=True), index, wait=not self.realtime, note=line)
            self.frames += 1
            if self._first_t is None:
                self._first_t = t_ns
            self._last_t = t_ns
            if not self.realtime:
                self._encoder.wait_encoded(index)
            return index

    def _frame_encoded(self, index: int, line: bytes) -> None:
        # On the encoding thread, the only writer of frames.jsonl.
        self._frames_file.write(line)
        self._frames_file.flush()

    def add_inputs(self, events: Iterable[InputEvent]) -> int:
        """Record input events (in time order, on the frames' clock); returns how many."""
        self._check_open()
        batch = list(events)
        for event in batch:
            if not isinstance(event, InputEvent):
                raise TypeError(f"expected InputEvent, got {type(event).__name__}")
            if self._last_input_t is not None and event.t_ns < self._last_input_t:
                raise ValueError(
                    f"input at {event.t_ns} goes back in time (previous input at {self._last_input_t})"
                )
            self._last_input_t = event.t_ns
        if batch:
            data = b"".join(event.to_json().encode() + b"\n" for event in batch)
            self._inputs_file.write(data)
            self._inputs_file.flush()
            self.inputs += len(batch)
        return len(batch)

    def add_log_lines(self, lines: Iterable[str], frame_index: int | None) -> int:
        """Record the ARENA lines among `lines` (game.log text) as read at frame `frame_index`.

        `frame_index` is the index `add_frame` returned for the capture the lines were read after (None,
        from a dropped frame, means the last recorded frame). Non-ARENA lines are skipped.
        """
        self._check_open()
        if frame_index is None:
            frame_index = max(self.frames - 1, 0)
        if not self._last_log_frame <= frame_index <= max(self.frames - 1, 0):
            raise ValueError(
                f"log frame index {frame_index} must lie in {self._last_log_frame}..{max(self.frames - 1, 0)}"
            )
        kept = [line.rstrip("\r\n") for line in lines if "ARENA" in line]
        if kept:
            data = b"".join(
                json.dumps({"frame": frame_index, "line": line}, ensure_ascii=False).encode() + b"\n"
                for line in kept
            )
            self._log_file.write(data)
            self._log_file.flush()
            self.log_lines += len(kept)
            self._last_log_frame = frame_index
        return len(kept)

    def add_focus_pause(self, start_ns: int, end_ns: int) -> None:
        """Note an interval without focus (the recorder paused); kept in the manifest's focus_pauses."""
        self._check_open()
        if end_ns < start_ns:
            raise ValueError(f"a focus pause cannot end ({end_ns}) before it starts ({start_ns})")
        self.manifest.focus_pauses.append({"start_ns": int(start_ns), "end_ns": int(end_ns)})
        self._write_manifest()

    def update_manifest(self, **fields: Any) -> None:
        """Set manifest fields the recorder learns while recording (declarer, winner, players, orders...)."""
        self._check_open()
        owned = sorted(set(fields) & _WRITER_FIELDS)
        if owned:
            raise ValueError(f"the writer owns {', '.join(owned)}; use close() to end the session")
        self.manifest = dataclasses.replace(self.manifest, **fields)
        self._write_manifest()

    # --- finishing ---------------------------------------------------------------------------------

    def close(self, reason: str = "closed", **ended_fields: Any) -> dict[str, Any]:
        """Finish the session: flush everything, finalise the video, mark it complete, drop the lock.

        If the video cannot be finished the error propagates and the lock stays: the session is then
        what a killed recorder leaves, and `salvage` completes it.
        """
        if self.closed:
            return self.summary
        self.closed = True
        try:
            counts = self._encoder.close()  # first: the encoding thread writes the last frame lines
        finally:
            for handle in self._files:
                handle.flush()
                os.fsync(handle.fileno())
                handle.close()
            for store in self._views:
                store.close()
        if counts["frames"] != self.frames:
            raise RuntimeError(f"{self.folder}: encoded {counts['frames']} frames but logged {self.frames}")
        ended = {"reason": str(reason), **ended_fields}
        if self._first_t is not None and self._last_t is not None:
            ended.setdefault("duration_s", round((self._last_t - self._first_t) / 1e9, 3))
        self.manifest = dataclasses.replace(
            self.manifest, complete=True, frames=self.frames, dropped_frames=self.dropped_frames, ended=ended
        )
        self._write_manifest()
        (self.folder / LOCK).unlink(missing_ok=True)
        self.summary = {
            "path": str(self.folder),
            "id": self.manifest.id,
            "frames": self.frames,
            "dropped_frames": self.dropped_frames,
            "inputs": self.inputs,
            "log_lines": self.log_lines,
            "ended": ended,
        }
        return self.summary

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if self.closed:
            return
        if exc_type is None:
            self.close("closed")
        else:
            self.close(f"error: {exc_type.__name__}: {exc}")
