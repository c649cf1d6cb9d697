import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from killable_recorder import pattern
from session_files import folder_digest

from hoi4_arena.errors import UserError
from hoi4_arena.sessions import salvage as salvage_module
from hoi4_arena.sessions.check import check_session
from hoi4_arena.sessions.format import BACKUP, LOCK, JsonLines
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.sessions.salvage import salvage
from hoi4_arena.sessions.splits import iter_sessions
from hoi4_arena.sessions.video import count_decodable, decode

RECORDER = Path(__file__).with_name("killable_recorder.py")


def start_recorder(
    folder: Path, codec: str = "ffv1", size: str = "320x180", seed: int = 0, extra: tuple[str, ...] = ()
) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, str(RECORDER), str(folder), "--codec", codec, "--size", size, "--seed", str(seed)]
        + list(extra),
        stdout=subprocess.PIPE,
    )
    assert process.stdout.readline().strip() == b"recording"
    return process


def record_and_kill(folder: Path, delay: float, **kwargs) -> None:
    """Kill the recorder `delay` seconds after its video first holds a frame."""
    process = start_recorder(folder, **kwargs)
    deadline = time.monotonic() + 20
    while count_decodable(folder / "screen.mkv") == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stdout.close()


def left_behind(folder: Path) -> dict:
    """What the killed recorder left: complete frame and input lines, and the frames its video holds."""
    return {
        "frames": JsonLines.read(folder / "frames.jsonl").records(allow_torn=True),
        "inputs": JsonLines.read(folder / "inputs.jsonl").records(allow_torn=True),
        "video_frames": count_decodable(folder / "screen.mkv"),
        "digest": folder_digest(folder),
    }


KILLS = [  # (codec, size, seed): the moment of the kill is drawn from the seed
    ("x264", "320x180", 0),
    ("x264", "960x540", 1),
    ("ffv1", "320x180", 2),
    ("x264", "320x180", 3),
]


@pytest.mark.parametrize(("codec", "size", "seed"), KILLS)
def test_a_killed_recording_is_salvaged_up_to_the_last_frame_its_video_holds(
    tmp_path: Path, codec: str, size: str, seed: int
) -> None:
    folder = tmp_path / "s"
    delay = float(np.random.default_rng(seed).uniform(0.2, 1.5))
    record_and_kill(folder, delay, codec=codec, size=size, seed=seed)
    before = left_behind(folder)
    assert (folder / LOCK).exists() and before["video_frames"] > 0
    assert before["video_frames"] <= len(before["frames"])  # the video never runs ahead of the frame log

    result = salvage(folder)
    kept = before["video_frames"]
    assert result["changed"] and result["frames"] == kept
    assert result["cut"]["frames"] == len(before["frames"]) - kept
    assert result["cut"]["frames"] <= 1  # at most the newest frame, the packet the muxer held

    reader = SessionReader(folder)
    assert reader.manifest.complete and reader.manifest.frames == kept
    assert reader.manifest.ended["reason"] == "salvaged"
    assert not (folder / LOCK).exists()
    # Every frame the video held, and the pictures are the recorder's.
    width, height = (int(v) for v in size.split("x"))
    images = [image for _, image in reader.frames()]
    assert len(images) == kept
    for index, image in enumerate(images):
        if codec == "ffv1":
            assert np.array_equal(image, pattern(index, (height, width)))
        else:
            mse = np.mean((image.astype(float) - pattern(index, (height, width))) ** 2)
            assert 10 * np.log10(255**2 / mse) > 40
    # Every input up to the last kept frame's time, and none after it.
    last_t = reader.frame_records[-1].t_ns
    assert [e.to_dict() for e in reader.inputs] == [e for e in before["inputs"] if e["t_ns"] <= last_t]
    assert check_session(folder)["verdict"] == "ok"
    assert len(list(reader.decisions())) >= kept // 6

    # Idempotent, and --undo puts back exactly what the recorder left.
    assert salvage(folder)["changed"] is False
    salvage(folder, undo=True)
    assert folder_digest(folder) == before["digest"]
    assert salvage(folder)["frames"] == kept


@pytest.fixture
def killed(tmp_path: Path) -> Path:
    folder = tmp_path / "killed"
    record_and_kill(folder, 0.5)
    return folder


def test_a_live_recorder_is_never_touched(tmp_path: Path) -> None:
    folder = tmp_path / "live"
    process = start_recorder(folder)
    try:
        time.sleep(0.3)
        with pytest.raises(UserError, match=r"a recorder is still writing this session \(pid \d+"):
            salvage(folder)
        assert not (folder / BACKUP).exists()
        report = check_session(folder)
        assert report["verdict"] == "recording" and report["lock"]["state"] == "live"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stdout.close()
    assert salvage(folder)["changed"]


def test_a_lock_from_another_machine_is_refused(killed: Path) -> None:
    lock = json.loads((killed / LOCK).read_text())
    lock["hostname"] = socket.gethostname() + "-elsewhere"
    (killed / LOCK).write_text(json.dumps(lock))
    digest = folder_digest(killed)
    with pytest.raises(UserError, match="another machine.*run salvage there"):
        salvage(killed)
    assert folder_digest(killed) == digest
    assert check_session(killed)["verdict"] == "recording"


def test_torn_last_lines_are_cut_and_garbage_is_refused(killed: Path) -> None:
    for name in ("frames.jsonl", "inputs.jsonl", "arena-log.jsonl"):
        with open(killed / name, "ab") as handle:
            handle.write(b'{"t_ns": 12, "ki')  # a line the kill cut short
    original = (killed / "inputs.jsonl").read_bytes()
    lines = original.split(b"\n")
    lines[3] = b"{garbage"
    (killed / "inputs.jsonl").write_bytes(b"\n".join(lines))
    digest = folder_digest(killed)
    with pytest.raises(UserError, match=r"inputs.jsonl: line 4 is not valid JSON"):
        salvage(killed)
    assert folder_digest(killed) == digest  # nothing changed

    (killed / "inputs.jsonl").write_bytes(original)
    result = salvage(killed)
    assert result["cut"]["torn_lines"] == ["arena-log.jsonl", "frames.jsonl", "inputs.jsonl"]
    assert check_session(killed)["verdict"] == "ok"


def test_an_interrupted_salvage_is_rolled_back_and_redone(
    killed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest = folder_digest(killed)
    real_replace = os.replace

    def failing(src, dst):
        if Path(dst) == killed / "inputs.jsonl":
            raise OSError("disk unplugged")
        return real_replace(src, dst)

    monkeypatch.setattr(salvage_module.os, "replace", failing)
    with pytest.raises(OSError, match="disk unplugged"):
        salvage(killed)
    monkeypatch.setattr(salvage_module.os, "replace", real_replace)
    assert not SessionReader(killed, allow_incomplete=True).complete  # the manifest went in last
    result = salvage(killed)
    assert result["changed"] and check_session(killed)["verdict"] == "ok"
    salvage(killed, undo=True)
    assert folder_digest(killed) == digest


def test_undo_needs_a_salvage(killed: Path) -> None:
    with pytest.raises(UserError, match="nothing to undo"):
        salvage(killed, undo=True)


def test_a_recording_killed_before_its_first_frame_reached_the_video(tmp_path: Path) -> None:
    folder = tmp_path / "early"
    process = start_recorder(folder)
    # A frame's line is written once its packet is in the muxer, which holds it: wait for the line.
    deadline = time.monotonic() + 20
    while not (folder / "frames.jsonl").stat().st_size and time.monotonic() < deadline:
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stdout.close()
    # PyAV creates the file at the first packet; if one made it, cut it back to a header's worth.
    video = folder / "screen.mkv"
    if video.exists():
        video.write_bytes(video.read_bytes()[:200])
    assert count_decodable(video) == 0
    digest = folder_digest(folder)
    result = salvage(folder)
    assert result["frames"] == 0 and result["cut"]["frames"] >= 1
    assert not video.exists()
    report = check_session(folder)
    assert report["verdict"] == "failed" and "no frames recorded" in report["problems"]
    assert list(iter_sessions(tmp_path)) == []
    with pytest.raises(UserError, match="nothing to undo"):
        salvage(folder / "salvage-backup", undo=True)  # a backup is not a session either
    salvage(folder, undo=True)
    assert folder_digest(folder) == digest


def test_salvage_from_the_command_line(killed: Path) -> None:
    run = [sys.executable, "-m", "hoi4_arena.cli", "salvage"]
    out = subprocess.run([*run, str(killed)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["changed"] is True
    out = subprocess.run([*run, str(killed), "--undo"], capture_output=True, text=True)
    assert out.returncode == 0 and json.loads(out.stdout)["restored"]
    out = subprocess.run([*run, str(killed.parent)], capture_output=True, text=True)
    message = " ".join(out.stderr.split())  # rich wraps long lines
    assert out.returncode == 2 and "not a session folder" in message and "Traceback" not in message


def test_decoding_stops_cleanly_where_the_kill_cut_the_video(killed: Path) -> None:
    frames = list(decode(killed / "screen.mkv"))
    assert len(frames) == count_decodable(killed / "screen.mkv") > 0
    for index, image in enumerate(frames):
        assert np.array_equal(image, pattern(index, (180, 320)))


@pytest.mark.parametrize(
    ("codec", "size", "seed"), [("x264", "320x180", 10), ("x264", "960x540", 11), ("ffv1", "320x180", 12)]
)
def test_a_kill_at_a_random_moment_loses_at_most_the_newest_frame(
    tmp_path: Path, codec: str, size: str, seed: int
) -> None:
    """A driver on a virtual clock (realtime=False) writes as fast as the encoder goes: the encoder is
    always busy, the case where a queue of frames used to die with the process."""
    folder = tmp_path / "s"
    process = start_recorder(folder, codec, size, seed, extra=("--offline",))
    rng = np.random.default_rng(seed)
    target = int(rng.integers(3, 40))  # the moment: after some frames (drawn), then a random instant
    while process.stdout.readline().split() != [b"frame", str(target).encode()]:
        assert process.poll() is None, "the recorder stopped"
    time.sleep(float(rng.uniform(0.0, 0.2)))
    process.send_signal(signal.SIGKILL)
    process.wait()
    printed = process.stdout.read().decode().split("\n")
    process.stdout.close()
    written = max([target] + [int(line.split()[1]) for line in printed if line.startswith("frame ")])
    before = left_behind(folder)
    # add_frame had returned for frames 0..written: all but the newest are in the file.
    assert before["video_frames"] >= written >= target
    assert 0 <= len(before["frames"]) - before["video_frames"] <= 1
    result = salvage(folder)
    assert result["frames"] == before["video_frames"] and result["cut"]["frames"] <= 1
    assert check_session(folder)["verdict"] == "ok"


def test_a_kill_behind_a_busy_realtime_encoder_cuts_at_most_one_frame(tmp_path: Path) -> None:
    """1080p at 30 Hz outruns x264 on a small machine: frames queue (or drop). The ones still queued
    die with the process, but frames.jsonl never names one, so salvage cuts at most the newest."""
    folder = tmp_path / "s"
    record_and_kill(folder, 1.0, codec="x264", size="1920x1080", seed=5, extra=("--hz", "30"))
    before = left_behind(folder)
    assert before["video_frames"] > 0
    assert 0 <= len(before["frames"]) - before["video_frames"] <= 1
    assert salvage(folder)["cut"]["frames"] <= 1
