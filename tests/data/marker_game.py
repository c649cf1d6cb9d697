"""A tiny game for the training tests: a marker appears and the demonstrated input clicks on it.

Frames are 320x180 at 10 Hz (decisions are every second frame). A red marker with a white centre
appears on a decision's anchor frame at a seeded random spot; within that decision the player moves the
pointer onto it (slot 1), presses the left button (slot 2) and releases it (slot 3). The marker is gone
two frames later, and the next one comes after one or two idle decisions. With `look_first` the player
moves onto the marker in one decision and clicks in the next (the marker stays two decisions), the way
--look-before-click wants it. The pointer is drawn into every frame (a small white cross with a dark
centre), as recordings draw it. Optional extras exercise the data rules: key presses (for
--drop-keys) and bursts (more than eight inputs in one decision).

It is written with the real `SessionWriter` (ffv1 by default: lossless, so views are exact), so the
tests read it through the same decoder training uses.

Try: .venv/bin/python tests/data/marker_game.py /tmp/marker-session
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hoi4_arena.screen.events import InputEvent
from hoi4_arena.sessions.format import SessionManifest
from hoi4_arena.sessions.writer import SessionWriter

T0 = 5_000_000_000_000  # an arbitrary worker clock start
FRAME_NS = 100_000_000  # 10 Hz
MS = 1_000_000
SIZE = (180, 320)  # (height, width)
MARKER = 5  # half side of the marker square in pixels
VK_A = 0x41


@dataclass
class MarkerGame:
    """What a written session holds, for the tests' expectations."""

    folder: Path
    clicks: dict[int, tuple[int, int]] = field(default_factory=dict)
    """decision index -> marker centre (x, y) in pixels the pointer moves onto in that decision (and
    clicks in it, or in the next one with `look_first`)."""
    keys: list[int] = field(default_factory=list)
    """decisions with an 'a' key press and release."""
    bursts: list[int] = field(default_factory=list)
    """decisions with more than eight inputs."""
    holds: list[int] = field(default_factory=list)
    """decisions that press key 'a' and hold it down: the decision after releases it."""
    look_first: bool = False
    """Whether each click comes one decision after the move onto the marker."""
    decisions: int = 0


def _background() -> np.ndarray:
    height, width = SIZE
    y = np.arange(height, dtype=np.int32)[:, None]
    x = np.arange(width, dtype=np.int32)[None, :]
    frame = np.empty((height, width, 3), np.uint8)
    frame[..., 0] = 30 + x * 40 // width
    frame[..., 1] = 40 + y * 40 // height
    frame[..., 2] = 60
    return frame


def _draw(background: np.ndarray, marker: tuple[int, int] | None, pointer: tuple[int, int]) -> np.ndarray:
    frame = background.copy()
    height, width = SIZE
    if marker is not None:
        mx, my = marker
        frame[my - MARKER : my + MARKER + 1, mx - MARKER : mx + MARKER + 1] = (230, 30, 30)
        frame[my - 1 : my + 2, mx - 1 : mx + 2] = (255, 255, 255)
    px, py = pointer
    for dx, dy in ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1), (-2, 0), (2, 0), (0, -2), (0, 2)):
        x, y = px + dx, py + dy
        if 0 <= x < width and 0 <= y < height:
            frame[y, x] = (250, 250, 250) if (dx, dy) != (0, 0) else (10, 10, 10)
    return frame


def write_marker_session(
    folder: Path,
    *,
    seed: int = 0,
    frames: int = 200,
    source: str = "scripted",
    split: str = "train",
    session_id: str = "",
    keys: int = 0,
    bursts: int = 0,
    holds: int = 0,
    look_first: bool = False,
    codec: str = "ffv1",
    close: bool = True,
    views: tuple[str, ...] = (),
) -> MarkerGame:
    """Write one marker-game session; `keys` and `bursts` add that many of each extra, `holds` that many
    presses of key A held down into the next decision (`MarkerGame.holds`); `views` names the
    layouts whose views are stored beside the video (as a recorder stores them)."""
    rng = np.random.default_rng(seed)
    height, width = SIZE
    decisions = frames // 2
    game = MarkerGame(Path(folder), decisions=decisions, look_first=look_first)
    stay = 2 if look_first else 1  # decisions the marker is on screen
    # Which decisions move onto a marker: one, then one or two idle decisions, and so on.
    d = int(rng.integers(0, 2))
    while d < decisions - stay:
        x = int(rng.integers(MARKER + 2, width - MARKER - 2))
        y = int(rng.integers(MARKER + 2, height - MARKER - 2))
        game.clicks[d] = (x, y)
        d += stay + 1 + int(rng.integers(0, 2))
    busy = {c + k for c in game.clicks for k in range(stay)}
    idle = [d for d in range(decisions - 1) if d not in busy]
    chosen = rng.permutation(idle)[: keys + bursts].tolist()
    game.keys = sorted(chosen[:keys])
    game.bursts = sorted(chosen[keys:])
    taken = set(chosen)
    for d in idle:
        if len(game.holds) < holds and not {d, d + 1} & taken and d + 1 in idle:
            game.holds.append(d)
            taken |= {d, d + 1}
    marker_on = {c + k: game.clicks[c] for c in game.clicks for k in range(stay)}

    events: list[InputEvent] = []
    pointer_path: dict[int, tuple[int, int]] = {}  # frame -> pointer when captured
    pointer = (width // 2, height // 2)
    for d in range(decisions):
        t0 = T0 + 2 * d * FRAME_NS
        pointer_path[2 * d] = pointer
        if d in game.clicks:
            x, y = game.clicks[d]
            events.append(InputEvent(t0 + 30 * MS, "move", x, y, source=source))
            click_at = t0 + (2 * FRAME_NS + 10 * MS if look_first else 60 * MS)
            events += [
                InputEvent(click_at, "button_down", x, y, button="left", source=source),
                InputEvent(click_at + 30 * MS, "button_up", x, y, button="left", source=source),
            ]
            pointer = (x, y)
        elif d in game.keys:
            events += [
                InputEvent(t0 + 10 * MS, "key_down", *pointer, key=VK_A, source=source),
                InputEvent(t0 + 40 * MS, "key_up", *pointer, key=VK_A, source=source),
            ]
        elif d in game.holds:
            events.append(InputEvent(t0 + 120 * MS, "key_down", *pointer, key=VK_A, source=source))
        elif d - 1 in game.holds:
            events.append(InputEvent(t0 + 50 * MS, "key_up", *pointer, key=VK_A, source=source))
        elif d in game.bursts:
            # Five clicks where the pointer is: ten tokens, more than the eight slots hold.
            for i in range(10):
                kind = "button_down" if i % 2 == 0 else "button_up"
                events.append(
                    InputEvent(t0 + (5 + 15 * i) * MS, kind, *pointer, button="left", source=source)
                )
        pointer_path[2 * d + 1] = pointer

    manifest = SessionManifest(
        source=source, game_speed=3, screen=(width, height), hz=10, codec=codec, split=split, id=session_id
    )
    background = _background()
    writer = SessionWriter(folder, manifest, realtime=False, views=views)
    e = 0
    for index in range(frames):
        d = index // 2
        # Shown from the anchor frame of the move on, gone by the frame after the click.
        gone = index % 2 == 1 and (not look_first or d - 1 in game.clicks)
        marker = None if gone else marker_on.get(d)
        t_ns = T0 + index * FRAME_NS
        pointer = pointer_path[index]
        writer.add_frame(_draw(background, marker, pointer), t_ns, pointer, True)
        batch = []
        while e < len(events) and events[e].t_ns < t_ns + FRAME_NS:
            batch.append(events[e])
            e += 1
        writer.add_inputs(batch)
    if close:
        writer.close("test")
    return game


if __name__ == "__main__":
    made = write_marker_session(Path(sys.argv[1]))
    print(f"{made.folder}: {made.decisions} decisions, {len(made.clicks)} clicks")
