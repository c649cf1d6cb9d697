"""Session files for the session tests: real sessions written with SessionWriter from synthetic frames.

A module of its own, not the folder's conftest, so that tests import it by a name no other folder uses
(`from conftest import ...` finds whichever conftest pytest loaded last when several folders are run)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from killable_recorder import pattern, pointer_at

from hoi4_arena.screen.events import InputEvent
from hoi4_arena.sessions.format import SessionManifest
from hoi4_arena.sessions.writer import SessionWriter

T0 = 1_000_000_000_000  # an arbitrary monotonic start, like a worker clock's


def frame_times(count: int, hz: float, jitter_ns: int = 0, seed: int = 0) -> list[int]:
    """Capture times at `hz` from T0, each moved by up to +-jitter_ns (seeded), strictly increasing."""
    rng = np.random.default_rng(seed)
    period = round(1e9 / hz)
    offsets = rng.integers(-jitter_ns, jitter_ns + 1, size=count) if jitter_ns else np.zeros(count, int)
    return [T0 + i * period + int(o) for i, o in enumerate(offsets)]


def write_session(
    folder: Path,
    *,
    times: list[int],
    size: tuple[int, int] = (180, 320),
    hz: float = 10.0,
    codec: str = "ffv1",
    events: list[InputEvent] = (),
    logs: dict[int, list[str]] | None = None,
    close: bool = True,
    views: tuple[str, ...] = (),
    **manifest_fields,
) -> Path:
    """A session of pattern frames captured at `times`, with `events` added after the frame they follow
    (and the views of `views` layouts stored, as a recorder stores them)."""
    height, width = size
    fields = {"source": "human", "game_speed": 4, "screen": (width, height), "hz": hz, "codec": codec}
    fields.update(manifest_fields)
    writer = SessionWriter(folder, SessionManifest(**fields), realtime=False, views=views)
    pending = sorted(events, key=lambda e: e.t_ns)
    e = 0
    for index, t_ns in enumerate(times):
        assert writer.add_frame(pattern(index, size), t_ns, pointer_at(index, size), True) == index
        next_t = times[index + 1] if index + 1 < len(times) else None
        batch = []
        while e < len(pending) and (next_t is None or pending[e].t_ns < next_t):
            batch.append(pending[e])
            e += 1
        writer.add_inputs(batch)
        if logs and index in logs:
            writer.add_log_lines(logs[index], index)
    if close:
        writer.close("test")
    return folder


def folder_digest(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under `folder` (to prove byte-for-byte restores)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
