"""The ARENA log: one line per game fact, the same schema for the simulator and the HOI4 mod.

A line is `ARENA <kind> key=value ...` with the keys of its kind in schema order. Values never hold
spaces: lists are comma-separated (`-` when empty), province sets are hex bitmasks (bit i-1 is
province i), floats have four decimals, dates are `YYYY.MM.DD.HH` (HOI4's calendar) plus the hour
count `h` since 1936.01.01 00:00. HOI4 prefixes its game.log lines with a timestamp and a source tag,
so the parser looks for `ARENA ` anywhere in a line.

One schema (`SCHEMA`), one formatter (`format_line`), one writer (`GameLogWriter`, appending and
flushing to `<userdir>/logs/game.log`), one parser (`parse_line`), one fold (`ArenaState`: the latest
state per side, what training and tests read; the agent never does), and `template(kind)`, the same
line with `{key}` placeholders for the HOI4 mod's scripts to fill.

Try: python -m hoi4_arena.gamelog <userdir>/logs/game.log    # folds a log and prints the state
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

SCHEMA_VERSION = 1
PLAYER_KINDS = ("ai", "human", "scripted", "policy")

# Value types: how each is written and read back.
INT, FLOAT, TEXT, TAG, INTS, TEXTS, MASK = "int", "float", "text", "tag", "ints", "texts", "mask"

_STAMP = (("date", TEXT), ("h", INT))
SCHEMA: dict[str, tuple[tuple[str, str], ...]] = {
    # the game begins: which arena, which seed, which countries
    "start": (*_STAMP, ("arena", TEXT), ("seed", INT), ("tags", TEXTS), ("version", INT)),
    # who controls a side (written by the harness): ai, human, scripted or policy
    "player": (*_STAMP, ("tag", TAG), ("kind", TEXT)),
    "declare": (*_STAMP, ("attacker", TAG), ("defender", TAG)),
    # daily, per side: divisions (total and per state 1..16 where they stand), strength in division
    # equivalents, casualties (men, cumulative), manpower pool (men), provinces controlled, surrender
    "day": (
        *_STAMP,
        ("tag", TAG),
        ("divisions", INT),
        ("by_state", INTS),
        ("strength", FLOAT),
        ("casualties", INT),
        ("manpower", INT),
        ("controlled", INT),
        ("provinces", MASK),
        ("surrender", FLOAT),
    ),
    # daily, per army: its divisions, its front (enemy tag or -), its offensive plan and progress
    "army": (
        *_STAMP,
        ("tag", TAG),
        ("id", INT),
        ("name", TEXT),
        ("divisions", INTS),
        ("front", TAG),
        ("plan", INTS),
        ("progress", FLOAT),
        ("executing", INT),
    ),
    "control": (*_STAMP, ("province", INT), ("from", TAG), ("to", TAG)),
    "capitulated": (*_STAMP, ("loser", TAG), ("winner", TAG), ("surrender", FLOAT)),
    "draw": (*_STAMP, ("reason", TEXT)),
}


_MARK = re.compile(r"(?:^|[\s:\]])(ARENA)(?:\s|$)")


class GameLogError(ValueError):
    """An ARENA line that does not follow the schema."""


@dataclass(frozen=True)
class ArenaLine:
    """One parsed ARENA line: its kind and its typed fields in schema order."""

    kind: str
    fields: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]


def _format_value(kind: str, key: str, typ: str, value: Any) -> str:
    if typ == INT:
        if isinstance(value, bool) or not isinstance(value, int):
            value = int(value)
        return str(value)
    if typ == FLOAT:
        return f"{float(value):.4f}"
    if typ == MASK:
        if isinstance(value, int):
            return f"{value:x}"
        mask = 0
        for pid in value:
            mask |= 1 << (int(pid) - 1)
        return f"{mask:x}"
    if typ == INTS:
        items = [str(int(v)) for v in value]
        return ",".join(items) if items else "-"
    if typ == TEXTS:
        items = [str(v) for v in value]
        for item in items:
            _check_text(kind, key, item)
        return ",".join(items) if items else "-"
    text = "-" if value is None else str(value)
    _check_text(kind, key, text)
    return text


def _check_text(kind: str, key: str, text: str) -> None:
    if not text or any(c.isspace() or c in "=," for c in text):
        raise GameLogError(
            f"ARENA {kind} {key}: {text!r} must be a non-empty word without spaces, '=' or ','"
        )


def _parse_value(typ: str, text: str) -> Any:
    if typ == INT:
        return int(text)
    if typ == FLOAT:
        return float(text)
    if typ == MASK:
        return int(text, 16)
    if typ == INTS:
        return [] if text == "-" else [int(v) for v in text.split(",")]
    if typ == TEXTS:
        return [] if text == "-" else text.split(",")
    if typ == TAG:
        return None if text == "-" else text
    return text


def format_line(kind: str, /, **fields: Any) -> str:
    """The ARENA line of `kind` with exactly the schema's fields (no newline)."""
    if kind not in SCHEMA:
        raise GameLogError(f"unknown ARENA line kind {kind!r}")
    keys = [k for k, _ in SCHEMA[kind]]
    if set(fields) != set(keys):
        missing, extra = sorted(set(keys) - set(fields)), sorted(set(fields) - set(keys))
        raise GameLogError(f"ARENA {kind}: missing {missing}, unexpected {extra}")
    parts = [f"{k}={_format_value(kind, k, t, fields[k])}" for k, t in SCHEMA[kind]]
    return f"ARENA {kind} " + " ".join(parts)


def parse_line(line: str) -> ArenaLine | None:
    """The ARENA line inside `line` (HOI4 prefixes are skipped), or None for any other log line."""
    match = _MARK.search(line)
    if match is None:
        return None
    words = line[match.start(1) :].split()
    if len(words) < 2:
        raise GameLogError(f"ARENA line without a kind: {line.strip()!r}")
    kind = words[1]
    if kind not in SCHEMA:
        raise GameLogError(f"unknown ARENA line kind {kind!r} in {line.strip()!r}")
    raw: dict[str, str] = {}
    for word in words[2:]:
        key, eq, value = word.partition("=")
        if not eq or key in raw:
            raise GameLogError(f"ARENA {kind}: bad or repeated field {word!r}")
        raw[key] = value
    keys = [k for k, _ in SCHEMA[kind]]
    if list(raw) != keys:
        raise GameLogError(f"ARENA {kind}: fields {list(raw)} are not the schema's {keys}")
    try:
        return ArenaLine(kind, {k: _parse_value(t, raw[k]) for k, t in SCHEMA[kind]})
    except ValueError as error:
        raise GameLogError(f"ARENA {kind}: bad value ({error}) in {line.strip()!r}") from None


def template(kind: str) -> str:
    """The line of `kind` with `{key}` placeholders: what the HOI4 mod's scripts print, filled in."""
    return f"ARENA {kind} " + " ".join(f"{k}={{{k}}}" for k, _ in SCHEMA[kind])


class GameLogWriter:
    """Appends ARENA lines to a log file, flushing each, so a reader tailing the file sees whole lines."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO | None = self.path.open("a", encoding="utf-8")

    def write(self, line: str) -> None:
        if self._file is None:
            raise ValueError(f"game log {self.path} is closed")
        self._file.write(line + "\n")
        self._file.flush()

    def emit(self, kind: str, /, **fields: Any) -> str:
        line = format_line(kind, **fields)
        self.write(line)
        return line

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> GameLogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class SideState:
    """The latest known state of one side, folded from its lines."""

    tag: str
    player: str | None = None
    divisions: int = 0
    by_state: list[int] = field(default_factory=list)
    strength: float = 0.0
    casualties: int = 0
    manpower: int = 0
    controlled: int = 0
    provinces: int = 0  # bitmask
    surrender: float = 0.0
    armies: dict[int, dict[str, Any]] = field(default_factory=dict)

    def controls(self, pid: int) -> bool:
        return bool(self.provinces >> (pid - 1) & 1)


@dataclass
class ArenaState:
    """The fold of ARENA lines into the latest state per side (for training and tests)."""

    arena: str | None = None
    seed: int | None = None
    version: int | None = None
    date: str | None = None
    h: int = 0
    attacker: str | None = None
    winner: str | None = None
    loser: str | None = None
    draw: str | None = None
    sides: dict[str, SideState] = field(default_factory=dict)
    control: dict[int, str] = field(default_factory=dict)
    lines: int = 0

    @property
    def at_war(self) -> bool:
        return self.attacker is not None

    @property
    def over(self) -> bool:
        return self.winner is not None or self.draw is not None

    def side(self, tag: str) -> SideState:
        if tag not in self.sides:
            self.sides[tag] = SideState(tag)
        return self.sides[tag]

    def update(self, line: ArenaLine | str) -> ArenaState:
        if isinstance(line, str):
            parsed = parse_line(line)
            if parsed is None:
                return self
            line = parsed
        f = line.fields
        self.lines += 1
        self.date, self.h = f["date"], f["h"]
        if line.kind == "start":
            if f["version"] != SCHEMA_VERSION:
                raise GameLogError(f"ARENA log version {f['version']} is not {SCHEMA_VERSION}")
            self.arena, self.seed, self.version = f["arena"], f["seed"], f["version"]
            for tag in f["tags"]:
                self.side(tag)
        elif line.kind == "player":
            self.side(f["tag"]).player = f["kind"]
        elif line.kind == "declare":
            self.attacker = f["attacker"]
        elif line.kind == "day":
            side = self.side(f["tag"])
            for key in (
                "divisions",
                "by_state",
                "strength",
                "casualties",
                "manpower",
                "controlled",
                "provinces",
                "surrender",
            ):
                setattr(side, key, f[key])
            side.armies = {}  # the day's army lines follow
            mask, pid = f["provinces"], 1
            while mask:
                if mask & 1:
                    self.control[pid] = f["tag"]
                mask >>= 1
                pid += 1
        elif line.kind == "army":
            self.side(f["tag"]).armies[f["id"]] = {
                k: v for k, v in f.items() if k not in ("date", "h", "tag")
            }
        elif line.kind == "control":
            self.control[f["province"]] = f["to"]
        elif line.kind == "capitulated":
            self.winner, self.loser = f["winner"], f["loser"]
            self.side(f["loser"]).surrender = f["surrender"]
        elif line.kind == "draw":
            self.draw = f["reason"]
        return self

    @classmethod
    def from_lines(cls, lines: list[str] | tuple[str, ...]) -> ArenaState:
        state = cls()
        for line in lines:
            state.update(line)
        return state

    def to_dict(self) -> dict[str, Any]:
        import dataclasses

        out = dataclasses.asdict(self)
        for side in out["sides"].values():
            side["provinces"] = f"{side['provinces']:x}"
        out["control"] = {str(k): v for k, v in sorted(self.control.items())}
        return out


SETUP_STEPS = ("army", "front", "offensive", "executed")
"""The steps of a side's setup, in the order a player takes them (see `setup_milestones`)."""


def setup_steps_shown(line: ArenaLine, tag: str) -> dict[str, bool]:
    """Which of SETUP_STEPS one parsed ARENA line shows done by side `tag` (all False unless it is an
    `army` line of `tag`): what `setup_milestones` counts, line by line."""
    if line.kind != "army" or line["tag"] != tag:
        return dict.fromkeys(SETUP_STEPS, False)
    enemy = "RED" if tag == "BLU" else "BLU"
    return {
        "army": True,
        "front": line["front"] == enemy,
        "offensive": bool(line["plan"]),
        "executed": line["executing"] == 1,
    }


def setup_milestones(lines: Iterable[str | ArenaLine], tag: str) -> dict[str, Any]:
    """How far side `tag` got with its setup, read from the daily `army` lines of a game's ARENA log.

    The steps: `army` (the side has an army: an army line of `tag`), `front` (an army's front is the
    enemy), `offensive` (an army holds a non-empty offensive plan) and `executed` (an army executes its
    plan). Each maps to the first game day (`h // 24` of the line) it was seen on, or None; `complete`
    is True when all four were seen. Army lines are written once a game day, so a step taken and undone
    within a day is not seen. `lines` are raw log lines (other lines are skipped) or parsed
    `ArenaLine`s; a log holding several games counts the last one (from its last `start` line). A
    malformed ARENA line raises `GameLogError`, as everywhere else.

    Read by play-policy's results, the quickstart and the scripted player's study.
    """
    if tag not in ("BLU", "RED"):
        raise ValueError(f"tag must be BLU or RED, not {tag!r}")
    days: dict[str, int | None] = dict.fromkeys(SETUP_STEPS)
    for item in lines:
        line = parse_line(item) if isinstance(item, str) else item
        if line is None:
            continue
        if line.kind == "start":
            days = dict.fromkeys(SETUP_STEPS)  # an earlier game in the same log does not count
            continue
        if line.kind != "army" or line["tag"] != tag:
            continue
        day = line["h"] // 24
        for step, happened in setup_steps_shown(line, tag).items():
            if happened and days[step] is None:
                days[step] = day
    return {**days, "complete": all(day is not None for day in days.values())}


def war_summary(lines: Iterable[str | ArenaLine], tag: str) -> dict[str, int]:
    """How side `tag` waged its war after the setup, read from the daily `army` lines (as
    `setup_milestones` reads them): `offensives`, how many offensive plans it drew (a day on which an
    army's plan is non-empty and differs from the plan on that army's previous line: the opening and
    every replan), and `executing_days`, on how many game days an army executed its plan. The scripted
    player draws a new offensive whenever its plan runs out (never replanning won 0 of 84 games:
    players/scripted.py), so these tell a player that stops after its opening from one that keeps
    attacking. `lines` and the last-game rule as in `setup_milestones`."""
    if tag not in ("BLU", "RED"):
        raise ValueError(f"tag must be BLU or RED, not {tag!r}")
    plans: dict[int, tuple[int, ...]] = {}
    offensives, executing = 0, set()
    for item in lines:
        line = parse_line(item) if isinstance(item, str) else item
        if line is None:
            continue
        if line.kind == "start":
            plans, offensives, executing = {}, 0, set()
            continue
        if line.kind != "army" or line["tag"] != tag:
            continue
        plan = tuple(line["plan"])
        if plan and plan != plans.get(line["id"]):
            offensives += 1
        plans[line["id"]] = plan
        if line["executing"] == 1:
            executing.add(line["h"] // 24)
    return {"offensives": offensives, "executing_days": len(executing)}


if __name__ == "__main__":
    import json

    if len(sys.argv) != 2:
        sys.exit("usage: python -m hoi4_arena.gamelog PATH/TO/game.log")
    text = Path(sys.argv[1]).read_text(encoding="utf-8")
    print(json.dumps(ArenaState.from_lines(text.splitlines()).to_dict(), indent=1))
