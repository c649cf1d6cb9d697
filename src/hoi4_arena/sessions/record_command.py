"""The `record` command: a person's play recorded from the X11 game into a new session folder.

`run_record(RecordConfig)` opens the X11 worker (`screen.probe.open_worker`), ends the recording cleanly
on SIGINT/SIGTERM/SIGHUP, ticks a `sessions.recorder.Recorder` at its rate (`run_paced`) with live
progress on stderr, checks the session and returns the summary the command prints as JSON. The
recorder itself (per-frame logic, no clock, no signals) stays in `sessions/recorder.py`.

`RecordConfig`'s fields are the command's options (`cli_options.from_config`); this module imports
numpy only when it records, so `hoi4-arena --help` stays cheap.

Try: hoi4-arena record runs/s1 --seconds 60 --hz 10 --game-speed 4 --window "Hearts of Iron IV"
     (play; F12 or Ctrl+C ends it early), then: hoi4-arena check-session runs/s1
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hoi4_arena.errors import UserError

if TYPE_CHECKING:
    from hoi4_arena.screen.worker import Worker
    from hoi4_arena.sessions.recorder import Recorder, RecorderSettings

log = logging.getLogger(__name__)

_SIGNAL_REASONS = {signal.SIGINT: "interrupt", signal.SIGTERM: "terminated", signal.SIGHUP: "hangup"}


@dataclass
class RecordConfig:
    """Settings of `hoi4-arena record`."""

    out: Path
    """The session folder to create (must not exist, or be empty)."""
    game_speed: int
    """The game speed 1..5 you play at (required: the same input means other things at other speeds);
    stored in the manifest."""
    seconds: float | None = None
    """Stop after this many seconds, pauses included (default: at F12, Ctrl+C or the game's end)."""
    hz: float = 10.0
    """Frames a second (5..60)."""
    split: str = "train"
    """train, val or test."""
    codec: str = "x264"
    """x264 (CRF 18, 4:4:4), ffv1 (lossless) or nvenc (where the machine has one)."""
    window: str | None = None
    """The game's window name or class, or its process id (default: Hearts of Iron IV)."""
    display: str | None = None
    """X display such as :0 (default: $DISPLAY)."""
    game_log: Path | None = None
    """The game's game.log, tailed for ARENA lines."""
    side: str | None = None
    """The side you play, BLU or RED (default: the ARENA log's `player ... kind=human` line)."""
    after_winner_s: float = 15.0
    """Stop this long after the ARENA log names a winner."""
    game: str | None = None
    """sim or hoi4; None: hoi4 when the window's title names Hearts of Iron, else sim."""
    progress: bool = True
    """Live progress on stderr."""

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.out.exists() and (not self.out.is_dir() or any(self.out.iterdir())):
            raise UserError(f"{self.out} already exists and is not an empty folder; choose a new one")
        if self.seconds is not None and not 0 < self.seconds <= 7 * 24 * 3600:
            raise UserError(f"--seconds must be positive (and at most a week), not {self.seconds}")
        if self.game_log is not None and self.game_log.expanduser().is_dir():
            raise UserError(f"--game-log {self.game_log} is a folder; give the game.log file")
        self.settings(game="sim")  # validates the rest with the recorder's own messages

    def settings(self, game: str, extra: dict[str, Any] | None = None) -> RecorderSettings:
        from hoi4_arena.sessions.recorder import RecorderSettings

        return RecorderSettings(
            hz=self.hz,
            game_speed=self.game_speed,
            split=self.split,
            codec=self.codec,
            game=game,
            side=self.side,
            after_winner_s=self.after_winner_s,
            extra=extra or {},
        )


def game_of(window_name: str) -> str:
    """Which game a window belongs to, by its title: HOI4's is "Hearts of Iron IV"."""
    return "hoi4" if "hearts of iron" in window_name.casefold() else "sim"


def run_record(config: RecordConfig, worker: Worker | None = None) -> dict[str, Any]:
    """Record a person playing until F12, a signal, `--seconds` or the game's end; the summary.

    `worker`: one opened elsewhere (a station's over TLS, for `--peer`: the person plays on the game
    machine, the session is written here) instead of this machine's X11 game window.
    The summary's `failed` is true when the recording ended by an error (the session is still closed
    and holds what was recorded) or its check failed.
    """
    from hoi4_arena.screen.probe import open_worker

    interrupt: list[str] = []
    with _signals_end(interrupt):
        if worker is None:
            worker = open_worker(
                "x11", window=config.window, display=config.display, game_log=config.game_log
            )
        try:
            return _record(config, worker, lambda: interrupt[0] if interrupt else None)
        finally:
            worker.close()


@contextlib.contextmanager
def _signals_end(interrupt: list[str]) -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP end the recording cleanly (main thread only: Python's rule)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        if not interrupt:
            interrupt.append(_SIGNAL_REASONS[signal.Signals(signum)])

    previous = {signum: signal.signal(signum, handler) for signum in _SIGNAL_REASONS}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _record(config: RecordConfig, worker: Worker, interrupted: Callable[[], str | None]) -> dict[str, Any]:
    from hoi4_arena.sessions.check import check_session
    from hoi4_arena.sessions.recorder import PLANNED_ENDS, Recorder, run_paced
    from hoi4_arena.terminal import stderr

    info = worker.attach()
    window = info.get("window") or {}
    name = str(window.get("name", ""))
    extra = {"worker": {k: info[k] for k in ("game", "display", "pid", "window") if k in info}}
    recorder = Recorder(config.out, config.settings(config.game or game_of(name), extra))
    recorder.start(worker, info)
    width, height = info["size"]
    stderr.print(
        f"recording {name or 'the game'!r} ({width}x{height}) at {config.hz:g} Hz into {config.out}; "
        "F12 or Ctrl+C stops",
        highlight=False,
    )
    error: str | None = None
    try:
        with _Progress(config) as progress:
            reason = run_paced(
                recorder, seconds=config.seconds, interrupted=interrupted, on_tick=progress.update
            )
    except Exception as exc:  # keep what was recorded, say why it stopped
        log.debug("recording failed", exc_info=True)
        reason = f"error: {type(exc).__name__}: {exc}"
    try:
        summary = recorder.close(reason)
    except Exception as exc:
        # The video could not be finished: the folder is what a killed recorder leaves.
        log.debug("closing the session failed", exc_info=True)
        error = f"{type(exc).__name__}: {exc}"
        return {
            "path": str(config.out),
            "failed": True,
            "ended": {"reason": reason},
            "error": f"the session could not be closed ({error}); run `hoi4-arena salvage {config.out}`",
        }
    report = check_session(config.out)
    summary["check"] = {"verdict": report["verdict"], "problems": report["problems"]}
    summary["dropped_total"] = summary["dropped_frames"] + summary["missed_ticks"]
    summary["failed"] = reason not in PLANNED_ENDS or report["verdict"] != "ok"
    colour = "red" if summary["failed"] else "green"
    stderr.print(
        f"[{colour}]{reason}[/]: {summary['frames']} frames, {summary['dropped_total']} dropped, "
        f"{summary['inputs']} inputs, {summary['focus_pauses']} pauses -> {config.out} "
        f"(check: {report['verdict']})",
        highlight=False,
    )
    for problem in report["problems"]:
        stderr.print(f"  {problem}", highlight=False, markup=False)
    return summary


class _Progress:
    """Live status on stderr: elapsed time (against --seconds), frames, dropped frames, inputs, pause."""

    def __init__(self, config: RecordConfig) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from hoi4_arena.terminal import stderr

        self._total = config.seconds
        self._bar = (
            Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[stats]}"),
                console=stderr,
                transient=False,
            )
            if config.progress
            else None
        )
        self._task = None

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
            self._task = self._bar.add_task("recording", total=self._total, stats="")
        return self

    def update(self, recorder: Recorder, elapsed_ns: int) -> None:
        if self._bar is None:
            return
        dropped = recorder.dropped_frames + recorder.missed_ticks
        stats = f"{recorder.frames} frames  {dropped} dropped  {recorder.inputs} inputs"
        self._bar.update(
            self._task,
            completed=elapsed_ns / 1e9 if self._total else None,
            description="[yellow]paused (no focus)" if recorder.paused else "recording",
            stats=stats,
        )

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
