"""The views stored at capture time: the file format, the recorder that writes them, salvage, check-session.

Stored views must be the views of the frames the recorder stored (with ffv1: the decoded video's views,
byte for byte), deterministic, readable after a kill, and checked against the video by check-session.
"""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from killable_recorder import pattern, pointer_at
from session_files import folder_digest, frame_times, write_session
from test_recorder_logic import SIZE, ScriptedGame, record

from hoi4_arena.errors import UserError
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.views import compute_views
from hoi4_arena.screen.worker import Capture, CaptureRequest
from hoi4_arena.sessions import stored_views
from hoi4_arena.sessions.check import check_session
from hoi4_arena.sessions.format import JsonLines
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.sessions.recorder import Recorder, RecorderSettings, run_paced
from hoi4_arena.sessions.salvage import salvage
from hoi4_arena.sessions.stored_views import StoredViews, StoredViewsError, ViewsWriter
from hoi4_arena.sessions.video import count_decodable

CPU = ViewLayout.named("cpu")
RECORDER = Path(__file__).with_name("killable_recorder.py")


def equal_views(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def write_views(path: Path, frames: int, size=(180, 320), layout: ViewLayout = CPU) -> list[dict]:
    writer = ViewsWriter(path, layout, size)
    views = [compute_views(pattern(i, size), pointer_at(i, size), layout) for i in range(frames)]
    for i, v in enumerate(views):
        writer.add(i, v)
    writer.close()
    return views


# --- the file ----------------------------------------------------------------------------------------


def test_views_read_back_exactly_in_order_and_at_random(tmp_path: Path) -> None:
    path = tmp_path / "views-cpu.bin"
    views = write_views(path, 70)  # keys at 0, 32 and 64
    with StoredViews.open(path) as stored:
        assert stored.frames == 70 and not stored.torn and stored.matches(CPU)
        assert stored.identity == "views1-g72x128-q90x160-f64" and stored.screen == (320, 180)
        stored.verify()
        for i in range(70):
            assert equal_views(stored.views_at(i), views[i])
        for i in (69, 3, 40, 31, 32, 0, 65, 64):
            assert equal_views(stored.views_at(i), views[i])
    # Compact: deltas of a moving pattern are much smaller than the views themselves.
    assert path.stat().st_size < 70 * stored.frame_bytes / 4


def test_the_same_frames_give_the_same_bytes(tmp_path: Path) -> None:
    write_views(tmp_path / "a.bin", 40)
    write_views(tmp_path / "b.bin", 40)
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()


def test_a_torn_last_record_ends_the_prefix_and_damage_is_named(tmp_path: Path) -> None:
    path = tmp_path / "views-cpu.bin"
    views = write_views(path, 10)
    data = path.read_bytes()
    with StoredViews.open(path) as stored:
        ends = [stored.prefix_end(n) for n in range(11)]
    path.write_bytes(data[: ends[7] + 20])  # killed while writing frame 7's record
    with StoredViews.open(path) as stored:
        assert stored.frames == 7 and stored.torn
        assert equal_views(stored.views_at(6), views[6])
    damaged = bytearray(data)
    damaged[ends[4] - 5] ^= 0xFF  # inside frame 3's payload
    path.write_bytes(bytes(damaged))
    with StoredViews.open(path) as stored:
        assert equal_views(stored.views_at(2), views[2])
        with pytest.raises(StoredViewsError, match="frame 3 fails its checksum"):
            stored.views_at(3)
        with pytest.raises(StoredViewsError, match="frame 3"):
            stored.verify()
    damaged = bytearray(data)
    damaged[12] ^= 0x01  # the header's own checksum
    path.write_bytes(bytes(damaged))
    with pytest.raises(StoredViewsError, match="header fails its checksum"):
        StoredViews.open(path)
    path.write_bytes(b"not views")
    with pytest.raises(StoredViewsError, match="not a views file"):
        StoredViews.open(path)


# --- the recorder ------------------------------------------------------------------------------------


def test_the_recorder_stores_the_views_of_every_frame_it_stores(tmp_path: Path) -> None:
    game = ScriptedGame()
    recorder, _, summary = record(tmp_path / "s", game)
    assert recorder.settings.views == ("cpu",)
    reader = SessionReader(tmp_path / "s")
    assert reader.manifest.extra["stored_views"] == {"views-cpu.bin": "views1-g72x128-q90x160-f64"}
    with StoredViews.open(tmp_path / "s" / "views-cpu.bin") as stored:
        assert stored.frames == summary["frames"] == 20
        for record_, image in reader.frames():
            # ffv1: the decoded video's views; and those of the very frame captured.
            want = compute_views(image, record_.pointer_px, CPU)
            assert equal_views(stored.views_at(record_.index), want)
            captured = pattern(record_.index, SIZE)
            assert equal_views(want, compute_views(captured, record_.pointer_px, CPU))
    report = check_session(tmp_path / "s")
    assert report["verdict"] == "ok"
    (entry,) = report["stored_views"]
    assert entry["verdict"] == "equal" and entry["tolerance"] == 0 and len(entry["sampled"]) == 8


def test_a_recording_is_deterministic_views_included(tmp_path: Path) -> None:
    record(tmp_path / "a", ScriptedGame())
    record(tmp_path / "b", ScriptedGame())
    assert (tmp_path / "a" / "views-cpu.bin").read_bytes() == (tmp_path / "b" / "views-cpu.bin").read_bytes()


@dataclasses.dataclass
class ViewingGame(ScriptedGame):
    """A worker whose captures carry views of a layout (marked, so a test can tell them from computed)."""

    layout: ViewLayout = CPU

    def capture(self, request: CaptureRequest | None = None) -> Capture:
        capture = super().capture(request)
        views = compute_views(capture.frame, capture.pointer, self.layout)
        capture.views = {name: np.full_like(view, 7) for name, view in views.items()}
        return capture


def test_views_a_worker_computed_are_stored_when_their_layout_matches(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "s", RecorderSettings(game_speed=3, codec="ffv1", realtime=False))
    recorder.start(ViewingGame())
    recorder.close(run_paced(recorder, seconds=0.5))
    with StoredViews.open(tmp_path / "s" / "views-cpu.bin") as stored:
        assert all((stored.views_at(0)[name] == 7).all() for name in ("global", "quadrants", "fovea"))
    # Not the video's views, so check-session says they drift.
    report = check_session(tmp_path / "s")
    assert report["verdict"] == "failed" and "drift" in report["problems"][0]
    # Another layout's views are not the ones stored: the recorder computes its own from the frame.
    other = dataclasses.replace(CPU, name="small", global_size=(36, 64))
    record(tmp_path / "t", ViewingGame(layout=other), seconds=0.5)
    reader = SessionReader(tmp_path / "t")
    with StoredViews.open(tmp_path / "t" / "views-cpu.bin") as stored:
        record_, image = next(reader.frames())
        assert equal_views(stored.views_at(0), compute_views(image, record_.pointer_px, CPU))


def test_the_layouts_stored_are_a_setting(tmp_path: Path) -> None:
    record(tmp_path / "none", ScriptedGame(), seconds=0.5, views=())
    assert stored_views.views_files(tmp_path / "none") == []
    assert "stored_views" not in SessionReader(tmp_path / "none").manifest.extra
    with pytest.raises(UserError, match="unknown view layout 'huge'"):
        RecorderSettings(game_speed=3, views=("huge",))
    # A screen smaller than the layout's fovea: the recording goes on without that layout's views.
    assert stored_views.layouts_to_store(("cpu",), (50, 80)) == []


# --- a killed recorder -------------------------------------------------------------------------------


def record_and_kill(folder: Path, codec: str) -> None:
    """Run the killable recorder (storing cpu views) until its video holds 10 frames, then SIGKILL it."""
    process = subprocess.Popen(
        [sys.executable, str(RECORDER), str(folder), "--codec", codec, "--views", "cpu", "--hz", "30"],
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout.readline().strip() == b"recording"
        deadline = time.monotonic() + 20
        while count_decodable(folder / "screen.mkv") < 10 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stdout.close()


@pytest.mark.parametrize("codec", ["ffv1", "x264"])
def test_a_killed_recorders_views_are_salvaged_to_the_frames_kept(tmp_path: Path, codec: str) -> None:
    folder = tmp_path / "s"
    record_and_kill(folder, codec)
    lines = JsonLines.read(folder / "frames.jsonl").records(allow_torn=True)
    with StoredViews.open(folder / "views-cpu.bin") as stored:
        assert stored.frames >= len(lines)  # the views go out before the frame's line
    before = folder_digest(folder)

    result = salvage(folder)
    kept = result["frames"]
    assert kept >= 10
    reader = SessionReader(folder)
    with StoredViews.open(folder / "views-cpu.bin") as stored:
        assert stored.frames == kept == reader.manifest.frames and not stored.torn
        stored.verify()
        for record_ in reader.frame_records:
            want = compute_views(pattern(record_.index, (180, 320)), record_.pointer_px, CPU)
            assert equal_views(stored.views_at(record_.index), want)
    assert reader.manifest.extra["stored_views"] == {"views-cpu.bin": "views1-g72x128-q90x160-f64"}
    assert check_session(folder)["verdict"] == "ok"
    salvage(folder, undo=True)
    assert folder_digest(folder) == before


def test_salvage_removes_views_that_cannot_cover_the_frames_kept(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    record_and_kill(folder, "ffv1")
    with StoredViews.open(folder / "views-cpu.bin") as stored:
        end = stored.prefix_end(3)
    data = (folder / "views-cpu.bin").read_bytes()
    (folder / "views-cpu.bin").write_bytes(data[:end])  # records lost (a full disk, say)
    result = salvage(folder)
    kept = result["frames"]
    assert result["cut"]["views"] == {"views-cpu.bin": {"removed": f"holds 3 of the {kept} frames kept"}}
    assert not (folder / "views-cpu.bin").exists()
    assert SessionReader(folder).manifest.extra["stored_views"] == {}
    assert check_session(folder)["verdict"] == "ok"
    salvage(folder, undo=True)
    assert (folder / "views-cpu.bin").read_bytes() == data[:end]


# --- check-session -----------------------------------------------------------------------------------


def test_check_session_compares_stored_views_with_the_decoded_video(tmp_path: Path) -> None:
    x264 = write_session(tmp_path / "x264", times=frame_times(30, 10), codec="x264", views=("cpu",))
    report = check_session(x264)
    assert report["verdict"] == "ok", report
    (entry,) = report["stored_views"]
    assert entry["verdict"] in ("within", "equal") and entry["tolerance"] == stored_views.LOSSY_TOLERANCE
    assert entry["sampled"] == [0]  # the video's only keyframe (x264: one every 10 s)

    # Views of other frames than the video's (a recorder bug): drift, and the check fails.
    ffv1 = write_session(tmp_path / "ffv1", times=frame_times(12, 10), views=("cpu",))
    views = ffv1 / "views-cpu.bin"
    views.unlink()
    writer = ViewsWriter(views, CPU, (180, 320))
    for i in range(12):
        writer.add(i, compute_views(pattern(i + 1, (180, 320)), pointer_at(i, (180, 320)), CPU))
    writer.close()
    report = check_session(ffv1)
    assert report["verdict"] == "failed"
    assert any(
        "views-cpu.bin: the stored views drift from the video's (ffv1)" in p for p in report["problems"]
    )


def test_a_damaged_views_file_is_a_warning_training_decodes_instead(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "s", times=frame_times(12, 10), views=("cpu",))
    data = bytearray((folder / "views-cpu.bin").read_bytes())
    data[-10] ^= 0xFF
    (folder / "views-cpu.bin").write_bytes(bytes(data))
    report = check_session(folder)
    assert report["verdict"] == "ok"
    assert report["stored_views"][0]["verdict"] == "unusable"
    assert any("frame 11 fails its checksum" in w and "decodes" in w for w in report["warnings"])
