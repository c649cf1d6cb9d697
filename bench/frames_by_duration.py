"""Benchmark: a session video's frame count from its duration (`sessions/video.py`), header-only vs full probe.

Every `SessionReader` of a finished session checks its video's frame count against frames.jsonl by the
file's duration (`frames_by_duration`), and training, labelling and checking open each session's reader
again and again. The duration is the Matroska header's, so the streams are barely probed; the baseline
is what it did before, `av.open` with FFmpeg's full probe (which decodes frames to learn the streams).

In one process this writes session-like videos (x264 and ffv1, a headless game's 960x540 screens at 5
Hz), a copy of each cut short inside and one taken before its writer closed (a killed recorder's), times
both ways alternately on every file, checks they give the same count (None for the killed ones alike),
and prints the median CPU time of each and the ratio.

Try: python bench/frames_by_duration.py --rounds 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def write_videos(folder: Path, frames: int) -> list[Path]:
    """Per codec: a finished video, a copy cut short inside, and a copy taken before the writer closed
    (a killed recorder's: no duration in its header)."""
    from hoi4_arena.sessions.video import VideoConfig, VideoEncoder
    from hoi4_arena.sim.headless import SimGame

    with SimGame("plains:1", seed=0, ai={"BLU": 0.5, "RED": 0.5}, start_paused=False) as game:
        screens = []
        for _ in range(frames):
            game.advance(200)
            screens.append(game.frame())
    paths = []
    for codec in ("x264", "ffv1"):
        path = folder / f"{codec}.mkv"
        encoder = VideoEncoder(path, screens[0].shape[:2], 5.0, VideoConfig(codec=codec))
        for index, screen in enumerate(screens):
            encoder.submit(screen, index, wait=True)
        encoder.wait_encoded(len(screens) - 1)
        killed = folder / f"{codec}-killed.mkv"
        killed.write_bytes(path.read_bytes())
        encoder.close()
        cut = folder / f"{codec}-cut.mkv"
        cut.write_bytes(path.read_bytes()[: path.stat().st_size * 2 // 3])
        paths += [path, cut, killed]
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="timed reads of every file each way")
    parser.add_argument("--frames", type=int, default=25, help="frames in each video")
    args = parser.parse_args()
    import av

    from hoi4_arena.sessions.video import frames_by_duration

    def full_probe(path: Path, hz: float) -> int | None:
        try:
            with av.open(str(path)) as container:
                duration = container.duration
        except (av.FFmpegError, OSError):
            return None
        return None if duration is None else round(duration * hz / 1e6)

    with tempfile.TemporaryDirectory(prefix="hoi4-arena-bench-") as folder:
        paths = write_videos(Path(folder), args.frames)
        ours, theirs = {p.name: [] for p in paths}, {p.name: [] for p in paths}
        counts = {}
        for _ in range(args.rounds):
            for path in paths:
                began = time.process_time()
                count = frames_by_duration(path, 5.0)
                middle = time.process_time()
                expected = full_probe(path, 5.0)
                ours[path.name].append(middle - began)
                theirs[path.name].append(time.process_time() - middle)
                assert count == expected, f"{path.name}: {count} frames against the full probe's {expected}"
                counts[path.name] = count
    ours_ms = {name: statistics.median(times) * 1e3 for name, times in ours.items()}
    base_ms = {name: statistics.median(times) * 1e3 for name, times in theirs.items()}
    print(
        json.dumps(
            {
                "rounds": args.rounds,
                "frames": counts,
                "header_only_ms": {name: round(ms, 2) for name, ms in ours_ms.items()},
                "full_probe_ms": {name: round(ms, 2) for name, ms in base_ms.items()},
                "speedup_all_files": round(sum(base_ms.values()) / sum(ours_ms.values()), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
