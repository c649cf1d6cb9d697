"""train-bc --rung: each recorded game starts at the rung's moment read from its ARENA log (S1 the war
declared, S2 the side's first army, S3 its army on the front), and no window trains an earlier decision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoi4_arena.data.loader import DataSettings
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import parse_line
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.training.bc import train_bc
from hoi4_arena.training.bc_config import BCConfig
from tiny import TINY


def _first_frame(session: Path, side: str, wanted) -> int:
    for text in (session / "arena-log.jsonl").read_text().splitlines():
        item = json.loads(text)
        line = parse_line(item["line"])
        if line is not None and wanted(line, side):
            return item["frame"]
    raise AssertionError(f"{session}: never")


def _army(line, side):
    return line.kind == "army" and line["tag"] == side


def _front(line, side):
    return _army(line, side) and line["front"] == ("RED" if side == "BLU" else "BLU")


def test_each_game_starts_at_its_rungs_moment(recorded_games: Path) -> None:
    starts = {}
    for rung in ("S0", "S1", "S2", "S3"):
        data = find_sessions(recorded_games, ("scripted",), rung=rung)
        sessions = data.train + data.val
        assert len(sessions) == 4 and not data.skipped  # every 20-day scripted game reaches its front
        starts[rung] = {s.id: s.start for s in sessions}
    assert set(starts["S0"].values()) == {0}
    for session_id in starts["S0"]:
        assert starts["S1"][session_id] <= starts["S2"][session_id] < starts["S3"][session_id]
    # The moment is the first decision whose frame comes at or after the log line that shows the rung.
    data = find_sessions(recorded_games, ("scripted",), rung="S3")
    for source in data.train + data.val:
        folder = Path(source.path)
        side = json.loads((folder / "manifest.json").read_text())["side"]
        frame = _first_frame(folder, side, _front)
        windows = SessionReader(folder).windows().windows
        assert windows[source.start].frame >= frame > windows[source.start - 1].frame
        assert _first_frame(folder, side, _army) <= frame
        spans = DataSettings(window=4).spans(source)
        assert spans and all(span.first >= source.start for span in spans)
        assert len(spans) < len(
            DataSettings(window=4).spans(find_sessions(recorded_games, ("scripted",)).train[0])
        )


def test_train_bc_from_a_rung_learns_only_what_follows_it(recorded_games: Path, tmp_path: Path) -> None:
    settings = dict(
        data=str(recorded_games),
        policy=TINY,
        window=4,
        batch=4,
        workers=0,
        threads=1,
        chunk=0,
        shuffle_windows=16,
        save_every=3600.0,
        max_steps=2,
        sources=("scripted",),
    )
    summary = train_bc(BCConfig(out=str(tmp_path / "s3"), rung="S3", **settings))
    full = train_bc(BCConfig(out=str(tmp_path / "all"), **settings))
    assert summary["steps"] == full["steps"] == 2
    stored = json.loads((tmp_path / "s3" / "config.json").read_text())["train"]
    assert stored["rung"] == "S3"
    with pytest.raises(UserError, match="--rung must be one of S0, S1, S2, S3, not 'S9'"):
        BCConfig(out=str(tmp_path / "bad"), rung="S9", **settings)
    with pytest.raises(UserError, match="--rung must be one of"):
        find_sessions(recorded_games, ("scripted",), rung="S4")
