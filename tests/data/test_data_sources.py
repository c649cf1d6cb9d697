"""Which sessions training reads: sources, splits, incomplete and unusable sessions, clear refusals."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hoi4_arena.data.sources import find_sessions
from hoi4_arena.errors import UserError


def test_sources_and_splits_pick_whole_sessions(make_marker, data_dir: Path) -> None:
    make_marker("people", source="human", frames=20)
    make_marker("script", source="scripted", frames=24)
    make_marker("held", source="scripted", split="val", frames=16)
    make_marker("ai", source="ai", frames=20)
    make_marker("test", source="scripted", split="test", frames=20)
    found = find_sessions(data_dir)
    assert [s.id for s in found.train] == ["people", "script"]
    assert [(s.id, s.decisions) for s in found.val] == [("held", 8)]
    found = find_sessions(data_dir, ("ai", "scripted"))
    assert [s.id for s in found.train] == ["ai", "script"]
    # splits.json overrides the manifest: "script" is held out now, "held" trains.
    (data_dir / "splits.json").write_text(json.dumps({"script": "val", "held": "train"}))
    found = find_sessions(data_dir, ("scripted",))
    assert [s.id for s in found.train] == ["held"] and [s.id for s in found.val] == ["script"]


def test_incomplete_sessions_are_skipped_with_a_warning(make_marker, data_dir, caplog) -> None:
    make_marker("done", frames=20)
    make_marker("killed", frames=20, close=False)
    with caplog.at_level(logging.WARNING):
        found = find_sessions(data_dir, ("scripted",))
    assert [s.id for s in found.train] == ["done"]
    assert any("incomplete" in r.getMessage() and "salvage" in r.getMessage() for r in caplog.records)


def test_no_usable_session_says_what_was_found_and_why(make_marker, data_dir) -> None:
    make_marker("a", source="scripted", frames=20)
    make_marker("b", source="scripted", split="val", frames=20)
    make_marker("c", frames=20, close=False)
    with pytest.raises(UserError) as error:
        find_sessions(data_dir, ("human",))
    message = str(error.value)
    assert "no usable training session" in message and "3 session folder(s)" in message
    assert "1 incomplete" in message and "2 scripted not among the chosen sources (human" in message
    with pytest.raises(UserError, match="fovea"):
        find_sessions(data_dir, ("scripted",), layout="full")  # 180-pixel screens, a 224-pixel fovea
    with pytest.raises(UserError, match="no such data folder"):
        find_sessions(data_dir / "missing")
    with pytest.raises(UserError, match="unknown source"):
        find_sessions(data_dir, ("robots",))
