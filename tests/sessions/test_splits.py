import json
import logging
from pathlib import Path

import pytest
from session_files import frame_times, write_session

from hoi4_arena.errors import UserError
from hoi4_arena.sessions.splits import iter_sessions


@pytest.fixture
def data(tmp_path: Path) -> Path:
    times = frame_times(3, 10.0)
    write_session(tmp_path / "a", times=times, id="a", split="train", source="human")
    write_session(tmp_path / "b", times=times, id="b", split="train", source="scripted")
    write_session(tmp_path / "nested" / "deep" / "c", times=times, id="c", split="val", source="ai")
    write_session(tmp_path / "d", times=times, id="d", split="test", source="human", close=False)
    # A session's insides are never searched: a backup's manifest is not a session.
    (tmp_path / "a" / "salvage-backup").mkdir()
    (tmp_path / "a" / "salvage-backup" / "manifest.json").write_text("{}")
    return tmp_path


def ids(entries) -> list[str]:
    return [entry.id for entry in entries]


def test_sessions_are_found_and_incomplete_ones_skipped_with_a_warning(data: Path, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        found = list(iter_sessions(data))
    assert ids(found) == ["a", "b", "c"]
    assert "skipping incomplete session" in caplog.text and "salvage" in caplog.text


def test_linked_sessions_are_found_once_and_link_loops_end(data: Path, tmp_path_factory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    write_session(elsewhere / "e", times=frame_times(3, 10.0), id="e", split="train", source="human")
    (data / "gathered").mkdir()
    (data / "gathered" / "e").symlink_to(elsewhere / "e", target_is_directory=True)
    (data / "gathered" / "again").symlink_to(data / "gathered", target_is_directory=True)  # a loop
    assert ids(iter_sessions(data)) == ["a", "b", "e", "c"]


def test_manifest_split_and_sources(data: Path) -> None:
    assert ids(iter_sessions(data, split="train")) == ["a", "b"]
    assert ids(iter_sessions(data, split="val")) == ["c"]
    assert ids(iter_sessions(data, split=["train", "val"], sources=["human", "ai"])) == ["a", "c"]


def test_splits_json_overrides_whole_sessions(data: Path, caplog) -> None:
    (data / "splits.json").write_text(json.dumps({"a": "val", "c": "test", "zz": "val"}))
    with caplog.at_level(logging.WARNING):
        entries = {entry.id: entry.split for entry in iter_sessions(data)}
    assert entries == {"a": "val", "b": "train", "c": "test"}
    assert ids(iter_sessions(data, split="val")) == ["a"]
    assert "zz" in caplog.text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "expected an object"),
        ('{"a": "holdout"}', "session 'a' has split 'holdout'"),
        ("{oops", "not valid JSON"),
    ],
)
def test_bad_splits_json(data: Path, text: str, message: str) -> None:
    (data / "splits.json").write_text(text)
    with pytest.raises(UserError, match="splits.json") as info:
        list(iter_sessions(data))
    assert message in str(info.value)


def test_bad_selection(data: Path) -> None:
    with pytest.raises(UserError, match="unknown split dev"):
        list(iter_sessions(data, split="dev"))
    with pytest.raises(UserError, match="unknown source robot"):
        list(iter_sessions(data, sources=["robot"]))
    with pytest.raises(UserError, match="no such data folder"):
        list(iter_sessions(data / "missing"))
