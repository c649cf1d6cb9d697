"""A video file without inputs becomes a session folder (`source: video`): the VPT recipe's first step.

`import_video(config)` makes one session per video in the output folder (OUT/<file name>):

- frames.jsonl: one record per decoded frame, its time from the frame's pts (the video's real
  timestamps, never its nominal rate), so the reader places frames on the 200 ms decision grid as it
  does a recording's (`sessions/reader.py`). A variable frame rate is fine; a hole in it longer than
  2.5 median frame intervals and 100 ms is listed as a gap in the manifest (`extra.video_import.gaps`),
  and the reader restarts its grid after a hole it cannot anchor across.
- screen.mkv: a symbolic link to the source file (referenced, nothing copied), or with --reencode (and
  always for --start/--end or --pad) the frames re-encoded as x264 4:4:4, like a recording's.
- inputs.jsonl and arena-log.jsonl: empty. What is unknown is said in the manifest: `extra.video_import`
  lists `unknown` (inputs, pointer unless found, ARENA log, focus, players) beside the source's path,
  size, codec, container, frame rate and cut.
- pointer.jsonl, with --pointers: per frame whether the pointer was found (template match of the
  cursor sprites, `screen/pointer_templates.py`), where (hotspot, pixels) and how sure. frames.jsonl's
  pointer is the found position, or where it was last found (the screen's centre before the first),
  because the views' fovea needs one.

A screen that is not 16:9 is refused, or padded with black to 16:9 with --pad (which re-encodes):
the message says which. A file that is not a video, holds no video stream or no frame, or runs under
5 frames a second is refused; nothing is written until the session is complete (it is built in a
hidden folder and renamed), and an existing session folder is never replaced.

Try: hoi4-arena import-video my-game.mp4 runs/videos --game-speed 3
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import statistics
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.screen.lattice import to_lattice
from hoi4_arena.sessions.format import (
    ARENA_LOG,
    FRAMES,
    INPUTS,
    MANIFEST,
    SOURCE_CODEC,
    VIDEO,
    SessionManifest,
    write_json_atomic,
)
from hoi4_arena.sessions.import_video_config import ImportVideoConfig
from hoi4_arena.sessions.video import VideoConfig, VideoEncoder, to_rgb

log = logging.getLogger(__name__)

POINTERS = "pointer.jsonl"
"""Per frame of an imported video with --pointers: {"index", "found", "x", "y", "confidence", "template"}."""
MIN_HZ = 5.0
ASPECT_TOLERANCE = 0.01
"""Width / height within 1% of 16/9 counts as 16:9 (1366x768 does)."""


def is_16_9(width: int, height: int) -> bool:
    return abs(width / height - 16 / 9) <= ASPECT_TOLERANCE * 16 / 9


def padded_size(width: int, height: int) -> tuple[int, int]:
    """The smallest even 16:9 (width, height) that holds width x height."""
    if width * 9 >= height * 16:
        w, h = width, -(-width * 9 // 16)
    else:
        w, h = -(-height * 16 // 9), height
    return w + w % 2, h + h % 2


def _pad(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """`image` centred on black of `size` (width, height)."""
    width, height = size
    out = np.zeros((height, width, 3), np.uint8)
    y0, x0 = (height - image.shape[0]) // 2, (width - image.shape[1]) // 2
    out[y0 : y0 + image.shape[0], x0 : x0 + image.shape[1]] = image
    return out


def _open(path: Path) -> Any:
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if not path.is_file():
        raise UserError(f"{path}: not a file")
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError) as error:
        raise UserError(f"{path}: not a video PyAV can read ({error})") from None
    if not container.streams.video:
        container.close()
        raise UserError(f"{path}: holds no video stream")
    return container


def _session_name(out: Path, video: Path, taken: set[str]) -> str:
    base = "".join(c if c.isalnum() or c in "-_." else "_" for c in video.stem) or "video"
    name, n = base, 2
    while name in taken or (out / name).exists():
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def import_video(config: ImportVideoConfig) -> dict[str, Any]:
    """Import every video of `config` (see the module docstring); returns the summary the command prints."""
    finder_templates = None
    if config.pointers is not None:
        from hoi4_arena.screen.pointer_templates import load_templates

        finder_templates = load_templates(config.pointers)
    for video in config.videos:  # refuse bad input before writing anything
        _open(video).close()
    config.out.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    sessions = []
    for video in config.videos:
        name = _session_name(config.out, video, taken)
        sessions.append(import_one(video, config.out / name, config, finder_templates))
    return {"out": str(config.out), "sessions": sessions}


def import_one(
    video: Path, target: Path, config: ImportVideoConfig, templates: list | None
) -> dict[str, Any]:
    """Import one video into the new session folder `target`."""
    if target.exists():
        raise UserError(f"{target} already exists; an import never replaces a folder")
    container = _open(video)
    with container:
        stream = container.streams.video[0]
        width, height = stream.codec_context.width, stream.codec_context.height
        if not width or not height:
            raise UserError(f"{video}: its video stream has no frame size")
        square = is_16_9(width, height)
        if not square and not config.pad:
            pw, ph = padded_size(width, height)
            raise UserError(
                f"{video}: {width}x{height} is not 16:9; refused (the views and the pointer lattice assume a "
                f"16:9 screen). Give --pad to pad it with black to {pw}x{ph} (re-encodes), or crop it to 16:9"
            )
        screen = (width, height) if square else padded_size(width, height)
        reencode = config.reencode or config.cuts or not square
        why = [
            reason
            for reason, given in (
                ("--reencode", config.reencode),
                ("--start/--end cut the video", config.cuts),
                (f"padded from {width}x{height} to {screen[0]}x{screen[1]}", not square),
            )
            if given
        ]
        partial = target.parent / f".{target.name}.partial"
        if partial.exists():
            shutil.rmtree(partial)
        partial.mkdir(parents=True)
        try:
            summary = _write(container, stream, video, partial, screen, config, templates, reencode, why)
            os.replace(partial, target)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
    summary["session"] = str(target)
    return summary


def _write(
    container: Any,
    stream: Any,
    video: Path,
    folder: Path,
    screen: tuple[int, int],
    config: ImportVideoConfig,
    templates: list | None,
    reencode: bool,
    why: list[str],
) -> dict[str, Any]:
    from hoi4_arena.screen.pointer_templates import PointerFinder

    stream.thread_type = "AUTO"
    finder = PointerFinder(templates, config.min_confidence) if templates else None
    width, height = screen
    size = (height, width)
    start_ns = None if config.start is None else round(config.start * 1e9)
    end_ns = None if config.end is None else round(config.end * 1e9)
    # --start and --end count from the stream's first timestamp (an mp4 or a transport stream may not start at 0).
    base_ns = round(Fraction(stream.start_time or 0) * (stream.time_base or 0) * 1_000_000_000)
    if start_ns is not None:
        start_ns += base_ns
    if end_ns is not None:
        end_ns += base_ns
    if config.start and stream.time_base:
        # Seek to the keyframe before the start; the frames before it are decoded and skipped.
        container.seek(int(Fraction(start_ns, 1_000_000_000) / stream.time_base), stream=stream)
    encoder = None
    times: list[int] = []
    pointer_lines: list[str] = []
    frame_lines: list[str] = []
    dropped = 0
    found = 0
    last_px = (width // 2, height // 2)
    origin = None  # pts of the first frame kept, in ns
    previous = None
    try:
        for packet in container.demux(stream):
            try:
                decoded = packet.decode()
            except av.FFmpegError as error:
                if not times:
                    raise UserError(f"{video}: its first frames do not decode ({error})") from None
                log.warning("%s: decoding stopped at frame %d: %s", video, len(times), error)
                if not reencode:
                    raise UserError(
                        f"{video}: frame {len(times)} does not decode ({error}); import it with --reencode "
                        "to keep the frames before it"
                    ) from None
                break
            for frame in decoded:
                if frame.pts is None or frame.time_base is None:
                    raise UserError(
                        f"{video}: frame {len(times)} has no timestamp; re-mux the file (e.g. to mkv)"
                    )
                t = round(Fraction(frame.pts) * frame.time_base * 1_000_000_000)
                if start_ns is not None and t < start_ns:
                    continue
                if end_ns is not None and t >= end_ns:
                    break
                if previous is not None and t <= previous:
                    if not reencode:
                        raise UserError(
                            f"{video}: frame {len(times)}'s timestamp does not increase ({t} ns after {previous}); "
                            "import it with --reencode, which leaves such frames out"
                        )
                    dropped += 1
                    continue
                previous = t
                if origin is None:
                    origin = t
                index = len(times)
                times.append(t - origin)
                image = None
                if finder is not None or reencode:
                    image = to_rgb(frame)
                    if image.shape[:2] != size:
                        image = _pad(image, screen)
                if reencode:
                    if encoder is None:
                        encoder = VideoEncoder(folder / VIDEO, size, _nominal_rate(stream), VideoConfig())
                    encoder.submit(image, index, wait=True)
                match = finder.find(image) if finder is not None else None
                if match is not None:
                    found += 1
                    last_px = (min(max(match.x, 0), width - 1), min(max(match.y, 0), height - 1))
                if finder is not None:
                    record = {"index": index, "found": match is not None}
                    if match is not None:
                        record.update(
                            x=match.x,
                            y=match.y,
                            confidence=round(match.confidence, 4),
                            template=match.template,
                        )
                    pointer_lines.append(json.dumps(record))
                lx, ly = to_lattice(*last_px, size)
                # Formatted by hand: json.dumps per frame costs as much as a tenth of the decoding.
                frame_lines.append(
                    f'{{"index": {index}, "t_ns": {t - origin}, "pointer": [{lx}, {ly}], '
                    f'"pointer_px": [{last_px[0]}, {last_px[1]}], "focus": true}}'
                )
            else:
                continue
            break  # --end reached
    except av.FFmpegError as error:
        raise UserError(f"{video}: cannot be read to the end ({error})") from None
    finally:
        if encoder is not None:
            encoder.close()
    if not times:
        raise UserError(f"{video}: holds no video frame" + (" in --start/--end" if config.cuts else ""))
    frames = len(times)
    intervals = np.diff(np.asarray(times, np.int64))
    median = float(statistics.median(intervals.tolist())) if len(intervals) else 1e9 / 30
    if reencode:
        hz = _nominal_rate(stream)
    else:
        # The reader checks a finished video's frame count by its duration times the manifest's rate.
        duration = container.duration
        hz = frames * 1e6 / duration if duration else 1e9 / median
    if hz < MIN_HZ:
        raise UserError(
            f"{video}: {hz:.2f} frames a second is too few for 200 ms decisions (at least {MIN_HZ:g} are needed)"
        )
    hz = min(float(hz), 240.0)
    threshold = max(2.5 * median, 100e6)
    gaps = [
        {"after_frame": int(i), "start_ns": int(times[i]), "end_ns": int(times[i + 1])}
        for i in np.nonzero(intervals > threshold)[0]
    ]
    if not reencode:
        os.symlink(video.resolve(), folder / VIDEO)
    (folder / FRAMES).write_text("".join(line + "\n" for line in frame_lines))
    (folder / INPUTS).write_text("")
    (folder / ARENA_LOG).write_text("")
    if finder is not None:
        (folder / POINTERS).write_text("".join(line + "\n" for line in pointer_lines))
    context = stream.codec_context
    rate = stream.average_rate
    unknown = ["inputs", "arena_log", "focus", "players", "side", "winner"]
    if finder is None:
        unknown.insert(1, "pointer")
    info = {
        "source_file": str(video.resolve()),
        "source_bytes": video.stat().st_size,
        "container": container.format.name,
        "codec": context.name,
        "pix_fmt": context.format.name if context.format else None,
        "source_size": [context.width, context.height],
        "average_rate": float(rate) if rate else None,
        "start_s": config.start,
        "end_s": config.end,
        "referenced": not reencode,
        "reencoded_because": why,
        "padded": list(screen) != [context.width, context.height],
        "median_frame_ms": median / 1e6,
        "gaps": gaps,
        "non_increasing_frames_dropped": dropped,
        "pointers": None
        if finder is None
        else {
            "templates": str(config.pointers),
            "found": found,
            "frames": frames,
            "min_confidence": config.min_confidence,
        },
        "unknown": unknown,
    }
    manifest = SessionManifest(
        source="video",
        game_speed=int(config.game_speed),
        screen=screen,
        hz=hz,
        game=config.game,
        codec="x264" if reencode else SOURCE_CODEC,
        split=config.split,
        complete=True,
        frames=frames,
        ended={"reason": "imported"},
        video=encoder.settings if encoder is not None else {"codec": SOURCE_CODEC, "encoder": context.name},
        extra={"video_import": info},
    )
    write_json_atomic(folder / MANIFEST, manifest.to_dict())
    return {
        "video": str(video),
        "frames": frames,
        "seconds": round((times[-1] + median) / 1e9, 3),
        "hz": round(hz, 3),
        "screen": list(screen),
        "referenced": not reencode,
        "reencoded_because": why,
        "gaps": len(gaps),
        "pointer_found": None if finder is None else found,
    }


def _nominal_rate(stream: Any) -> float:
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    return float(rate) if rate else 30.0
