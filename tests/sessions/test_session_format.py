import json
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.sessions.format import (
    SCHEMA_VERSION,
    JsonLines,
    SessionManifest,
    load_manifest,
    parse_frames,
    parse_inputs,
    session_folder,
)


def manifest_dict(**changes) -> dict:
    data = SessionManifest(source="human", game_speed=4, screen=(960, 540), hz=10, id="m1").to_dict()
    data.update(changes)
    return data


def test_manifest_round_trips_through_json() -> None:
    manifest = SessionManifest(
        source="scripted",
        game_speed=5,
        screen=(1920, 1080),
        hz=10,
        split="val",
        arena="river:3",
        players={"BLU": "scripted", "RED": "ai"},
        side="BLU",
        orders=[{"order": "form_army"}],
    )
    again = SessionManifest.from_dict(json.loads(json.dumps(manifest.to_dict())))
    assert again == manifest
    assert again.size == (1080, 1920)
    assert manifest.id and manifest.created and manifest.code_version.startswith("0.")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"game_speed": 7}, "game_speed must be one of 1..5"),
        ({"game_speed": True}, "game_speed must be one of 1..5"),
        ({"source": "robot"}, "source must be one of"),
        ({"split": "dev"}, "split must be one of"),
        ({"screen": [960]}, "screen must be [width, height]"),
        ({"hz": 0}, "hz must be a number"),
        ({"codec": "vp9"}, "codec must be one of"),
        ({"frames": -1}, "frames must be a non-negative integer"),
        ({"players": {"BLU": "cat"}}, "players must map a side"),
        ({"ended": {"why": "x"}}, "ended must be an object with a reason"),
        ({"colour": "blue"}, "unknown fields colour"),
    ],
)
def test_bad_manifest_fields_are_named(changes: dict, message: str) -> None:
    with pytest.raises(UserError, match="manifest.json") as info:
        SessionManifest.from_dict(manifest_dict(**changes), where="x/manifest.json")
    assert message in str(info.value)


def test_missing_game_speed_is_refused_with_what_to_do() -> None:
    data = manifest_dict()
    del data["game_speed"]
    with pytest.raises(UserError, match="no game_speed") as info:
        SessionManifest.from_dict(data)
    assert "--game-speed" in str(info.value)


def test_newer_schema_is_refused_before_anything_else() -> None:
    data = manifest_dict(schema=SCHEMA_VERSION + 1, brand_new_field=1)
    with pytest.raises(UserError, match=f"schema {SCHEMA_VERSION + 1} is newer"):
        SessionManifest.from_dict(data)


def test_folder_that_is_not_a_session(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such folder"):
        session_folder(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        session_folder(tmp_path / "file")
    with pytest.raises(UserError, match="not a session folder"):
        session_folder(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(UserError, match="manifest.json: not valid JSON"):
        load_manifest(tmp_path)


def test_jsonl_torn_tail_and_garbage(tmp_path: Path) -> None:
    path = tmp_path / "inputs.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": 3')
    lines = JsonLines.read(path)
    assert lines.torn == b'{"a": 3'
    assert lines.records(allow_torn=True) == [{"a": 1}, {"a": 2}]
    with pytest.raises(UserError, match=r"inputs.jsonl: line 3 is cut short"):
        lines.records()
    path.write_bytes(b'{"a": 1}\ngarbage\n{"a": 3}\n')
    with pytest.raises(UserError, match=r"inputs.jsonl: line 2 is not valid JSON"):
        JsonLines.read(path).records(allow_torn=True)
    path.write_bytes(b'{"a": 1}\n\xff\xfe\n')
    with pytest.raises(UserError, match=r"line 2 is not UTF-8"):
        JsonLines.read(path).records()
    path.write_bytes(b"")
    assert JsonLines.read(path).records() == []
    with pytest.raises(UserError, match="missing"):
        JsonLines.read(tmp_path / "absent.jsonl")


def test_frame_records_are_validated_line_by_line() -> None:
    good = {"index": 0, "t_ns": 10, "pointer": [0, 1023], "pointer_px": [0, 539], "focus": True}
    assert parse_frames([good], Path("f.jsonl"), (960, 540))[0].pointer == (0, 1023)
    cases = [
        ([good, {**good, "index": 1, "t_ns": 10}], "line 2: capture time 10 does not increase"),
        ([good, {**good, "index": 5, "t_ns": 20}], "line 2: frame index 5 out of order"),
        ([{**good, "pointer": [0, 1024]}], "line 1: pointer must be"),
        ([{**good, "pointer_px": [960, 0]}], "line 1: pointer_px must be"),
        ([{**good, "focus": 1}], "line 1: focus must be"),
        ([{**good, "t_ns": 1.5}], "line 1: t_ns must be an integer"),
        ([{"index": 0}], "line 1: expected an object"),
    ]
    for records, message in cases:
        with pytest.raises(UserError, match="f.jsonl") as info:
            parse_frames(records, Path("f.jsonl"), (960, 540))
        assert message in str(info.value)


def test_input_records_are_input_events_in_time_order() -> None:
    events = parse_inputs([{"t_ns": 5, "kind": "move", "x": 3, "y": 4}], Path("i.jsonl"))
    assert events[0].x == 3
    with pytest.raises(UserError, match="i.jsonl: line 1: unknown event kind"):
        parse_inputs([{"t_ns": 5, "kind": "teleport"}], Path("i.jsonl"))
    with pytest.raises(UserError, match="line 2: event time 4 goes back"):
        parse_inputs([{"t_ns": 5, "kind": "move"}, {"t_ns": 4, "kind": "move"}], Path("i.jsonl"))
    with pytest.raises(UserError, match="line 1: unknown event fields: z"):
        parse_inputs([{"t_ns": 5, "kind": "move", "z": 1}], Path("i.jsonl"))
