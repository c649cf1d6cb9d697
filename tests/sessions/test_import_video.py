"""import-video: videos made here with PyAV (several containers, sizes, frame rates, a variable rate
with a hole) become sessions whose decisions anchor on the frames their pts place on the 200 ms grid;
bad input is a clear UserError and leaves nothing behind; the pointer is found in simulator frames."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.sessions.format import load_manifest
from hoi4_arena.sessions.import_video import POINTERS, import_video, padded_size
from hoi4_arena.sessions.import_video_config import ImportVideoConfig
from hoi4_arena.sessions.reader import SessionReader


def level(index: int) -> int:
    """The flat grey of frame `index`: tells which frame a decoded image is."""
    return 20 + (index * 37) % 200


def make_video(
    path: Path,
    size: tuple[int, int],
    times_ms: list[int],
    codec: str = "libx264",
    pix_fmt: str = "yuv420p",
    draw=None,
) -> Path:
    """A video of flat frames (frame i grey `level(i)`) shown at `times_ms` (a time base of 1 ms)."""
    width, height = size
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=1000)
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        stream.time_base = Fraction(1, 1000)
        stream.codec_context.time_base = Fraction(1, 1000)
        if codec == "libx264":
            stream.options = {"preset": "ultrafast", "bf": "0"}
        for i, t in enumerate(times_ms):
            image = np.full((height, width, 3), level(i), np.uint8)
            if draw is not None:
                draw(image, i)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24").reformat(format=pix_fmt)
            frame.pts = t
            frame.time_base = Fraction(1, 1000)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


def config(videos, out, **fields) -> ImportVideoConfig:
    return ImportVideoConfig(videos=list(videos), out=out, game_speed=fields.pop("game_speed", 3), **fields)


def check_anchors(session: Path, times_ms: list[int]) -> list:
    """Every decision's anchor is the frame nearest its 200 ms grid point and shows that frame."""
    reader = SessionReader(session)
    assert [r.t_ns for r in reader.frame_records] == [(t - times_ms[0]) * 1_000_000 for t in times_ms]
    decisions = list(reader.decisions())
    assert decisions
    for decision in decisions:
        assert decision.tokens[:, 0].tolist() == [0] * 8  # no inputs: every slot a no-op
        grey = float(decision.image.mean())
        assert abs(grey - level(decision.frame_index)) < 3, (decision.index, decision.frame_index, grey)
    return decisions


@pytest.mark.parametrize(
    ("suffix", "codec", "pix_fmt", "size", "fps"),
    [
        ("mp4", "libx264", "yuv420p", (320, 180), 30),
        ("mkv", "libx264", "yuv420p", (640, 360), 60),
        ("webm", "libvpx", "yuv420p", (256, 144), 24),
        ("mkv", "mpeg4", "yuv420p", (320, 180), 25),
    ],
)
def test_constant_rates_land_on_the_grid(tmp_path, suffix, codec, pix_fmt, size, fps):
    times = [round(i * 1000 / fps) for i in range(round(fps * 2.1))]
    video = make_video(tmp_path / f"game.{suffix}", size, times, codec, pix_fmt)
    summary = import_video(config([video], tmp_path / "data"))
    session = Path(summary["sessions"][0]["session"])
    assert session == tmp_path / "data" / "game"
    decisions = check_anchors(session, times)
    assert len(decisions) == 11  # 0, 200, ..., 2000 ms
    for decision in decisions:
        # The anchor is within half a frame of its grid point.
        assert abs(decision.t_ns - decision.index * 200_000_000) <= 500_000_000 / fps + 1_000_000
    manifest = load_manifest(session)
    assert manifest.source == "video" and manifest.codec == "source" and manifest.complete
    assert manifest.screen == size and manifest.frames == len(times)
    info = manifest.extra["video_import"]
    assert info["referenced"] and "inputs" in info["unknown"] and "pointer" in info["unknown"]
    assert (session / "screen.mkv").is_symlink()
    assert (session / "inputs.jsonl").read_text() == ""


def test_variable_rate_and_a_gap_are_marked(tmp_path):
    rng = np.random.default_rng(1)
    times, t = [], 0
    while t < 3000:
        times.append(t)
        t += int(rng.integers(12, 45)) if not 1000 <= t < 1100 else 0
        if 1000 <= t < 1100:
            t = 1600  # a hole of about half a second
    video = make_video(tmp_path / "vfr.mkv", (320, 180), times)
    session = Path(import_video(config([video], tmp_path / "data"))["sessions"][0]["session"])
    check_anchors(session, times)
    gaps = load_manifest(session).extra["video_import"]["gaps"]
    assert len(gaps) == 1 and gaps[0]["end_ns"] == 1_600_000_000 - times[0] * 1_000_000
    reader = SessionReader(session)
    anchored = [d.t_ns for d in reader.decisions(images=False)]
    assert not any(gaps[0]["start_ns"] < t < gaps[0]["end_ns"] for t in anchored)


def test_start_end_reencodes_the_cut(tmp_path):
    times = [round(i * 1000 / 30) for i in range(90)]
    video = make_video(tmp_path / "long.mp4", (320, 180), times)
    summary = import_video(config([video], tmp_path / "data", start=1.0, end=2.0))["sessions"][0]
    assert not summary["referenced"] and "--start/--end cut the video" in summary["reencoded_because"]
    session = Path(summary["session"])
    reader = SessionReader(session)
    kept = [t for t in times if 1000 <= t < 2000]
    assert len(reader.frame_records) == len(kept)
    assert reader.frame_records[0].t_ns == 0
    for record, image in reader.frames():
        assert abs(float(image.mean()) - level(times.index(kept[record.index]))) < 3
    assert not (session / "screen.mkv").is_symlink()


def test_not_16_9_is_refused_or_padded(tmp_path):
    times = [i * 40 for i in range(20)]
    video = make_video(tmp_path / "square.mp4", (240, 240), times)
    with pytest.raises(UserError, match="not 16:9; refused.*--pad"):
        import_video(config([video], tmp_path / "data"))
    assert not list((tmp_path / "data").glob("*")) if (tmp_path / "data").exists() else True
    summary = import_video(config([video], tmp_path / "data", pad=True))["sessions"][0]
    assert summary["screen"] == list(padded_size(240, 240)) == [428, 240]
    reader = SessionReader(summary["session"])
    _, image = next(reader.frames())
    assert image.shape == (240, 428, 3) and image[:, :80].max() < 8  # black bars on the sides


def test_bad_input_is_a_clear_error(tmp_path):
    text = tmp_path / "notes.mp4"
    text.write_text("not a video at all")
    with pytest.raises(UserError, match="not a video PyAV can read"):
        import_video(config([text], tmp_path / "data"))
    with pytest.raises(UserError, match="no such file"):
        import_video(config([tmp_path / "missing.mkv"], tmp_path / "data"))
    empty = tmp_path / "empty.mkv"
    with av.open(str(empty), "w") as container:  # a video stream and not one frame
        stream = container.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = 320, 180, "yuv420p"
        container.start_encoding()
    with pytest.raises(UserError, match="not a video PyAV can read"):
        import_video(config([empty], tmp_path / "data"))
    sound = tmp_path / "sound.mka"
    with av.open(str(sound), "w") as container:
        stream = container.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 800), np.int16), format="s16", layout="mono")
        frame.sample_rate = 8000
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    with pytest.raises(UserError, match="holds no video stream"):
        import_video(config([sound], tmp_path / "data"))
    short = make_video(tmp_path / "short.mp4", (320, 180), [i * 40 for i in range(10)])
    with pytest.raises(UserError, match="holds no video frame in --start/--end"):
        import_video(config([short], tmp_path / "data", start=5.0))
    assert not [p for p in (tmp_path / "data").iterdir()] if (tmp_path / "data").exists() else True
    with pytest.raises(UserError, match="--game-speed is required"):
        ImportVideoConfig(videos=[text], out=tmp_path / "data")
    video = make_video(tmp_path / "ok.mp4", (320, 180), [i * 40 for i in range(10)])
    import_video(config([video], tmp_path / "data"))
    before = (tmp_path / "data" / "ok" / "frames.jsonl").read_bytes()
    summary = import_video(config([video], tmp_path / "data"))  # a second import: a new folder, never over
    assert summary["sessions"][0]["session"].endswith("ok-2")
    assert (tmp_path / "data" / "ok" / "frames.jsonl").read_bytes() == before


def test_command_line(tmp_path):
    video = make_video(tmp_path / "cli.mp4", (320, 180), [i * 40 for i in range(12)])
    result = CliRunner().invoke(
        app, ["import-video", str(video), str(tmp_path / "data"), "--game-speed", "2"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sessions"][0]["frames"] == 12
    result = CliRunner().invoke(app, ["import-video", str(video), str(tmp_path / "data")])
    assert isinstance(result.exception, UserError) and "--game-speed is required" in str(result.exception)


def test_pointer_found_in_sim_frames_within_a_pixel(tmp_path):
    """The simulator's cursor, saved by `pointer`, found again in its frames after a video round trip."""
    from hoi4_arena.screen.sim_worker import SimWorker

    result = CliRunner().invoke(
        app, ["pointer", str(tmp_path / "pointers"), "--game", "sim", "--size", "640x360"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["templates"][0]["hotspot"] == [0, 0]
    worker = SimWorker(arena="plains", seed=0, size=(360, 640))
    from hoi4_arena.sim.cursor import draw_pointer

    base = worker.game.renderer.rgb(worker.game.ui).copy()  # the screen without the pointer
    rng = np.random.default_rng(0)
    places = [(int(rng.integers(0, 640)), int(rng.integers(0, 360))) for _ in range(24)]
    places[5], places[6] = (632, 100), (300, 350)  # the sprite cut by the right and bottom edges

    def draw(image, i):
        image[:] = base
        draw_pointer(image, places[i])

    times = [i * 100 for i in range(len(places))]
    video = make_video(tmp_path / "sim.mkv", (640, 360), times, "libx264", "yuv444p", draw=draw)
    summary = import_video(config([video], tmp_path / "data", pointers=tmp_path / "pointers", game="sim"))
    session = Path(summary["sessions"][0]["session"])
    lines = [json.loads(line) for line in (session / POINTERS).read_text().splitlines()]
    assert len(lines) == len(places)
    for line, (x, y) in zip(lines, places, strict=True):
        assert line["found"], line
        assert abs(line["x"] - x) <= 1 and abs(line["y"] - y) <= 1, (line, (x, y))
    records = SessionReader(session).frame_records
    assert [tuple(r.pointer_px) for r in records][:3] == [(lines[i]["x"], lines[i]["y"]) for i in range(3)]
