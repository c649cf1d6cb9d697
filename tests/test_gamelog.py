import pytest

from hoi4_arena.gamelog import (
    SCHEMA,
    ArenaState,
    GameLogError,
    GameLogWriter,
    format_line,
    parse_line,
    template,
)

EXAMPLES = {
    "start": {
        "date": "1936.01.01.00",
        "h": 0,
        "arena": "river",
        "seed": 3,
        "tags": ["BLU", "RED"],
        "version": 1,
    },
    "player": {"date": "1936.01.01.00", "h": 0, "tag": "BLU", "kind": "ai"},
    "declare": {"date": "1936.01.01.00", "h": 0, "attacker": "RED", "defender": "BLU"},
    "day": {
        "date": "1936.01.02.00",
        "h": 24,
        "tag": "BLU",
        "divisions": 24,
        "by_state": [3, 0, 5, 16] + [0] * 12,
        "strength": 23.5,
        "casualties": 1250,
        "manpower": 120000,
        "controlled": 2,
        "provinces": (1 << 0) | (1 << 191),
        "surrender": 0.125,
    },
    "army": {
        "date": "1936.01.02.00",
        "h": 24,
        "tag": "BLU",
        "id": 1,
        "name": "Harlan",
        "divisions": [1, 2, 3],
        "front": "RED",
        "plan": [],
        "progress": 0.0,
        "executing": 0,
    },
    "control": {"date": "1936.01.02.05", "h": 29, "province": 192, "from": "RED", "to": "BLU"},
    "capitulated": {"date": "1936.03.01.11", "h": 1427, "loser": "RED", "winner": "BLU", "surrender": 0.8},
    "draw": {"date": "1936.07.19.00", "h": 4800, "reason": "timeout"},
}


def test_examples_cover_the_schema() -> None:
    assert set(EXAMPLES) == set(SCHEMA)


@pytest.mark.parametrize("kind", sorted(SCHEMA))
def test_lines_round_trip_through_the_parser(kind: str) -> None:
    line = format_line(kind, **EXAMPLES[kind])
    assert " " not in line.split(" ", 2)[2].replace(" ", "")
    parsed = parse_line(line)
    assert parsed is not None and parsed.kind == kind
    assert format_line(kind, **parsed.fields) == line  # byte for byte
    for key, value in EXAMPLES[kind].items():
        assert parsed[key] == pytest.approx(value)


def test_parser_skips_other_lines_and_hoi4_prefixes() -> None:
    assert parse_line("[12:00:01][game.cpp:42]: Loading map") is None
    line = format_line("control", **EXAMPLES["control"])
    parsed = parse_line(f"[12:00:01][effectbase.cpp:123]: {line}")
    assert parsed is not None and parsed["province"] == 192 and parsed["to"] == "BLU"


@pytest.mark.parametrize(
    "bad",
    [
        "ARENA",
        "ARENA nonsense a=1",
        "ARENA draw date=1936.01.01.00 h=0",
        "ARENA draw date=1936.01.01.00 h=zero reason=timeout",
        "ARENA draw h=0 date=1936.01.01.00 reason=timeout",
        "ARENA draw date=1936.01.01.00 h=0 reason=timeout extra=1",
        "ARENA draw date=1936.01.01.00 h=0 reason",
    ],
)
def test_malformed_arena_lines_are_refused(bad: str) -> None:
    with pytest.raises(GameLogError):
        parse_line(bad)


def test_formatting_refuses_what_the_schema_does_not_allow() -> None:
    with pytest.raises(GameLogError, match="missing"):
        format_line("draw", date="1936.01.01.00", h=0)
    with pytest.raises(GameLogError, match="spaces"):
        format_line("draw", date="1936.01.01.00", h=0, reason="ran out of time")
    with pytest.raises(GameLogError, match="unknown"):
        format_line("victory", date="x", h=0)


def test_writer_appends_whole_lines_and_state_folds_them(tmp_path) -> None:
    path = tmp_path / "logs" / "game.log"
    with GameLogWriter(path) as log:
        for kind in ("start", "player", "declare", "day", "army", "control"):
            log.emit(kind, **EXAMPLES[kind])
    with GameLogWriter(path) as log:  # a second writer appends, never truncates
        log.write("[00:00:00][other]: not ours")
        log.emit("capitulated", **EXAMPLES["capitulated"])
    lines = path.read_text().splitlines()
    assert len(lines) == 8 and lines[0].startswith("ARENA start")
    state = ArenaState.from_lines(lines)
    assert state.arena == "river" and state.seed == 3 and state.attacker == "RED"
    blu = state.sides["BLU"]
    assert (
        blu.player == "ai"
        and blu.divisions == 24
        and blu.controls(1)
        and blu.controls(192)
        and not blu.controls(2)
    )
    assert blu.armies[1]["name"] == "Harlan" and blu.armies[1]["front"] == "RED"
    assert state.control[192] == "BLU" and state.over and state.winner == "BLU" and state.loser == "RED"
    assert state.to_dict()["sides"]["BLU"]["provinces"] == f"{(1 << 191) | 1:x}"


def test_state_checks_the_log_version() -> None:
    line = format_line("start", **{**EXAMPLES["start"], "version": 99})
    with pytest.raises(GameLogError, match="version"):
        ArenaState.from_lines([line])


@pytest.mark.parametrize("kind", sorted(SCHEMA))
def test_template_filled_with_a_lines_values_is_that_line(kind: str) -> None:
    # What the HOI4 mod prints (the template, filled in by its scripts) must be what the writer writes.
    text = template(kind)
    assert text.startswith(f"ARENA {kind} ") and text.count("{") == len(SCHEMA[kind])
    line = format_line(kind, **EXAMPLES[kind])
    values = dict(word.split("=", 1) for word in line.split()[2:])
    assert text.format(**values) == line
