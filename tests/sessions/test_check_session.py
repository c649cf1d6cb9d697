import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from session_files import frame_times, write_session
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.sessions import reader as reader_module
from hoi4_arena.sessions import video as video_module
from hoi4_arena.sessions.check import check_session
from hoi4_arena.sessions.video import remux_prefix

MS = 1_000_000


def good(tmp_path: Path, name: str = "good", **kwargs) -> Path:
    times = frame_times(12, 10.0, jitter_ns=4 * MS)
    events = [InputEvent(times[3] + 10 * MS, "key_down", 1, 1, key=0x41, source="human")]
    return write_session(tmp_path / name, times=times, events=events, **kwargs)


def test_a_sound_session_passes_without_decoding_its_video(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = good(tmp_path)

    def no_decoding(*args, **kwargs):
        raise AssertionError("check-session must not decode the video")

    for name in ("decode", "decode_frames", "count_decodable"):
        monkeypatch.setattr(video_module, name, no_decoding)
    monkeypatch.setattr(reader_module, "decode_frames", no_decoding)
    report = check_session(folder)
    assert report["verdict"] == "ok", report["problems"]
    assert report["frames"] == report["video_frames"] == 12
    assert report["decisions"] == 6 and report["bursts"] == 0 and report["inputs"] == 1
    assert report["game_speed"] == 4 and report["problems"] == []


def test_a_video_shorter_than_its_frame_log_fails(tmp_path: Path) -> None:
    folder = good(tmp_path)
    video = (folder / "screen.mkv").read_bytes()
    remux_prefix(folder / "screen.mkv", tmp_path / "short.mkv", 9)
    os.replace(tmp_path / "short.mkv", folder / "screen.mkv")
    report = check_session(folder)
    assert report["verdict"] == "failed"
    assert "screen.mkv: holds 9 frames (by its duration) but frames.jsonl lists 12" in report["problems"][0]
    # Cut inside, the file keeps its old duration: counting packets finds the loss.
    (folder / "screen.mkv").write_bytes(video[: len(video) * 2 // 3])
    report = check_session(folder)
    assert report["verdict"] == "failed"
    assert any(
        p.endswith(" frames but frames.jsonl lists 12") and "screen.mkv holds" in p
        for p in report["problems"]
    )


def test_inputs_outside_the_session_fail(tmp_path: Path) -> None:
    times = frame_times(6, 10.0)
    early = InputEvent(times[0] - 5_000 * MS, "move", 1, 1)
    folder = write_session(tmp_path / "s", times=times, events=[early])
    report = check_session(folder)
    assert report["verdict"] == "failed"
    assert any("1 inputs lie outside the session's time span" in p for p in report["problems"])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.update(schema=99), "schema 99 is newer"),
        (lambda m: m.pop("game_speed"), "no game_speed"),
        (lambda m: m.update(game_speed=9), "game_speed must be one of 1..5"),
        (lambda m: m.update(frames=13), "lists 12 frames but the manifest says 13"),
    ],
)
def test_manifest_problems_fail_with_the_reason(tmp_path: Path, edit, message: str) -> None:
    folder = good(tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    report = check_session(folder)
    assert report["verdict"] == "failed"
    assert message in report["problems"][0]


def test_corrupt_lines_fail_with_file_and_line(tmp_path: Path) -> None:
    folder = good(tmp_path)
    lines = (folder / "frames.jsonl").read_bytes().split(b"\n")
    lines[4] = lines[4][:20]
    (folder / "frames.jsonl").write_bytes(b"\n".join(lines))
    report = check_session(folder)
    assert report["verdict"] == "failed"
    assert "frames.jsonl: line 5 is not valid JSON" in report["problems"][0]


def test_an_unfinished_session_is_incomplete_and_not_a_folder_fails(tmp_path: Path) -> None:
    report = check_session(tmp_path / "nowhere")
    assert report["verdict"] == "failed" and "no such folder" in report["problems"][0]
    folder = good(tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["complete"] = False
    (folder / "manifest.json").write_text(json.dumps(manifest))
    report = check_session(folder)
    assert report["verdict"] == "incomplete" and "hoi4-arena salvage" in report["problems"][0]


def test_check_session_command(tmp_path: Path) -> None:
    ok = good(tmp_path, "ok")
    bad = good(tmp_path, "bad")
    (bad / "inputs.jsonl").write_bytes(b'{"t_ns": 1, "kind": "jump"}\n')
    command = [sys.executable, "-m", "hoi4_arena.cli", "check-session"]
    env = {**os.environ, "COLUMNS": "300"}
    out = subprocess.run([*command, str(ok)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["passed"] is True and "ok" in out.stderr
    out = subprocess.run([*command, str(ok), str(bad)], capture_output=True, text=True, env=env)
    assert out.returncode == 1
    summary = json.loads(out.stdout)
    assert [s["verdict"] for s in summary["sessions"]] == ["ok", "failed"]
    assert "inputs.jsonl: line 1: unknown event kind 'jump'" in out.stderr
    assert "Traceback" not in out.stderr


def _live(folder: Path) -> Path:
    """Make `folder` look like a session a recorder on another machine is still writing."""
    lock = {"pid": 1, "hostname": "elsewhere.invalid", "started": "2026-01-01T00:00:00Z", "create_time": None}
    (folder / "recording.lock").write_text(json.dumps(lock))
    return folder


@pytest.mark.parametrize(
    ("kinds", "allow_live", "status"),
    [
        (["ok"], False, 0),
        (["ok", "live"], False, 3),
        (["ok", "live"], True, 0),
        (["live", "bad"], False, 1),
        (["live", "bad"], True, 1),
        (["ok", "incomplete"], False, 1),
    ],
)
def test_check_session_exit_status(tmp_path: Path, kinds: list[str], allow_live: bool, status: int) -> None:
    folders = []
    for i, kind in enumerate(kinds):
        folder = good(tmp_path, f"{kind}{i}")
        if kind == "live":
            _live(folder)
        elif kind == "bad":
            (folder / "inputs.jsonl").write_bytes(b'{"t_ns": 1, "kind": "jump"}\n')
        elif kind == "incomplete":
            manifest = json.loads((folder / "manifest.json").read_text())
            manifest["complete"] = False
            (folder / "manifest.json").write_text(json.dumps(manifest))
        folders.append(str(folder))
    # In-process (the exit status as the command sets it); the real entry point is test_check_session_command's.
    args = ["check-session", *folders, *(["--allow-live"] if allow_live else [])]
    out = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert out.exit_code == status, out.output
    assert out.exception is None or isinstance(out.exception, SystemExit), out.exception
    summary = json.loads(out.stdout)
    assert summary["exit_status"] == status and summary["passed"] is (status == 0)


def test_check_session_help_documents_the_exit_status() -> None:
    out = CliRunner().invoke(app, ["check-session", "--help"], env={"COLUMNS": "200"})
    assert out.exit_code == 0
    assert "--allow-live" in out.stdout and "3 when" in out.stdout
