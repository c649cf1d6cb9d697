import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from killable_recorder import pattern, pointer_at
from session_files import frame_times, write_session

from hoi4_arena.errors import UserError
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.lattice import to_lattice
from hoi4_arena.sessions import video as video_module
from hoi4_arena.sessions.format import LOCK, SessionManifest
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.sessions.video import VideoConfig, remux_prefix
from hoi4_arena.sessions.writer import SessionWriter


def manifest(**changes) -> SessionManifest:
    fields = {"source": "human", "game_speed": 4, "screen": (320, 180), "hz": 10.0, "codec": "ffv1"}
    fields.update(changes)
    return SessionManifest(**fields)


@pytest.mark.parametrize(("codec", "size"), [("ffv1", (180, 320)), ("x264", (540, 960))])
def test_the_reader_gets_back_what_the_writer_wrote(
    tmp_path: Path, codec: str, size: tuple[int, int]
) -> None:
    times = frame_times(7, 10.0, jitter_ns=3_000_000)
    events = [InputEvent(times[2] + 5_000_000, "move", 10, 20, source="human")]
    folder = write_session(tmp_path / "s", times=times, size=size, codec=codec, events=events)
    reader = SessionReader(folder)
    assert reader.manifest.complete and reader.manifest.frames == 7
    assert reader.manifest.ended["reason"] == "test"
    assert reader.manifest.video["codec"] == codec
    assert not (folder / LOCK).exists()
    assert reader.inputs == events
    count = 0
    for (record, image), t_ns in zip(reader.frames(), times, strict=True):
        assert record.index == count and record.t_ns == t_ns
        px = pointer_at(count, size)
        assert record.pointer_px == px and record.pointer == to_lattice(*px, size)
        original = pattern(count, size)
        if codec == "ffv1":
            assert np.array_equal(image, original)
        else:
            mse = np.mean((image.astype(float) - original) ** 2)
            assert 10 * np.log10(255**2 / mse) > 40
        count += 1
    assert count == 7


def test_while_recording_the_lock_names_this_process(tmp_path: Path) -> None:
    writer = SessionWriter(tmp_path / "s", manifest())
    lock = json.loads((tmp_path / "s" / LOCK).read_text())
    assert lock["pid"] == os.getpid()
    on_disk = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert on_disk["complete"] is False and on_disk["game_speed"] == 4
    writer.add_frame(pattern(0, (180, 320)), 1, (0, 0))
    summary = writer.close("seconds", seconds=1)
    assert summary["frames"] == 1 and summary["ended"] == {
        "reason": "seconds",
        "seconds": 1,
        "duration_s": 0.0,
    }
    assert not (tmp_path / "s" / LOCK).exists()


def test_an_existing_folder_is_refused_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="already exists and is not an empty folder"):
        SessionWriter(tmp_path / "s", manifest())
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["keep.txt"]


def test_a_refused_codec_leaves_nothing_behind(tmp_path: Path) -> None:
    try:
        SessionWriter(tmp_path / "new" / "s", manifest(codec="nvenc")).close()
    except UserError as error:
        assert "nvenc is not available" in str(error)
        assert not (tmp_path / "new").exists()
    else:
        pytest.skip("this machine has NVENC, so nothing is refused")


def test_the_context_manager_records_an_error_as_the_end(tmp_path: Path) -> None:
    with pytest.raises(KeyError), SessionWriter(tmp_path / "s", manifest()) as writer:
        writer.add_frame(pattern(0, (180, 320)), 1, (5, 5))
        raise KeyError("boom")
    reader = SessionReader(tmp_path / "s")
    assert reader.manifest.complete
    assert reader.manifest.ended["reason"] == "error: KeyError: 'boom'"
    assert reader.manifest.frames == 1


def test_a_full_queue_drops_frames_and_counts_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entered, gate = threading.Event(), threading.Event()
    real = video_module.av.VideoFrame.from_ndarray

    def held(*args, **kwargs):  # the encoder thread waits here until the test lets it go
        entered.set()
        gate.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(video_module.av.VideoFrame, "from_ndarray", held)
    writer = SessionWriter(tmp_path / "s", manifest(), video=VideoConfig(codec="ffv1", queue_frames=2))
    results = [writer.add_frame(pattern(0, (180, 320)), 10, (0, 0))]
    assert entered.wait(10)  # frame 0 is in the encoder's hands; the queue holds two more
    results += [writer.add_frame(pattern(writer.frames, (180, 320)), 11 + i, (0, 0)) for i in range(7)]
    gate.set()
    writer.close("done")
    kept = [r for r in results if r is not None]
    assert results == [0, 1, 2, None, None, None, None, None]
    reader = SessionReader(tmp_path / "s")
    assert reader.manifest.dropped_frames == 8 - len(kept)
    images = [image for _, image in reader.frames()]
    assert len(images) == len(kept)
    for index, image in enumerate(images):
        assert np.array_equal(image, pattern(index, (180, 320)))


def test_bad_calls_are_refused(tmp_path: Path) -> None:
    writer = SessionWriter(tmp_path / "s", manifest())
    frame = pattern(0, (180, 320))
    with pytest.raises(ValueError, match=r"\(180, 320, 3\) uint8"):
        writer.add_frame(frame[:, :, :2], 1, (0, 0))
    with pytest.raises(ValueError, match="outside the 320x180 client"):
        writer.add_frame(frame, 1, (320, 0))
    writer.add_frame(frame, 5, (0, 0))
    with pytest.raises(ValueError, match="does not increase"):
        writer.add_frame(frame, 5, (0, 0))
    writer.add_inputs([InputEvent(7, "move", 1, 1)])
    with pytest.raises(ValueError, match="goes back in time"):
        writer.add_inputs([InputEvent(6, "move", 1, 1)])
    with pytest.raises(ValueError, match="writer owns complete"):
        writer.update_manifest(complete=True)
    with pytest.raises(ValueError, match="log frame index 3"):
        writer.add_log_lines(["ARENA draw date=1936.01.01.00 h=0 reason=x"], 3)
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.add_frame(frame, 9, (0, 0))


def test_manifest_updates_and_log_lines(tmp_path: Path) -> None:
    writer = SessionWriter(tmp_path / "s", manifest())
    writer.add_frame(pattern(0, (180, 320)), 1, (0, 0))
    kept = writer.add_log_lines(
        ["[12:00:01][effect.cpp:33]: ARENA draw date=1936.01.01.00 h=0 reason=x\n", "Loading map", ""], 0
    )
    assert kept == 1
    writer.update_manifest(winner="BLU", declarer="RED", players={"BLU": "human", "RED": "ai"}, side="BLU")
    writer.add_focus_pause(10, 20)
    writer.close("winner")
    reader = SessionReader(tmp_path / "s")
    assert (reader.manifest.winner, reader.manifest.declarer, reader.manifest.side) == ("BLU", "RED", "BLU")
    assert reader.manifest.focus_pauses == [{"start_ns": 10, "end_ns": 20}]
    assert [r.line for r in reader.log_records] == [
        "[12:00:01][effect.cpp:33]: ARENA draw date=1936.01.01.00 h=0 reason=x"
    ]


def test_the_reader_refuses_an_incomplete_session_unless_asked(tmp_path: Path) -> None:
    write_session(tmp_path / "s", times=frame_times(3, 10.0), close=False)
    with pytest.raises(UserError, match="incomplete.*hoi4-arena salvage"):
        SessionReader(tmp_path / "s")
    assert not SessionReader(tmp_path / "s", allow_incomplete=True).complete


def test_a_video_shorter_than_the_frame_log_is_named(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "s", times=frame_times(6, 10.0))
    video = (folder / "screen.mkv").read_bytes()
    remux_prefix(folder / "screen.mkv", tmp_path / "short.mkv", 4)
    os.replace(tmp_path / "short.mkv", folder / "screen.mkv")
    with pytest.raises(
        UserError, match=r"screen.mkv: holds 4 frames \(by its duration\) but frames.jsonl lists 6"
    ):
        SessionReader(folder)
    # Cut inside, the file still claims its old duration: decoding finds the missing frames.
    (folder / "screen.mkv").write_bytes(video[: len(video) // 2])
    reader = SessionReader(folder)
    with pytest.raises(UserError, match=r"screen.mkv: holds only \d frames but frames.jsonl lists 6"):
        list(reader.frames())


def test_a_frame_log_that_disagrees_with_the_manifest_is_named(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "s", times=frame_times(6, 10.0))
    lines = (folder / "frames.jsonl").read_bytes().splitlines(keepends=True)
    (folder / "frames.jsonl").write_bytes(b"".join(lines[:5]))
    with pytest.raises(UserError, match="frames.jsonl: lists 5 frames but the manifest says 6"):
        SessionReader(folder)
    (folder / "frames.jsonl").write_bytes(b"".join(lines[:5]) + b'{"index": 5, "t_ns": "soon"}\n')
    with pytest.raises(UserError, match="frames.jsonl: line 6"):
        SessionReader(folder)
