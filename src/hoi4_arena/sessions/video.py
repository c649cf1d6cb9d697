"""The session video: frames encoded to Matroska on a background thread, and read back.

Matroska with one cluster per packet and every packet flushed to the OS means a recorder killed at any
moment leaves a file whose prefix decodes: everything but the packet the muxer still held (the newest
frame: a cluster is written when the next packet starts a new one) and the frames still queued for the
encoder. The encoder runs without B-frames or lookahead (x264 `tune=zerolatency`, NVENC `bf=0` and
`zerolatency`), so each frame becomes a packet at once; `on_encoded` tells the caller when a frame's
packet is in the muxer. Frame i has pts i at the nominal rate; the real capture times live in
frames.jsonl, never in the video's rate.

Codecs: x264 CRF 18 in 4:4:4 full range (default), ffv1 (lossless, bgr0), and NVENC (h264_nvenc,
4:4:4) where the machine has one -- refused with a message where it does not.

Try: python -m hoi4_arena.sessions.video runs/s1/screen.mkv   # prints what the file holds
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
from av.video.reformatter import ColorRange, Colorspace

from hoi4_arena.errors import UserError
from hoi4_arena.sessions.format import CODECS

# One cluster per packet (size limit of one byte) and flush_packets: a kill loses at most the cluster
# the muxer is still building, never the file.
MUXER_OPTIONS = {"flush_packets": "1", "cluster_size_limit": "1", "cluster_time_limit": "0"}
_ENCODERS = {"x264": "libx264", "ffv1": "ffv1", "nvenc": "h264_nvenc"}
# ffv1 has no 8-bit planar RGB; bgr0 is its lossless 8-bit RGB layout.
_PIX_FMTS = {"x264": "yuv444p", "ffv1": "bgr0", "nvenc": "yuv444p"}
# Full range keeps all 256 levels per channel through YUV; 601 is swscale's default matrix, tagged so
# that any decoder converts back with the same one.
_COLORSPACE = Colorspace.ITU601
_COLOR_RANGE = ColorRange.JPEG


@dataclass(frozen=True)
class VideoConfig:
    """How the session video is encoded."""

    codec: str = "x264"
    """x264 (CRF, 4:4:4), ffv1 (lossless) or nvenc (GPU, 4:4:4)."""
    crf: int = 18
    """Constant rate factor for x264, constant quality level for NVENC; lower is better (0..51)."""
    preset: str = "veryfast"
    """x264 speed preset; the encoder must keep up with capture on two cores."""
    keyint_s: float = 10.0
    """Seconds between keyframes (decoding may only start at one)."""
    queue_frames: int = 16
    """Frames waiting for the encoder at most; a frame that finds the queue full is dropped and counted."""

    def __post_init__(self) -> None:
        if self.codec not in CODECS:
            raise UserError(f"codec must be one of {', '.join(CODECS)}, not {self.codec!r}")
        if not 0 <= self.crf <= 51:
            raise UserError(f"crf must be in 0..51, not {self.crf}")
        if self.keyint_s <= 0:
            raise UserError(f"keyint_s must be positive, not {self.keyint_s}")
        if self.queue_frames < 1:
            raise UserError(f"queue_frames must be at least 1, not {self.queue_frames}")


class VideoEncoder:
    """Encodes (H, W, 3) uint8 RGB frames into a Matroska file on its own thread.

    One producer calls `has_room` then `submit` (so a frame is only committed when it will be encoded),
    and `close` at the end. An error on the encoding thread is raised by the next `submit` or close.
    `on_encoded(index, note)` runs on the encoding thread once frame `index`'s packets are in the muxer
    (with the `note` its `submit` carried); `wait_encoded(index)` waits for that moment.
    """

    def __init__(
        self,
        path: Path,
        size: tuple[int, int],
        hz: float,
        config: VideoConfig,
        on_encoded: Callable[[int, Any], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.size = size
        self.config = config
        height, width = size
        rate = Fraction(hz).limit_denominator(1000)
        self._container = av.open(str(self.path), "w", format="matroska", options=dict(MUXER_OPTIONS))
        try:
            self._stream = open_stream(self._container, config, width, height, rate)
        except BaseException:
            self._container.close()
            self.path.unlink(missing_ok=True)
            raise
        self._queue: queue.Queue[tuple[int, np.ndarray, Any] | None] = queue.Queue(
            maxsize=config.queue_frames
        )
        self._error: BaseException | None = None
        self._closed = False
        self._on_encoded = on_encoded
        self._done = threading.Condition()
        self.encoded = 0
        self.packets = 0
        self._thread = threading.Thread(
            target=self._run, name=f"encoder:{self.path.parent.name}", daemon=True
        )
        self._thread.start()

    @property
    def settings(self) -> dict[str, Any]:
        """What the manifest records about the encoding."""
        out: dict[str, Any] = {
            "codec": self.config.codec,
            "encoder": _ENCODERS[self.config.codec],
            "pix_fmt": _PIX_FMTS[self.config.codec],
            "container": "matroska",
        }
        if self.config.codec != "ffv1":
            out.update(
                crf=self.config.crf, color_range="full", colorspace="bt601", keyint_s=self.config.keyint_s
            )
        if self.config.codec == "x264":
            out["preset"] = self.config.preset
        return out

    def has_room(self) -> bool:
        self._raise_error()
        return not self._queue.full()

    def submit(self, frame: np.ndarray, index: int, wait: bool = False, note: Any = None) -> None:
        """Queue `frame` as video frame `index`: after `has_room()` said True, or `wait` for room.

        Waiting never hangs on a dead encoder: its error is raised instead.
        """
        while True:
            self._raise_error()
            if not self._thread.is_alive():
                raise RuntimeError(f"{self.path}: the encoder thread has stopped")
            try:
                self._queue.put((index, frame, note), block=wait, timeout=0.25 if wait else None)
                return
            except queue.Full:
                if not wait:
                    raise

    def wait_encoded(self, index: int) -> None:
        """Wait until frame `index` is encoded and its packet muxed (its error raised, if it failed)."""
        with self._done:
            while self.encoded <= index:
                self._raise_error()
                if not self._thread.is_alive():
                    raise RuntimeError(f"{self.path}: the encoder thread has stopped")
                self._done.wait(0.25)

    def close(self) -> dict[str, int]:
        """Encode what is queued, flush the encoder, finish the file; returns counts."""
        if self._closed:
            return {"frames": self.encoded, "packets": self.packets}
        self._closed = True
        while self._thread.is_alive():
            try:
                self._queue.put(None, timeout=0.25)
                break
            except queue.Full:
                continue
        self._thread.join()
        try:
            self._container.close()
        except av.FFmpegError as error:
            self._error = self._error or error
        self._raise_error()
        return {"frames": self.encoded, "packets": self.packets}

    def _raise_error(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"{self.path}: video encoding failed: {self._error}") from self._error

    def _run(self) -> None:
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    break
                index, frame, note = item
                video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
                if self.config.codec == "ffv1":
                    video_frame = video_frame.reformat(format="bgr0")
                else:
                    video_frame = video_frame.reformat(
                        format="yuv444p",
                        src_colorspace=_COLORSPACE,
                        dst_colorspace=_COLORSPACE,
                        dst_color_range=_COLOR_RANGE,
                    )
                video_frame.pts = index
                self._mux(self._stream.encode(video_frame))
                if self._on_encoded is not None:
                    self._on_encoded(index, note)
                with self._done:
                    self.encoded += 1
                    self._done.notify_all()
            self._mux(self._stream.encode(None))
        except BaseException as error:  # noqa: BLE001 -- handed to the producer thread
            self._error = error
        finally:
            with self._done:
                self._done.notify_all()

    def _mux(self, packets: list[av.Packet]) -> None:
        for packet in packets:
            self._container.mux(packet)
            self.packets += 1


def open_stream(container: Any, config: VideoConfig, width: int, height: int, rate: Fraction) -> Any:
    """Add the configured video stream to an output container and open its encoder (UserError if refused)."""
    stream = container.add_stream(_ENCODERS[config.codec], rate=rate)
    stream.width, stream.height = width, height
    stream.pix_fmt = _PIX_FMTS[config.codec]
    stream.time_base = 1 / rate
    context = stream.codec_context
    context.time_base = 1 / rate
    # ffv1 carries its coder state across non-key frames; all-key frames make each one stand alone.
    context.gop_size = 1 if config.codec == "ffv1" else max(1, round(config.keyint_s * rate))
    if config.codec == "x264":
        # zerolatency: no B-frames, no lookahead -- a packet comes out for every frame put in.
        stream.options = {"crf": str(config.crf), "preset": config.preset, "tune": "zerolatency"}
    elif config.codec == "nvenc":
        stream.options = {
            "preset": "p4",
            "tune": "ll",
            "rc": "vbr",
            "cq": str(config.crf),
            "bf": "0",
            "zerolatency": "1",
            "delay": "0",
            "profile": "high444p",
        }
    else:
        # level 3 with slice CRCs: a damaged frame fails to decode instead of decoding wrong.
        stream.options = {"level": "3", "slicecrc": "1"}
    if config.codec != "ffv1":
        context.color_range = _COLOR_RANGE
        context.colorspace = _COLORSPACE
    try:
        context.open()
    except av.FFmpegError as error:
        if config.codec == "nvenc":
            raise UserError(
                f"codec nvenc is not available on this machine (FFmpeg: {error.strerror}); "
                "use --codec x264 (default) or --codec ffv1"
            ) from None
        raise UserError(f"cannot open the {config.codec} encoder at {width}x{height}: {error}") from None
    return stream


# --- reading ---------------------------------------------------------------------------------------


class VideoError(Exception):
    """The video could not be read past `frames` frames."""

    def __init__(self, message: str, frames: int) -> None:
        super().__init__(message)
        self.frames = frames


@dataclass(frozen=True)
class VideoProbe:
    """What demuxing (no decoding) says about a session video."""

    packets: int
    """Video packets (= frames: the encoders emit one packet per frame)."""
    codec: str
    width: int
    height: int
    pix_fmt: str | None
    error: str | None
    """Why demuxing stopped before the end, if it did."""


def probe(path: Path) -> VideoProbe:
    """Count the video's packets without decoding them."""
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError) as error:
        return VideoProbe(0, "", 0, 0, None, f"cannot open: {error}")
    with container:
        if not container.streams.video:
            return VideoProbe(0, "", 0, 0, None, "no video stream")
        stream = container.streams.video[0]
        context = stream.codec_context
        packets, error = 0, None
        try:
            for packet in container.demux(stream):
                if packet.size:
                    packets += 1
        except av.FFmpegError as exc:
            error = f"demuxing stopped after {packets} packets: {exc}"
        fmt = context.format.name if context.format else None
        return VideoProbe(packets, context.name, context.width, context.height, fmt, error)


# The least probing FFmpeg allows: read 32 bytes of packets, analyse none of the streams' timing.
_HEADER_ONLY = {"probesize": "32", "analyzeduration": "0"}


def frames_by_duration(path: Path, hz: float) -> int | None:
    """The frame count a finished file's duration implies (pts are frame indices at `hz`), cheaply.

    None when the file has no duration (a killed recorder never wrote one) or cannot be opened. The
    duration is the container header's, so the streams are barely probed (`_HEADER_ONLY`): 7.8 against
    19.0 ms for an x264 session video with a full probe (bench/frames_by_duration.py).
    """
    try:
        with av.open(str(path), options=_HEADER_ONLY) as container:
            duration = container.duration
    except (av.FFmpegError, OSError):
        return None
    return None if duration is None else round(duration * hz / 1e6)


def to_rgb(frame: av.VideoFrame) -> np.ndarray:
    """A decoded frame as (H, W, 3) uint8 RGB, undoing the encoder's colour conversion exactly."""
    if frame.format.name in ("yuv444p", "yuvj444p"):
        frame = frame.reformat(
            format="rgb24",
            src_colorspace=_COLORSPACE,
            dst_colorspace=_COLORSPACE,
            src_color_range=frame.color_range or _COLOR_RANGE,
        )
    return frame.to_ndarray(format="rgb24")


def decode_frames(path: Path) -> Iterator[av.VideoFrame]:
    """Decode the video front to back as PyAV frames (convert the ones you need with `to_rgb`).

    Raises `VideoError` (with the count of frames decoded so far) when the file cannot be opened or a
    packet does not decode; a file that simply ends (a killed recorder) ends the iteration quietly.
    """
    frames = 0
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError) as error:
        raise VideoError(f"{path}: cannot open the video ({error})", 0) from None
    with container:
        if not container.streams.video:
            raise VideoError(f"{path}: no video stream", 0)
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"  # frame and slice threads: 1080p x264 decodes on every core
        try:
            for packet in container.demux(stream):
                for frame in packet.decode():
                    yield frame
                    frames += 1
        except av.FFmpegError as error:
            raise VideoError(f"{path}: frame {frames} does not decode ({error})", frames) from None


def decode(path: Path) -> Iterator[np.ndarray]:
    """Decode the video front to back as (H, W, 3) uint8 RGB frames (errors as `decode_frames`)."""
    for frame in decode_frames(path):
        yield to_rgb(frame)


def count_decodable(path: Path) -> int:
    """How many frames decode from the start before the file ends or a frame fails."""
    frames = 0
    try:
        for _ in decode_frames(path):
            frames += 1
    except VideoError as error:
        return error.frames
    return frames


def remux_prefix(source: Path, target: Path, frames: int) -> int:
    """Copy the first `frames` packets of `source` into a clean Matroska file (no re-encoding)."""
    written = 0
    with av.open(str(source)) as inp, av.open(str(target), "w", format="matroska") as out:
        stream_in = inp.streams.video[0]
        stream_out = out.add_stream_from_template(stream_in)
        if frames > 0:
            for packet in inp.demux(stream_in):
                if not packet.size:
                    continue
                packet.stream = stream_out
                out.mux(packet)
                written += 1
                if written >= frames:
                    break
    return written


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(probe(Path(name)))
