"""The session reader: a session folder back as frames, and as the decisions training learns from.

`SessionReader(folder)` validates on open (schema, game speed, every JSON line, frame count) and
refuses an incomplete session unless asked. `frames()` decodes the video front to back with each frame's
record. `decisions()` cuts the session into 200 ms decisions:

- Anchors are recorded frames on a 200 ms grid of real capture times (t_ns from frames.jsonl, never the
  video's rate): the grid starts at the first frame, each grid point takes the nearest frame (the
  earlier on a tie) within half a frame period (at most 100 ms), and a gap with no such frame (a focus
  pause, dropped frames) restarts the grid at the next frame. At 10 Hz that is every second frame.
- Decision k owns the inputs from its anchor's time up to the next anchor's time, so every input lands
  in exactly one decision: the one whose interval covers it. When the next anchor is more than 200 ms
  away (capture jitter, a dropped frame) the inputs after 200 ms act in the last slot. Across a pause
  (two consecutive frames more than 200 ms plus one frame period apart: focus lost, a stalled
  recorder) the inputs after 200 ms belong to no decision and are counted as uncovered.
- Each decision carries the anchor frame's image, its 8 tokens (`screen.tokens.events_to_tokens`), the
  burst flag, the pointer at the anchor, focus, the game speed, and the ARENA state folded from the
  log lines read up to the anchor frame.

Try: python -m hoi4_arena.sessions.reader runs/s1     # prints the first decisions
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import av
import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import ArenaState, GameLogError, parse_line
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.lattice import clamp_pixel
from hoi4_arena.screen.tokens import DECISION_NS, Tokens, events_to_tokens
from hoi4_arena.sessions.format import (
    ARENA_LOG,
    FRAMES,
    INPUTS,
    VIDEO,
    FrameRecord,
    JsonLines,
    LogRecord,
    load_manifest,
    parse_arena_log,
    parse_frames,
    parse_inputs,
    session_folder,
)
from hoi4_arena.sessions.video import VideoError, decode_frames, frames_by_duration, to_rgb


@dataclass(frozen=True)
class DecisionWindow:
    """Which frame a decision sees and which inputs are its own."""

    index: int
    frame: int
    """Index of the anchor frame."""
    t0_ns: int
    """The anchor frame's capture time: slot 0 of the decision's tokens starts here."""
    end_ns: int
    """Inputs in [t0_ns, end_ns) belong to this decision."""
    events: tuple[InputEvent, ...]


@dataclass(frozen=True)
class Windows:
    windows: list[DecisionWindow]
    uncovered: int
    """Inputs that fall in no decision: before the first frame, in pauses, after the last decision."""


def decision_windows(frames: list[FrameRecord], events: list[InputEvent], hz: float) -> Windows:
    """Anchor the 200 ms decisions on recorded frames and give each its inputs (see the module docstring)."""
    step = DECISION_NS
    if not hz * step >= 1e9:
        raise UserError(f"a {hz} Hz recording cannot be cut into {1e9 / step:g} Hz decisions")
    period = 1e9 / hz
    tolerance = period / 2
    anchors: list[int] = []
    j, origin, k = 0, frames[0].t_ns if frames else 0, 0
    while frames:
        grid = origin + k * step
        while j + 1 < len(frames) and frames[j + 1].t_ns <= grid:
            j += 1
        best = j
        if j + 1 < len(frames) and abs(frames[j + 1].t_ns - grid) < abs(frames[j].t_ns - grid):
            best = j + 1
        if abs(frames[best].t_ns - grid) <= tolerance:
            if not anchors or best > anchors[-1]:
                anchors.append(best)
            k += 1
            continue
        later = next((i for i in range(j, len(frames)) if frames[i].t_ns > grid), None)
        if later is None:
            break
        j, origin, k = later, frames[later].t_ns, 0  # a gap: the grid restarts at the next frame

    # A pause is a gap between consecutive frames of more than a decision plus a frame period (focus
    # lost, the recorder stalled); a dropped frame or jitter is not one.
    pause = step + period
    pauses_before = [0] * len(frames)  # how many pauses lie between frame 0 and frame i
    for i in range(1, len(frames)):
        pauses_before[i] = pauses_before[i - 1] + (frames[i].t_ns - frames[i - 1].t_ns > pause)
    windows: list[DecisionWindow] = []
    e = 0
    covered = 0
    for number, frame in enumerate(anchors):
        t0 = frames[frame].t_ns
        end = t0 + step
        if number + 1 < len(anchors):
            following = anchors[number + 1]
            paused = pauses_before[following] > pauses_before[frame]
            end = min(end, frames[following].t_ns) if paused else frames[following].t_ns
        while e < len(events) and events[e].t_ns < t0:
            e += 1
        first = e
        while e < len(events) and events[e].t_ns < end:
            e += 1
        covered += e - first
        windows.append(DecisionWindow(number, frame, t0, end, tuple(events[first:e])))
    return Windows(windows, len(events) - covered)


@dataclass
class Decision:
    """One 200 ms decision of a recorded session, as training reads it."""

    index: int
    frame_index: int
    t_ns: int
    image: np.ndarray | None
    """(H, W, 3) uint8 RGB: the anchor frame as decoded from the video (None: asked without images)."""
    tokens: np.ndarray
    """(8, 3) int64 (kind, x, y) tokens of this decision's inputs (`screen.tokens`), read-only."""
    burst: bool
    """More than eight tokens were needed: training excludes the decision rather than relabel it."""
    dropped_keys: int
    """Setup-only keys (space, Esc, ...) among the inputs, which are no tokens."""
    events: tuple[InputEvent, ...]
    pointer: tuple[int, int]
    """Pointer on the lattice at the anchor frame."""
    pointer_px: tuple[int, int]
    focus: bool
    game_speed: int
    arena: ArenaState
    """ARENA state from the log lines read up to the anchor frame (shared between decisions until it changes)."""


class SessionReader:
    """Reads one session folder; see the module docstring."""

    def __init__(self, folder: str | os.PathLike, *, allow_incomplete: bool = False) -> None:
        self.path = session_folder(folder)
        self.manifest = load_manifest(self.path)
        self.complete = self.manifest.complete
        if not self.complete and not allow_incomplete:
            raise UserError(
                f"{self.path}: the session is incomplete (its recording was never closed); "
                f"run `hoi4-arena salvage {self.path}` to finish it"
            )
        torn_ok = not self.complete
        self.frame_records: list[FrameRecord] = parse_frames(
            JsonLines.read(self.path / FRAMES).records(allow_torn=torn_ok),
            self.path / FRAMES,
            self.manifest.screen,
        )
        if self.complete and len(self.frame_records) != self.manifest.frames:
            raise UserError(
                f"{self.path / FRAMES}: lists {len(self.frame_records)} frames but the manifest says "
                f"{self.manifest.frames}"
            )
        self.inputs: list[InputEvent] = parse_inputs(
            JsonLines.read(self.path / INPUTS).records(allow_torn=torn_ok), self.path / INPUTS
        )
        self.log_records: list[LogRecord] = parse_arena_log(
            JsonLines.read(self.path / ARENA_LOG).records(allow_torn=torn_ok), self.path / ARENA_LOG
        )
        if (
            self.complete
            and self.log_records
            and self.log_records[-1].frame >= max(len(self.frame_records), 1)
        ):
            raise UserError(
                f"{self.path / ARENA_LOG}: a line read at frame {self.log_records[-1].frame}, "
                f"but the session has {len(self.frame_records)} frames"
            )
        if self.complete and self.frame_records:
            if not (self.path / VIDEO).is_file():
                raise UserError(f"{self.path / VIDEO}: missing")
            # The finished file's duration tells its frame count without decoding; a file cut short
            # inside (and so keeping its old duration) is still caught while decoding.
            in_video = frames_by_duration(self.path / VIDEO, self.manifest.hz)
            if in_video is not None and in_video != len(self.frame_records):
                raise UserError(
                    f"{self.path / VIDEO}: holds {in_video} frames (by its duration) but frames.jsonl lists "
                    f"{len(self.frame_records)}"
                )

    @property
    def size(self) -> tuple[int, int]:
        """Client size (height, width)."""
        return self.manifest.size

    def frames(self) -> Iterator[tuple[FrameRecord, np.ndarray]]:
        """Each frame record with its decoded (H, W, 3) uint8 RGB image, front to back."""
        for record, frame in self._decoded():
            yield record, to_rgb(frame)

    def _decoded(self) -> Iterator[tuple[FrameRecord, av.VideoFrame]]:
        records = self.frame_records
        if not records:
            return
        count = 0
        height, width = self.size
        try:
            for frame in decode_frames(self.path / VIDEO):
                if count >= len(records):
                    if self.complete:
                        raise UserError(
                            f"{self.path / VIDEO}: holds more frames than frames.jsonl lists ({len(records)})"
                        )
                    return
                if (frame.height, frame.width) != (height, width):
                    raise UserError(
                        f"{self.path / VIDEO}: frame {count} is {frame.width}x{frame.height}, "
                        f"not the manifest's {width}x{height}"
                    )
                yield records[count], frame
                count += 1
        except VideoError as error:
            raise UserError(str(error)) from None
        if count < len(records) and self.complete:
            raise UserError(
                f"{self.path / VIDEO}: holds only {count} frames but frames.jsonl lists {len(records)}; "
                "the video is shorter than the frame log"
            )

    def windows(self) -> Windows:
        return decision_windows(self.frame_records, self.inputs, self.manifest.hz)

    def arena_lines_by_decision(self) -> Iterator[list[Any]]:
        """For each decision (`windows()`, in order), the ARENA lines read since the decision before, up to
        its anchor frame, parsed (`gamelog.parse_line`; other lines left out); UserError names a malformed line."""
        logs, next_log = self.log_records, 0
        for window in self.windows().windows:
            lines = []
            while next_log < len(logs) and logs[next_log].frame <= window.frame:
                try:
                    line = parse_line(logs[next_log].line)
                except GameLogError as error:
                    raise UserError(f"{self.path}: arena-log.jsonl line {next_log + 1}: {error}") from None
                next_log += 1
                if line is not None:
                    lines.append(line)
            yield lines

    def _tokens(self, window: DecisionWindow) -> Tokens:
        last = window.t0_ns + DECISION_NS - 1
        height, width = self.size
        events = []
        for event in window.events:
            # Inputs past the 200 ms (only when the next anchor came late) act in the last slot, and a
            # pointer outside the window (a person's mouse may leave it) acts at the nearest edge.
            if event.t_ns > last or not (0 <= event.x < width and 0 <= event.y < height):
                x, y = clamp_pixel(event.x, event.y, self.size)
                event = dataclasses.replace(event, t_ns=min(event.t_ns, last), x=x, y=y)
            events.append(event)
        anchor = self.frame_records[window.frame]
        return events_to_tokens(events, window.t0_ns, self.size, pointer=anchor.pointer_px)

    def token_summary(self) -> dict[str, int]:
        """Decisions, bursts, dropped setup keys and uncovered inputs, without decoding the video."""
        windows = self.windows()
        bursts = dropped = 0
        for window in windows.windows:
            tokens = self._tokens(window)
            bursts += int(tokens.burst)
            dropped += tokens.dropped
        return {
            "decisions": len(windows.windows),
            "bursts": bursts,
            "dropped_keys": dropped,
            "uncovered_inputs": windows.uncovered,
        }

    def decisions(self, images: bool = True, arena: bool = True) -> Iterator[Decision]:
        """The session's decisions in order, each with its anchor frame decoded from the video.

        `images=False` decodes nothing: every decision's `image` is None (a reader of the views stored
        at capture time needs only the rest). `arena=False` still checks every log line but gives each
        decision an empty `arena` (copying the state as it changes costs as much as reading stored views).
        """
        windows = self.windows().windows
        by_frame = {window.frame: window for window in windows}
        state, snapshot = ArenaState(), ArenaState()
        logs, next_log, changed = self.log_records, 0, False
        frames = self._decoded() if images else ((record, None) for record in self.frame_records)
        for record, frame in frames:
            while next_log < len(logs) and logs[next_log].frame <= record.index:
                try:
                    parsed = parse_line(logs[next_log].line)
                    if parsed is not None:
                        state.update(parsed)
                        changed = True
                except GameLogError as error:
                    raise UserError(f"{self.path / ARENA_LOG}: line {next_log + 1}: {error}") from None
                next_log += 1
            window = by_frame.get(record.index)
            if window is None:
                continue
            if changed and arena:
                snapshot, changed = copy.deepcopy(state), False
            tokens = self._tokens(window)
            yield Decision(
                index=window.index,
                frame_index=record.index,
                t_ns=record.t_ns,
                image=None if frame is None else to_rgb(frame),  # only anchors pay for the conversion
                tokens=tokens.slots,
                burst=bool(tokens.burst),
                dropped_keys=int(tokens.dropped),
                events=window.events,
                pointer=record.pointer,
                pointer_px=record.pointer_px,
                focus=record.focus,
                game_speed=self.manifest.game_speed,
                arena=snapshot,
            )


if __name__ == "__main__":
    try:
        for decision in SessionReader(sys.argv[1]).decisions():
            print(
                decision.index, decision.frame_index, decision.t_ns, decision.tokens.tolist(), decision.burst
            )
            if decision.index >= 9:
                break
    except UserError as error:
        sys.exit(f"error: {error}")
