"""Import speed of `hoi4-arena import-video` against PyAV's bare decode of the same file, in one run.

Makes a 1920x1080 60 fps H.264 mp4 (yuv420p, as screen recorders write it; moving content so that the
codec has work), then times, alternately, `--runs` times each: PyAV decoding every frame (the
baseline: demux, decode, threads on, nothing else) and `import_video` of the file into a fresh session
folder (decode with pts, the frame log, the manifest; the video referenced, not re-encoded). With
`--pointers` the import also finds the simulator's cursor in every frame. Prints each one's video
seconds per wall second (median of the runs) and their ratio (import / decode; 1.0 means import costs
nothing beyond decoding).

Run: .venv/bin/python bench/import_video.py [--seconds 10] [--runs 3] [--pointers]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from hoi4_arena.sessions.import_video import import_video
from hoi4_arena.sessions.import_video_config import ImportVideoConfig


def make_video(path: Path, seconds: float, fps: int = 60, size: tuple[int, int] = (1920, 1080)) -> int:
    """An H.264 mp4 of a scrolling gradient with the simulator's cursor moving over it."""
    from hoi4_arena.sim.cursor import draw_pointer

    width, height = size
    y = np.arange(height)[:, None]
    x = np.arange(width)[None, :]
    frames = round(seconds * fps)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "veryfast", "crf": "23"}
        for i in range(frames):
            image = np.empty((height, width, 3), np.uint8)
            image[..., 0] = (x + 4 * i) % 256
            image[..., 1] = (y + 2 * i) % 256
            image[..., 2] = ((x + y) // 8 + i) % 256
            draw_pointer(image, (200 + 13 * i % (width - 400), 150 + 7 * i % (height - 300)))
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = i
            frame.time_base = Fraction(1, fps)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return frames


def bare_decode(path: Path) -> int:
    count = 0
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        for _ in container.decode(stream):
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the test video")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pointers", action="store_true", help="also find the pointer in every frame")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        video = root / "game.mp4"
        frames = make_video(video, args.seconds)
        pointers = None
        if args.pointers:
            from hoi4_arena.screen.pointer_templates import save_pointer
            from hoi4_arena.sim.cursor import cursor_sprite

            class Sprite:  # the simulator's cursor, as its worker hands it out
                def pointer_image(self):
                    return cursor_sprite()

            pointers = root / "pointers"
            save_pointer(Sprite(), pointers, game="sim")
        decode_s, import_s = [], []
        for run in range(args.runs):
            start = time.perf_counter()
            assert bare_decode(video) == frames
            decode_s.append(time.perf_counter() - start)
            out = root / f"data-{run}"
            config = ImportVideoConfig(videos=[video], out=out, game_speed=3, pointers=pointers)
            start = time.perf_counter()
            summary = import_video(config)
            import_s.append(time.perf_counter() - start)
            assert summary["sessions"][0]["frames"] == frames
            shutil.rmtree(out)
        seconds = frames / 60
        decode_rate = seconds / statistics.median(decode_s)
        import_rate = seconds / statistics.median(import_s)
        what = "import-video --pointers" if args.pointers else "import-video"
        print(f"1920x1080 60 fps H.264, {seconds:g} s of video, median of {args.runs} runs")
        print(f"  PyAV bare decode   {decode_rate:7.2f} video s / wall s")
        print(f"  {what:18s} {import_rate:7.2f} video s / wall s")
        print(f"  ratio (import / decode): {import_rate / decode_rate:.2f}x")


if __name__ == "__main__":
    main()
