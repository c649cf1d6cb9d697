"""After its first offensive, does a player try again? Tries and standing days in recorded games.

    python scripts/replan_tries.py FOLDER [FOLDER ...]

Each FOLDER holds recorded sessions (play-policy's, record-ai's, the benchmark's with --record). For
each session, from the harness's ARENA log (never the player's view) and the inputs it sent:

- standing days: game days after the side's first day of executing a plan on which none of its armies
  executed one (its plan ran out, or it drew one and never executed it);
- tries: how often, on a standing day, it pressed the offensive tool's key (X) and then the right button
  within 3 seconds, as drawing an offensive begins (docs/interface.md);
- offensives after the opening: the plans it drew after its first day of executing (`gamelog.war_summary`'s
  count, less the opening's).

Prints one line per folder: games, games that never executed a plan, standing days, tries, standing days a
try, offensives after the opening a game. The scripted player replans within seconds of its plan running out,
so it stands few days and tries at once; a policy that stands long between rare tries does not miss its
clicks so much as not make them.

Try: .venv/bin/python scripts/replan_tries.py runs/demo/eval/learned runs/demo/eval/scripted
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

from hoi4_arena.gamelog import parse_line
from hoi4_arena.screen.events import KEY_CODES

OFFENSIVE_KEY = KEY_CODES["x"]
TRY_WINDOW_NS = 3_000_000_000
"""From the offensive key to the right button that draws the plan."""


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def session_tries(folder: Path) -> dict[str, Any] | None:
    """One session's standing days, tries and later offensives; None when its side never executed."""
    side = json.loads((folder / "manifest.json").read_text())["side"]
    frame_ns = {frame["index"]: frame["t_ns"] for frame in _jsonl(folder / "frames.jsonl")}
    executing: dict[int, bool] = {}  # game day -> an army of the side executed that day
    first_frame: dict[int, int] = {}  # game day -> the frame of its first army line
    plans: dict[int, tuple[int, ...]] = {}
    drawn: list[int] = []  # the days new plans appeared
    for entry in _jsonl(folder / "arena-log.jsonl"):
        line = parse_line(entry["line"])
        if line is None or line.kind != "army" or line["tag"] != side:
            continue
        day = line["h"] // 24
        first_frame.setdefault(day, entry["frame"])
        executing[day] = executing.get(day, False) or line["executing"] == 1
        plan = tuple(line["plan"])
        if plan and plan != plans.get(line["id"]):
            drawn.append(day)
        plans[line["id"]] = plan
    opening = min((day for day, running in executing.items() if running), default=None)
    if opening is None:
        return None
    standing = [
        (frame_ns[first_frame[day]], frame_ns[first_frame[day + 1]])
        for day in sorted(executing)
        if day > opening and not executing[day] and day + 1 in first_frame
    ]
    events = _jsonl(folder / "inputs.jsonl")
    tries = 0
    for i, event in enumerate(events):
        if event["kind"] != "key_down" or event.get("key") != OFFENSIVE_KEY:
            continue
        if not any(start <= event["t_ns"] < end for start, end in standing):
            continue
        if any(
            later["kind"] == "button_down"
            and later.get("button") == "right"
            and 0 < later["t_ns"] - event["t_ns"] <= TRY_WINDOW_NS
            for later in events[i + 1 :]
            if later["t_ns"] - event["t_ns"] <= TRY_WINDOW_NS
        ):
            tries += 1
    return {
        "standing_days": len(standing),
        "tries": tries,
        "later_offensives": sum(day > opening for day in drawn),
    }


def folder_tries(folder: Path) -> dict[str, Any]:
    """The sums over a folder's sessions (each a subfolder with a manifest.json)."""
    sessions = (
        sorted(p for p in folder.iterdir() if (p / "manifest.json").is_file()) if folder.is_dir() else []
    )
    if not sessions:
        raise SystemExit(f"error: {folder}: no recorded sessions (subfolders with a manifest.json)")
    found = [session_tries(session) for session in sessions]
    played = [entry for entry in found if entry is not None]
    standing = sum(entry["standing_days"] for entry in played)
    tries = sum(entry["tries"] for entry in played)
    return {
        "games": len(sessions),
        "never_executed": len(sessions) - len(played),
        "standing_days": standing,
        "tries": tries,
        "standing_days_a_try": standing / tries if tries else None,
        "later_offensives_a_game": sum(entry["later_offensives"] for entry in played) / len(sessions),
    }


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return
    print(
        "| folder | games | never executed | standing days | tries | standing days a try | offensives after the opening a game |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in argv:
        row = folder_tries(Path(name))
        a_try = "-" if row["standing_days_a_try"] is None else f"{row['standing_days_a_try']:.1f}"
        print(
            f"| {name} | {row['games']} | {row['never_executed']} | {row['standing_days']} | {row['tries']} | "
            f"{a_try} | {row['later_offensives_a_game']:.2f} |"
        )


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main(sys.argv[1:])
