"""The recorder's per-frame logic on a virtual clock: pauses, input filtering, the game log, stops.

`ScriptedGame` is a complete `Worker` on a virtual clock (what the simulator's headless worker will be):
frames from a moving pattern, focus and a person's input on a schedule, game.log lines that appear at
given times. The recorder runs on it through the same `run_paced` loop as on X11, so every expectation
here is exact: which frames, which inputs, which pauses, which log lines at which frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from killable_recorder import pattern
from typer.testing import CliRunner

from hoi4_arena.cli import app as cli_app
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import SCHEMA_VERSION, format_line
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.worker import Capture, CaptureRequest, Worker, WorkerError
from hoi4_arena.sessions.check import check_session
from hoi4_arena.sessions.format import JsonLines
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.sessions.record_command import RecordConfig
from hoi4_arena.sessions.recorder import Recorder, RecorderSettings, run_paced

T0 = 5_000_000_000_000
MS = 1_000_000
SIZE = (90, 160)  # (height, width)
VK_A = ord("A")


def at(ms: float) -> int:
    return T0 + round(ms * MS)


def arena(kind: str, /, **fields) -> str:
    return format_line(kind, date="1936.01.01.00", h=0, **fields)


@dataclass
class ScriptedGame(Worker):
    """A game on a virtual clock whose focus, input, log and troubles follow a script."""

    unfocused: list[tuple[int, int]] = field(default_factory=list)
    """[start, end) intervals without focus."""
    person: list[InputEvent] = field(default_factory=list)
    log: list[tuple[int, str]] = field(default_factory=list)
    """(time it appears, line)."""
    capture_ms: float = 0.0
    """How much virtual time a capture takes (a slow machine)."""
    f12_at: int | None = None
    stop_at: tuple[int, str] | None = None
    """(time, reason): the worker stops input for another reason than F12."""
    gone_at: int | None = None
    """The game's window disappears."""
    resize_at: int | None = None
    now: int = T0
    captures: int = 0
    input_calls: list[str] = field(default_factory=list)
    _drained: int = 0

    def attach(self) -> dict:
        return {"game": "scripted", "size": [SIZE[1], SIZE[0]]}

    def _focus(self) -> bool:
        return not any(a <= self.now < b for a, b in self.unfocused)

    def status(self) -> dict:
        reason = ""
        if self.f12_at is not None and self.now >= self.f12_at:
            reason = "f12"
        elif self.gone_at is not None and self.now >= self.gone_at:
            reason = "the game window is gone"
        elif self.stop_at is not None and self.now >= self.stop_at[0]:
            reason = self.stop_at[1]
        return {"focus": self._focus(), "armed": None, "stopped": bool(reason), "stop_reason": reason}

    def capture(self, request: CaptureRequest | None = None) -> Capture:
        if self.gone_at is not None and self.now >= self.gone_at:
            raise WorkerError("window_gone", "the window is gone")
        size = SIZE if self.resize_at is None or self.now < self.resize_at else (SIZE[0] * 2, SIZE[1] * 2)
        t_ns = self.now
        pointer = (self.captures * 7 % size[1], self.captures * 3 % size[0])
        frame = pattern(self.captures, size)
        self.captures += 1
        self.now += round(self.capture_ms * MS)
        return Capture(t_ns=t_ns, size=size, pointer=pointer, focus=self._focus(), frame=frame)

    def events(self) -> list[InputEvent]:
        due = [e for e in self.person[self._drained :] if e.t_ns <= self.now]
        self._drained += len(due)
        return due

    def game_log(self, offset: int = 0) -> tuple[list[str], int]:
        # The offset counts lines here; the recorder only ever hands back what it was given.
        due = [line for t, line in self.log[offset:] if t <= self.now]
        return due, offset + len(due)

    def now_ns(self) -> int:
        return self.now

    def wait_until(self, t_ns: int) -> None:
        self.now = max(self.now, t_ns)

    # The recorder must never send input: any of these is a test failure.
    def arm(self, mode) -> None:
        self.input_calls.append("arm")
        raise WorkerError("not_allowed", "the recorder armed the worker")

    def disarm(self) -> None:
        self.input_calls.append("disarm")

    def apply(self, events, timed=False) -> dict:
        self.input_calls.append("apply")
        raise WorkerError("not_allowed", "the recorder applied input")

    def release(self) -> None:
        self.input_calls.append("release")

    def focus(self) -> bool:
        return self._focus()

    def pointer_image(self):
        return np.zeros((1, 1, 4), np.uint8), (0, 0)


def record(
    folder: Path, game: ScriptedGame, seconds: float | None = 2.0, close_at: int | None = None, **settings
) -> tuple[Recorder, str, dict]:
    options = {"hz": 10.0, "game_speed": 3, "codec": "ffv1", "realtime": False, **settings}
    recorder = Recorder(folder, RecorderSettings(**options))
    recorder.start(game)
    reason = run_paced(recorder, seconds=seconds)
    if close_at is not None:  # closing took a while: the person went on meanwhile
        game.wait_until(close_at)
    summary = recorder.close(reason)
    assert game.input_calls == []
    report = check_session(folder)
    assert report["verdict"] == "ok", report
    return recorder, reason, summary


def lines(folder: Path, name: str) -> list:
    return JsonLines.read(folder / name).records()


def key(ms: float) -> InputEvent:
    return InputEvent(at(ms), "key_down", 10, 10, key=VK_A, source="human")


def test_frames_on_the_clock_and_every_input_of_the_session(tmp_path: Path) -> None:
    person = [key(-5), key(0), key(50), key(130), key(410), key(1999), key(2000), key(2150)]
    game = ScriptedGame(person=person)
    recorder, reason, summary = record(tmp_path / "s", game, close_at=at(2200))
    assert reason == "seconds" and summary["frames"] == 20 and recorder.missed_ticks == 0
    frames = lines(tmp_path / "s", "frames.jsonl")
    assert [f["t_ns"] for f in frames] == [at(100 * i) for i in range(20)]
    # Before the recording (drained at start, with the first frame's time too) nothing counts; after
    # the last frame (1900 ms) only within one frame period of it (2000 ms), as check-session accepts.
    kept = [e["t_ns"] for e in lines(tmp_path / "s", "inputs.jsonl")]
    assert kept == [at(50), at(130), at(410), at(1999), at(2000)]
    assert summary["inputs_discarded"] == 1  # the one at 2150 ms; the earlier ones predate the start
    reader = SessionReader(tmp_path / "s")
    for window in reader.windows().windows:
        assert all(window.t0_ns <= e.t_ns < window.end_ns for e in window.events)
    images = [image for _, image in reader.frames()]
    np.testing.assert_array_equal(images[7], pattern(7, SIZE))  # ffv1: the very pixels captured


def test_focus_loss_pauses_without_frames_or_inputs_and_resumes(tmp_path: Path) -> None:
    person = [key(450), key(600), key(950), key(1000), key(1050)]
    game = ScriptedGame(
        unfocused=[(at(500), at(1000))],
        person=person,
        log=[(at(700), arena("declare", attacker="RED", defender="BLU"))],
    )
    recorder, reason, summary = record(tmp_path / "s", game)
    manifest = SessionReader(tmp_path / "s").manifest
    assert manifest.focus_pauses == [{"start_ns": at(500), "end_ns": at(1000)}]
    times = [f["t_ns"] for f in lines(tmp_path / "s", "frames.jsonl")]
    assert times == [at(100 * i) for i in range(5)] + [at(100 * i) for i in range(10, 20)]
    assert [e["t_ns"] for e in lines(tmp_path / "s", "inputs.jsonl")] == [at(450), at(1000), at(1050)]
    assert summary["inputs_discarded"] == 2 and summary["paused_s"] == 0.5
    assert game.captures == 16  # one grab saw the focus gone; the paused ticks only asked for focus
    # The declaration came during the pause: it is read at the frame that resumed the recording.
    assert lines(tmp_path / "s", "arena-log.jsonl")[0]["frame"] == 5


def test_a_recording_that_ends_paused_closes_its_pause(tmp_path: Path) -> None:
    game = ScriptedGame(unfocused=[(at(1500), at(9000))])
    _, _, summary = record(tmp_path / "s", game)
    manifest = SessionReader(tmp_path / "s").manifest
    assert summary["frames"] == 15
    assert manifest.focus_pauses == [{"start_ns": at(1500), "end_ns": at(2000)}]


def test_the_log_names_the_game_and_a_winner_ends_the_recording(tmp_path: Path) -> None:
    before = at(-1000)
    finished = [
        arena("start", arena="plains", seed=1, tags=["BLU", "RED"], version=SCHEMA_VERSION),
        arena("declare", attacker="BLU", defender="RED"),
        arena("capitulated", loser="RED", winner="BLU", surrender=1.0),
    ]
    current = [
        arena("start", arena="river", seed=3, tags=["BLU", "RED"], version=SCHEMA_VERSION),
        arena("player", tag="BLU", kind="human"),
        arena("player", tag="RED", kind="ai"),
    ]
    log = [(before, line) for line in finished + ["some other game.log line"] + current]
    log += [
        (at(300), arena("declare", attacker="RED", defender="BLU")),
        (at(1200), arena("capitulated", loser="RED", winner="BLU", surrender=1.0)),
    ]
    game = ScriptedGame(log=log)
    _, reason, summary = record(tmp_path / "s", game, seconds=30, after_winner_s=0.5)
    assert reason == "winner"
    assert summary["frames"] == 18  # the tick 500 ms after the winner line was read ends it
    assert (summary["arena"], summary["declarer"], summary["side"], summary["winner"]) == (
        "river",
        "RED",
        "BLU",
        "BLU",
    )
    assert summary["players"] == {"BLU": "human", "RED": "ai"}
    stored = [(r["frame"], r["line"]) for r in lines(tmp_path / "s", "arena-log.jsonl")]
    assert stored == [(0, line) for line in current] + [(3, log[-2][1]), (12, log[-1][1])]


def test_a_finished_game_in_the_log_is_not_the_recorded_one(tmp_path: Path) -> None:
    finished = [
        arena("start", arena="plains", seed=1, tags=["BLU", "RED"], version=SCHEMA_VERSION),
        arena("capitulated", loser="RED", winner="BLU", surrender=1.0),
    ]
    game = ScriptedGame(log=[(at(-10), line) for line in finished])
    _, reason, summary = record(tmp_path / "s", game, seconds=1.0, after_winner_s=0.0)
    assert reason == "seconds" and summary["winner"] is None and summary["log_lines"] == 0


def test_a_new_game_in_the_log_ends_the_session(tmp_path: Path) -> None:
    start = arena("start", arena="plains", seed=1, tags=["BLU", "RED"], version=SCHEMA_VERSION)
    game = ScriptedGame(log=[(at(0), start), (at(650), start.replace("seed=1", "seed=2"))])
    _, reason, summary = record(tmp_path / "s", game, seconds=30)
    assert reason == "new_game" and summary["frames"] == 8 and summary["log_lines"] == 1


def test_side_from_the_flag_wins_over_the_log(tmp_path: Path) -> None:
    log = [
        (at(0), arena("start", arena="ford", seed=0, tags=["BLU", "RED"], version=SCHEMA_VERSION)),
        (at(0), arena("player", tag="RED", kind="ai")),
    ]
    _, _, summary = record(tmp_path / "s", ScriptedGame(log=log), seconds=0.5, side="RED")
    assert summary["side"] == "RED" and summary["players"] == {"RED": "human"}


def test_a_malformed_arena_line_is_skipped_not_stored(tmp_path: Path) -> None:
    log = [(at(0), "ARENA declare attacker=RED"), (at(0), arena("declare", attacker="RED", defender="BLU"))]
    _, _, summary = record(tmp_path / "s", ScriptedGame(log=log), seconds=0.5)
    assert summary["bad_log_lines"] == 1 and summary["log_lines"] == 1 and summary["declarer"] == "RED"


def test_f12_ends_the_recording(tmp_path: Path) -> None:
    _, reason, summary = record(tmp_path / "s", ScriptedGame(f12_at=at(650)), seconds=30)
    assert reason == "f12" and summary["frames"] == 7 and summary["ended"]["reason"] == "f12"


def test_the_game_window_gone_ends_the_recording_and_keeps_it(tmp_path: Path) -> None:
    _, reason, summary = record(tmp_path / "s", ScriptedGame(gone_at=at(450)), seconds=30)
    assert reason == "window_gone" and summary["frames"] == 5


def test_a_worker_that_can_no_longer_hear_input_ends_the_recording_with_an_error(tmp_path: Path) -> None:
    game = ScriptedGame(stop_at=(at(300), "input listener lost: connection closed"))
    _, reason, summary = record(tmp_path / "s", game, seconds=30)
    assert reason == "error: the worker stopped: input listener lost: connection closed"
    assert summary["frames"] == 3


def test_a_resized_window_ends_with_an_error_and_keeps_what_was_recorded(tmp_path: Path) -> None:
    _, reason, summary = record(tmp_path / "s", ScriptedGame(resize_at=at(500)), seconds=30)
    assert reason.startswith("error: the window was resized from 160x90 to 320x180")
    assert summary["frames"] == 5


def test_ticks_the_loop_is_late_for_are_counted_not_recorded_late(tmp_path: Path) -> None:
    game = ScriptedGame(capture_ms=150)
    recorder, _, summary = record(tmp_path / "s", game)
    times = [f["t_ns"] for f in lines(tmp_path / "s", "frames.jsonl")]
    assert times == [at(200 * i) for i in range(10)]  # every capture still starts on the 100 ms grid
    assert recorder.missed_ticks == 10 and summary["missed_ticks"] == 10


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hz": 2}, "--hz must lie in 5..60"),
        ({"game_speed": 0}, "--game-speed must be the game's speed 1..5"),
        ({"game_speed": 6}, "--game-speed must be the game's speed 1..5"),
        ({"side": "GREEN"}, "--side must be BLU or RED"),
        ({"codec": "h265"}, "--codec must be one of"),
        ({"split": "dev"}, "--split must be one of"),
        ({"seconds": -1}, "--seconds must be positive"),
        ({"after_winner_s": -1}, "--after-winner must lie in"),
    ],
)
def test_bad_settings_are_refused_with_a_message(tmp_path: Path, change: dict, message: str) -> None:
    options = {"out": tmp_path / "s", "game_speed": 4, **change}
    with pytest.raises(UserError, match=message):
        RecordConfig(**options)
    assert not (tmp_path / "s").exists()


def test_an_existing_session_is_never_recorded_over(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "manifest.json").write_text("{}")
    with pytest.raises(UserError, match="already exists and is not an empty folder"):
        RecordConfig(out=tmp_path / "s", game_speed=4)
    assert (tmp_path / "s" / "manifest.json").read_text() == "{}"


def test_the_record_command_needs_the_game_speed(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli_app, ["record", str(tmp_path / "s"), "--seconds", "1"])
    assert result.exit_code == 2 and "--game-speed" in result.output
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--game-speed", "4", "--hz", "1"], "--hz must lie in 5..60"),
        (["--game-speed", "9"], "--game-speed must be the game's speed 1..5"),
        (["--game-speed", "4", "--side", "blue"], "--side must be BLU or RED"),
    ],
)
def test_the_record_command_refuses_bad_options_before_touching_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: list[str], message: str
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)  # the options are refused before any display is asked
    result = CliRunner().invoke(cli_app, ["record", str(tmp_path / "s"), *options])
    assert isinstance(result.exception, UserError) and message in str(result.exception)
    assert not (tmp_path / "s").exists()


def test_the_record_command_without_a_display_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    result = CliRunner().invoke(cli_app, ["record", str(tmp_path / "s"), "--game-speed", "4"])
    assert isinstance(result.exception, UserError) and "no X display" in str(result.exception)
    assert not (tmp_path / "s").exists()
