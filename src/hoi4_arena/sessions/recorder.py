"""The recorder: a person's play through a worker, stored as a session folder.

Two layers, so that a headless driver (the scripted player's `record-ai`, on the simulator's virtual
clock) reuses the per-frame logic without the realtime glue:

- `Recorder` is the per-frame logic and knows no clock of its own: `start(worker)` opens the session,
  `step()` takes one tick (capture a full frame with pointer and focus, drain the person's input from
  `worker.events()`, tail the game log), `record_frame(capture)` / `add_inputs(events)` are the pieces
  a driver may call itself, and `close(reason)` finishes the session. While the game is out of focus
  the recording pauses: no frames, no inputs kept; the pause goes into the manifest's `focus_pauses`.
  ARENA lines are folded as they arrive, so the manifest names the arena, who declared, who played
  which side and who won, and `step()` says when to stop (F12, the game window gone, a new game in the
  log, `after_winner_s` after the log names a winner).
- `run_paced(recorder, ...)` ticks a recorder at its rate on the worker's clock (`wait_until`: a sleep
  for X11, an advance for the simulator) and counts the ticks it was too late for.
- the `record` command around them (the X11 worker, signals, live progress) is
  `sessions/record_command.py`.

The recorder never arms the worker: it cannot send input, only watch.

Try: hoi4-arena record runs/s1 --seconds 60 --hz 10 --game-speed 4 --window "Hearts of Iron IV"
     (play; F12 or Ctrl+C ends it early), then: hoi4-arena check-session runs/s1
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import ArenaState, GameLogError, parse_line
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.worker import Capture, CaptureRequest, Worker, WorkerError
from hoi4_arena.sessions.format import CODECS, SOURCES, SPLITS

log = logging.getLogger(__name__)

SIDES = ("BLU", "RED")
MIN_HZ = 5.0
"""Decisions are 200 ms: a slower recording cannot be cut into them (the reader refuses it)."""
MAX_HZ = 60.0

# Ends that are a person's choice or the game's, not a failure: the command exits 0 after them.
PLANNED_ENDS = frozenset(
    {"seconds", "f12", "interrupt", "terminated", "hangup", "winner", "draw", "new_game", "window_gone"}
)
_FULL_FRAME = CaptureRequest(views=False, full=True)


@dataclass
class RecorderSettings:
    """What a recorder writes into the session, beyond what it learns from the worker."""

    hz: float = 10.0
    """Capture rate on the worker's clock (5..60; decisions are 200 ms, so at least 5)."""
    game_speed: int = 0
    """The game speed 1..5 the game runs at; required (the same input means other things at other speeds)."""
    source: str = "human"
    """Who makes the inputs: human (the record command), scripted, ai or policy."""
    split: str = "train"
    """train, val or test."""
    codec: str = "x264"
    """x264 (CRF 18, 4:4:4), ffv1 (lossless) or nvenc."""
    game: str = "sim"
    """The game being recorded: sim or hoi4."""
    side: str | None = None
    """The side the recorded player plays (BLU or RED); None: learned from the ARENA `player` lines."""
    after_winner_s: float = 15.0
    """Stop this long after the ARENA log names a winner (or a draw)."""
    realtime: bool = True
    """A live game: a frame the encoder cannot take is dropped (counted), never waited for."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Kept in the manifest's `extra` (worker and window details, notes)."""
    views: tuple[str, ...] = ("cpu",)
    """View layouts whose views of every frame are stored beside the video (training then reads them
    instead of decoding it; `sessions/stored_views.py`); () stores none."""

    def __post_init__(self) -> None:
        if (
            isinstance(self.hz, bool)
            or not isinstance(self.hz, int | float)
            or not MIN_HZ <= self.hz <= MAX_HZ
        ):
            raise UserError(
                f"--hz must lie in {MIN_HZ:g}..{MAX_HZ:g}, not {self.hz!r}: decisions are 200 ms, so a "
                "recording needs at least 5 frames a second"
            )
        if isinstance(self.game_speed, bool) or self.game_speed not in (1, 2, 3, 4, 5):
            raise UserError(
                f"--game-speed must be the game's speed 1..5, not {self.game_speed!r}; it is required "
                "because the same input means different things at different speeds"
            )
        if self.source not in SOURCES:
            raise UserError(f"source must be one of {', '.join(SOURCES)}, not {self.source!r}")
        if self.split not in SPLITS:
            raise UserError(f"--split must be one of {', '.join(SPLITS)}, not {self.split!r}")
        if self.codec not in CODECS:
            raise UserError(f"--codec must be one of {', '.join(CODECS)}, not {self.codec!r}")
        if self.game not in ("sim", "hoi4"):
            raise UserError(f"game must be sim or hoi4, not {self.game!r}")
        if self.side is not None and self.side not in SIDES:
            raise UserError(f"--side must be BLU or RED, not {self.side!r}")
        if not 0 <= self.after_winner_s <= 3600:
            raise UserError(f"--after-winner must lie in 0..3600 seconds, not {self.after_winner_s}")
        self.views = (self.views,) if isinstance(self.views, str) else tuple(self.views)
        for name in self.views:
            ViewLayout.named(name)  # an unknown layout is refused with the known ones

    @property
    def period_ns(self) -> int:
        return round(1e9 / self.hz)


class Recorder:
    """The per-frame logic of a recording (see the module docstring); one producer thread.

    Counters a caller may read at any time: `frames`, `dropped_frames` (the encoder's), `missed_ticks`
    (the pacing loop's), `inputs`, `inputs_discarded`, `paused`, `arena` (the folded ARENA state).
    """

    def __init__(self, folder: str | Path, settings: RecorderSettings) -> None:
        self.folder = Path(folder)
        self.settings = settings
        self.worker: Worker | None = None
        self.writer = None  # a SessionWriter once started
        self.size: tuple[int, int] = (0, 0)
        self.missed_ticks = 0
        self.inputs_discarded = 0
        self.bad_log_lines = 0
        self.arena = ArenaState()
        self._keep_from: int | None = None  # inputs before this time are not the session's
        self._paused_since: int | None = None
        self._paused_ns = 0
        self._last_frame_t: int | None = None
        self._last_input_t: int | None = None
        self._log_offset = 0
        self._pending_log: list[str] = []
        self._over_at: int | None = None
        self._new_game = False
        self._side_warned = False
        self._manifest_arena: dict[str, Any] = {}
        self.summary: dict[str, Any] | None = None

    # --- starting -----------------------------------------------------------------------------------

    def start(self, worker: Worker, info: dict | None = None) -> None:
        """Open the session for `worker`'s game (`info`: its `attach()` reply, asked for when None)."""
        from hoi4_arena.sessions.format import SessionManifest
        from hoi4_arena.sessions.video import VideoConfig
        from hoi4_arena.sessions.writer import SessionWriter

        if self.writer is not None:
            raise RuntimeError(f"{self.folder}: the recorder has already started")
        info = worker.attach() if info is None else info
        width, height = (int(v) for v in info["size"])
        settings = self.settings
        manifest = SessionManifest(
            source=settings.source,
            game_speed=settings.game_speed,
            screen=(width, height),
            hz=settings.hz,
            game=settings.game,
            codec=settings.codec,
            split=settings.split,
            side=settings.side,
            players={settings.side: settings.source} if settings.side else {},
            extra=dict(settings.extra),
        )
        self.writer = SessionWriter(
            self.folder,
            manifest,
            video=VideoConfig(codec=settings.codec),
            realtime=settings.realtime,
            views=settings.views,
        )
        self.worker = worker
        self.size = (height, width)
        try:
            worker.events()  # what the person did before the recording started is not part of it
            lines, self._log_offset = worker.game_log(0)
            self._take_earlier_game(lines)
        except BaseException as error:
            self.writer.close(f"error: {type(error).__name__}: {error}")
            raise

    def _take_earlier_game(self, lines: list[str]) -> None:
        """The log's current game so far (from its last `start` line), unless that game is already over.

        A game log may hold earlier games (the simulator appends); a finished one is not the game being
        recorded, and keeping it would end the recording after `after_winner_s`.
        """
        parsed = list(self._parsed(lines))
        starts = [i for i, (_, line) in enumerate(parsed) if line.kind == "start"]
        current = parsed[starts[-1] :] if starts else parsed
        probe = ArenaState()
        for _, line in current:
            with contextlib.suppress(GameLogError):  # _fold counts it below
                probe.update(line)
        if probe.over:
            log.info("the game log's last game is over; waiting for a new one")
            return
        for text, line in current:
            self._fold(text, line)

    # --- one tick -----------------------------------------------------------------------------------

    def step(self) -> str | None:
        """One tick: a frame (or only a focus check while paused), the person's input, the game log.

        Returns why the recording should end now, or None to go on.
        """
        worker = self._started()
        try:
            state = worker.status()
            if state.get("stopped"):
                if state.get("stop_reason") == "f12":
                    return "f12"
                # Another stop (the game window gone, the input listener lost): a capture tells
                # whether the window is still there.
                worker.capture(_FULL_FRAME)
                return f"error: the worker stopped: {state.get('stop_reason') or 'no reason given'}"
            # While paused, status' focus is enough: no frame is grabbed until the game has it again.
            capture = (
                worker.capture(_FULL_FRAME) if self._paused_since is None or state.get("focus") else None
            )
            now = capture.t_ns if capture is not None else worker.now_ns()
            index = None
            if capture is None or not capture.focus:
                if self._paused_since is None:
                    self._paused_since = now
                    log.info("the game lost focus: recording paused")
            elif capture.size != self.size:
                (h, w), (new_h, new_w) = self.size, capture.size
                return (
                    f"error: the window was resized from {w}x{h} to {new_w}x{new_h}; a session keeps "
                    "one size: start a new recording"
                )
            else:
                if self._paused_since is not None:
                    self._end_pause(capture.t_ns)
                    log.info("the game has focus again: recording resumed")
                index = self.record_frame(capture)
            self.add_inputs(worker.events())
            self._read_log(index)
        except WorkerError as error:
            return "window_gone" if error.code == "window_gone" else f"error: {error}"
        return self._game_end(now)

    def record_frame(self, capture: Capture) -> int | None:
        """Store one focused capture; its index, or None when the encoder dropped it (realtime)."""
        writer = self._writer()
        if capture.frame is None:
            raise ValueError("the recorder needs full frames: capture with CaptureRequest(full=True)")
        # The views a worker computed for this capture are stored as they are when their layout is one
        # the recorder stores; the others are computed from the frame.
        index = writer.add_frame(capture.frame, capture.t_ns, capture.pointer, capture.focus, capture.views)
        if index is None:
            return None
        if self._keep_from is None:
            self._keep_from = capture.t_ns
        self._last_frame_t = capture.t_ns
        if self._pending_log:
            self._flush_log(index)
        return index

    def add_inputs(self, events: Iterable[InputEvent]) -> int:
        """Store the events that belong to the session; returns how many were kept.

        Dropped (and counted in `inputs_discarded`): events before the first frame, events while the
        recording was paused, and any that would go back in time (the input log is in time order).
        """
        writer = self._writer()
        kept = []
        for event in sorted(events, key=lambda e: e.t_ns):
            if (
                self._keep_from is None
                or event.t_ns < self._keep_from
                or (self._paused_since is not None and event.t_ns >= self._paused_since)
                or (self._last_input_t is not None and event.t_ns < self._last_input_t)
            ):
                self.inputs_discarded += 1
                continue
            kept.append(event)
            self._last_input_t = event.t_ns
        return writer.add_inputs(kept)

    def _end_pause(self, t_ns: int) -> None:
        start, self._paused_since = self._paused_since, None
        end = max(int(t_ns), start)
        self._paused_ns += end - start
        self._writer().add_focus_pause(start, end)
        if self._keep_from is not None:
            # The click that brought the focus back (and anything else while paused) is not kept.
            self._keep_from = max(self._keep_from, end)

    # --- the game log -------------------------------------------------------------------------------

    def _read_log(self, index: int | None) -> None:
        lines, self._log_offset = self._started().game_log(self._log_offset)
        for text, line in self._parsed(lines):
            if line.kind == "start" and self.arena.lines:
                # A session is one game: a second start line means the person began another.
                self._new_game = True
                break
            self._fold(text, line)
        if index is not None and self._pending_log:
            self._flush_log(index)

    def _parsed(self, lines: list[str]) -> Iterator[tuple[str, Any]]:
        for text in lines:
            try:
                line = parse_line(text)
            except GameLogError as error:
                # Stored, a malformed line would make every later reader of the session fail.
                self.bad_log_lines += 1
                log.warning("skipping a malformed ARENA line: %s", error)
                continue
            if line is not None:
                yield text, line

    def _fold(self, text: str, line: Any) -> None:
        try:
            self.arena.update(line)
        except GameLogError as error:  # a well-formed line the fold refuses (another log version)
            self.bad_log_lines += 1
            log.warning("skipping an ARENA line: %s", error)
            return
        self._pending_log.append(text)
        if self.arena.over and self._over_at is None:
            self._over_at = self._started().now_ns()
        self._update_arena_fields()

    def _flush_log(self, index: int | None) -> None:
        self._writer().add_log_lines(self._pending_log, index)
        self._pending_log = []

    def _update_arena_fields(self) -> None:
        """Put what the ARENA log says about the game into the manifest (only when it changed)."""
        state = self.arena
        players = {tag: side.player for tag, side in sorted(state.sides.items()) if side.player in SOURCES}
        side = self.settings.side
        if side is None:
            humans = [tag for tag, kind in players.items() if kind == self.settings.source]
            side = humans[0] if len(humans) == 1 else None
        elif players.get(side, self.settings.source) != self.settings.source and not self._side_warned:
            self._side_warned = True
            log.warning("--side %s, but the ARENA log says %s plays it; keeping --side", side, players[side])
        if side is not None:
            players[side] = self.settings.source
        winner = state.winner if state.winner is not None else ("draw" if state.draw is not None else None)
        fields = {"arena": state.arena, "declarer": state.attacker, "players": players, "side": side}
        fields["winner"] = winner
        if fields != self._manifest_arena:
            self._manifest_arena = fields
            self._writer().update_manifest(**fields)

    def _game_end(self, now: int) -> str | None:
        if self._new_game:
            return "new_game"
        if self._over_at is not None and now - self._over_at >= self.settings.after_winner_s * 1e9:
            return "winner" if self.arena.winner is not None else "draw"
        return None

    # --- finishing ----------------------------------------------------------------------------------

    @property
    def frames(self) -> int:
        return 0 if self.writer is None else self.writer.frames

    @property
    def dropped_frames(self) -> int:
        return 0 if self.writer is None else self.writer.dropped_frames

    @property
    def inputs(self) -> int:
        return 0 if self.writer is None else self.writer.inputs

    @property
    def paused(self) -> bool:
        return self._paused_since is not None

    def close(self, reason: str) -> dict[str, Any]:
        """Finish the session: end a pause, keep the last inputs and log lines, write the manifest."""
        if self.summary is not None:
            return self.summary
        writer = self._writer()
        worker = self.worker
        try:
            if self._paused_since is not None:
                self._end_pause(worker.now_ns())
            self._read_log(None)
            late = worker.events()
            # Inputs after the last frame are kept only within one frame period of it (what
            # check-session accepts as inside the session).
            limit = (self._last_frame_t or 0) + self.settings.period_ns
            self.add_inputs(e for e in late if e.t_ns <= limit)
            self.inputs_discarded += sum(e.t_ns > limit for e in late)
        except WorkerError as error:  # the game went away while we closed: keep what we have
            log.warning("could not read the last inputs and log lines: %s", error)
        if self._pending_log and writer.frames:
            self._flush_log(None)
        stats = {
            "missed_ticks": self.missed_ticks,
            "inputs_discarded": self.inputs_discarded,
            "bad_log_lines": self.bad_log_lines,
            "paused_s": round(self._paused_ns / 1e9, 3),
        }
        writer.update_manifest(extra={**writer.manifest.extra, "recorder": stats})
        result = writer.close(reason)
        manifest = writer.manifest
        self.summary = {
            **result,
            "screen": list(manifest.screen),
            "hz": manifest.hz,
            "game_speed": manifest.game_speed,
            "codec": manifest.codec,
            "split": manifest.split,
            **stats,
            "focus_pauses": len(manifest.focus_pauses),
            "arena": manifest.arena,
            "declarer": manifest.declarer,
            "side": manifest.side,
            "players": manifest.players,
            "winner": manifest.winner,
        }
        return self.summary

    def _started(self) -> Worker:
        if self.worker is None:
            raise RuntimeError("the recorder has not started: call start(worker) first")
        return self.worker

    def _writer(self):
        self._started()
        if self.writer.closed:
            raise RuntimeError(f"{self.folder}: the recording is closed")
        return self.writer


# --- pacing -----------------------------------------------------------------------------------------


def run_paced(
    recorder: Recorder,
    *,
    seconds: float | None = None,
    interrupted: Callable[[], str | None] = lambda: None,
    on_tick: Callable[[Recorder, int], None] | None = None,
) -> str:
    """Tick `recorder` at its rate on its worker's clock until something ends the recording; the reason.

    Ticks lie on a fixed grid from the first one; a tick the loop is already late for is skipped and
    counted in `recorder.missed_ticks` (a frame the person never gets back). `interrupted()` is asked
    before every tick (signals); `seconds` counts from the first tick, pauses included. `on_tick` gets
    the recorder and the elapsed nanoseconds after every tick (progress).
    """
    worker = recorder._started()
    period = recorder.settings.period_ns
    start = tick = worker.now_ns()
    limit = None if seconds is None else round(seconds * 1e9)
    while True:
        reason = interrupted()
        if reason is not None:
            return reason
        if limit is not None and tick - start >= limit:
            return "seconds"
        reason = recorder.step()
        if on_tick is not None:
            on_tick(recorder, worker.now_ns() - start)
        if reason is not None:
            return reason
        tick += period
        now = worker.now_ns()
        if now > tick:
            behind = (now - tick) // period + 1
            recorder.missed_ticks += behind
            tick += behind * period
        worker.wait_until(tick)
