"""Benchmark: what writing a session costs per recorded second, against a bare PyAV encode loop.

For each codec and size it writes the same moving-pattern frames twice:

- writer:   `SessionWriter` as a recorder uses it (frame copy, frames.jsonl line, the encoder thread
            behind its queue, the Matroska muxer flushing every packet), `realtime=False` so that no
            frame is dropped and the whole cost is measured;
- baseline: the same encoder settings in a plain loop on the calling thread: rgb24 -> encoder pixel
            format, encode, mux, into an ordinary Matroska file (no thread, no logs, no flushing);
- lookahead (x264 only): that loop with x264's defaults for the preset instead of `tune=zerolatency`
            (rc-lookahead, B-frames, frame threads): what the recorder would save by letting the
            encoder hold frames back, which a SIGKILL would then lose.

It prints CPU seconds per recorded second at `--hz` (process CPU time, all threads), the encode rate
in frames per second of wall time, the ratio writer / baseline (the recorder's overhead on top of the
encoding it cannot avoid), and for x264 the CPU and file size of zerolatency against lookahead.
Frames are generated before timing starts.

Try: python bench/session_write.py --frames 60 --hz 10
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from av.video.reformatter import ColorRange, Colorspace

from hoi4_arena.sessions.format import SessionManifest
from hoi4_arena.sessions.video import VideoConfig, open_stream
from hoi4_arena.sessions.writer import SessionWriter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "sessions"))
from killable_recorder import pattern  # noqa: E402 -- the tests' synthetic frames


def timed(run, *args) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run(*args)
    return time.perf_counter() - wall, time.process_time() - cpu


def write_session(folder: Path, frames: list[np.ndarray], hz: float, codec: str) -> None:
    height, width = frames[0].shape[:2]
    manifest = SessionManifest(source="human", game_speed=3, screen=(width, height), hz=hz, codec=codec)
    writer = SessionWriter(folder, manifest, realtime=False)
    period = round(1e9 / hz)
    for index, frame in enumerate(frames):
        writer.add_frame(frame, index * period + 1, (width // 2, height // 2))
    writer.close("bench")


def lookahead_stream(container, config: VideoConfig, width: int, height: int, rate: Fraction):
    """open_stream's x264 settings without tune=zerolatency: the preset's lookahead and B-frames."""
    stream = container.add_stream("libx264", rate=rate)
    stream.width, stream.height, stream.pix_fmt = width, height, "yuv444p"
    stream.time_base = stream.codec_context.time_base = 1 / rate
    stream.codec_context.gop_size = max(1, round(config.keyint_s * rate))
    stream.options = {"crf": str(config.crf), "preset": config.preset}
    stream.codec_context.color_range = ColorRange.JPEG
    stream.codec_context.colorspace = Colorspace.ITU601
    stream.codec_context.open()
    return stream


def bare_encode(path: Path, frames: list[np.ndarray], hz: float, codec: str, lookahead: bool = False) -> None:
    height, width = frames[0].shape[:2]
    config = VideoConfig(codec=codec)
    opener = lookahead_stream if lookahead else open_stream
    with av.open(str(path), "w", format="matroska") as container:
        stream = opener(container, config, width, height, Fraction(hz).limit_denominator(1000))
        for index, frame in enumerate(frames):
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
            if codec == "ffv1":
                video_frame = video_frame.reformat(format="bgr0")
            else:
                video_frame = video_frame.reformat(
                    format="yuv444p", src_colorspace="ITU601", dst_colorspace="ITU601", dst_color_range="JPEG"
                )
            video_frame.pts = index
            for packet in stream.encode(video_frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--hz", type=float, default=10.0)
    parser.add_argument("--codecs", default="x264,ffv1")
    parser.add_argument("--sizes", default="960x540,1920x1080")
    parser.add_argument("--json", action="store_true", help="Print the rows as JSON too.")
    args = parser.parse_args()
    rows = []
    for size in args.sizes.split(","):
        width, height = (int(v) for v in size.split("x"))
        distinct = [pattern(i, (height, width)) for i in range(min(args.frames, 30))]
        frames = [distinct[i % len(distinct)] for i in range(args.frames)]
        for codec in args.codecs.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                base_wall, base_cpu = timed(bare_encode, Path(tmp) / "bare.mkv", frames, args.hz, codec)
                wall, cpu = timed(write_session, Path(tmp) / "s", frames, args.hz, codec)
                mb = (Path(tmp) / "s" / "screen.mkv").stat().st_size / 1e6
                look_cpu = look_mb = None
                if codec == "x264":
                    _, look_cpu = timed(bare_encode, Path(tmp) / "look.mkv", frames, args.hz, codec, True)
                    look_mb = (Path(tmp) / "look.mkv").stat().st_size / 1e6
            seconds = args.frames / args.hz
            row = {
                "size": size,
                "codec": codec,
                "writer_cpu_s_per_s": round(cpu / seconds, 3),
                "baseline_cpu_s_per_s": round(base_cpu / seconds, 3),
                "ratio": round(cpu / base_cpu, 2),
                "writer_fps": round(args.frames / wall, 1),
                "baseline_fps": round(args.frames / base_wall, 1),
                "mb_per_min": round(mb / seconds * 60, 1),
            }
            if look_cpu is not None:
                row.update(
                    lookahead_cpu_s_per_s=round(look_cpu / seconds, 3),
                    lookahead_mb_per_min=round(look_mb / seconds * 60, 1),
                    zerolatency_cpu_ratio=round(base_cpu / look_cpu, 2),
                    zerolatency_size_ratio=round(mb / look_mb, 2),
                )
            rows.append(row)
    print(f"{args.frames} frames per run, CPU seconds per recorded second at {args.hz:g} Hz")
    print(
        f"{'size':>10} {'codec':>5} {'writer':>8} {'bare':>8} {'ratio':>6} {'fps':>7} {'bare fps':>9} {'MB/min':>7}"
        f" | {'lookahead':>9} {'MB/min':>7} {'cpu x':>6} {'size x':>6}"
    )
    for row in rows:
        look = (
            f" | {row['lookahead_cpu_s_per_s']:>9} {row['lookahead_mb_per_min']:>7} "
            f"{row['zerolatency_cpu_ratio']:>6} {row['zerolatency_size_ratio']:>6}"
            if "lookahead_cpu_s_per_s" in row
            else ""
        )
        print(
            f"{row['size']:>10} {row['codec']:>5} {row['writer_cpu_s_per_s']:>8} {row['baseline_cpu_s_per_s']:>8} "
            f"{row['ratio']:>6} {row['writer_fps']:>7} {row['baseline_fps']:>9} {row['mb_per_min']:>7}" + look
        )
    print("lookahead: x264 without tune=zerolatency; cpu x, size x: zerolatency / lookahead")
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
