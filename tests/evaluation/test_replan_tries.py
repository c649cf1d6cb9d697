"""scripts/replan_tries.py: standing days and tries at a new offensive, read from a session's files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoi4_arena.gamelog import format_line
from project_scripts import load_script

tries_script = load_script("replan_tries")
DAY_NS = 1_000_000_000  # a frame a game day, a second apart


def _army(day: int, plan: list[int], executing: int, tag: str = "BLU") -> str:
    return format_line(
        "army",
        date=f"1936.01.{1 + day:02d}.00",
        h=24 * day,
        tag=tag,
        id=1,
        name="Harlan",
        divisions=[1],
        front="RED",
        plan=plan,
        progress=0.0,
        executing=executing,
    )


def _session(folder: Path, days: list[tuple[list[int], int]], inputs: list[dict], side: str = "BLU") -> Path:
    """A session whose side's army shows day d's (plan, executing) on frame d (at d seconds)."""
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"side": side}))
    (folder / "frames.jsonl").write_text(
        "".join(json.dumps({"index": d, "t_ns": d * DAY_NS}) + "\n" for d in range(len(days)))
    )
    lines = [{"frame": d, "line": _army(d, plan, running, side)} for d, (plan, running) in enumerate(days)]
    lines.insert(1, {"frame": 1, "line": _army(1, [9], 1, "RED")})  # the enemy's army: not the side's
    (folder / "arena-log.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (folder / "inputs.jsonl").write_text("".join(json.dumps(event) + "\n" for event in inputs))
    return folder


def _key(t_s: float) -> dict:
    return {
        "t_ns": round(t_s * 1e9),
        "kind": "key_down",
        "key": tries_script.OFFENSIVE_KEY,
        "source": "policy",
    }


def _right(t_s: float) -> dict:
    return {
        "t_ns": round(t_s * 1e9),
        "kind": "button_down",
        "button": "right",
        "x": 1,
        "y": 1,
        "source": "policy",
    }


def test_tries_count_on_standing_days_only(tmp_path: Path) -> None:
    # The opening's plan drawn on day 0 and executed on 1-2; it runs out on 3-5, a new plan is drawn on 6
    # but executed only on 7, and nothing runs on 8: standing days 3, 4, 5, 6 and 8 (the last day, 9,
    # has no next frame to end it).
    days = [([5], 0), ([5], 1), ([5], 1), ([], 0), ([], 0), ([], 0), ([6], 0), ([6], 1), ([6], 0), ([6], 0)]
    inputs = [
        _key(0.2),
        _right(0.5),  # the opening's try, before the first execution: not counted
        _key(3.5),
        _right(3.8),  # X, then the right button 0.3 s later, on standing day 3: a try
        _key(4.2),  # X, and no right button within 3 s: no try
        _key(7.2),
        _right(7.5),  # on an executing day: not counted
        _key(8.1),
        _right(8.4),  # standing day 8: a try
    ]
    result = tries_script.session_tries(_session(tmp_path / "s", days, inputs))
    assert result == {"standing_days": 5, "tries": 2, "later_offensives": 1}
    folder = tries_script.folder_tries(tmp_path)
    assert folder["games"] == 1 and folder["never_executed"] == 0 and folder["standing_days_a_try"] == 2.5


def test_a_side_that_never_executes_and_bad_folders(tmp_path: Path) -> None:
    _session(tmp_path / "run" / "a", [([], 0), ([3], 0), ([3], 0)], [_key(1.0), _right(1.5)])
    assert tries_script.session_tries(tmp_path / "run" / "a") is None
    folder = tries_script.folder_tries(tmp_path / "run")
    assert folder["never_executed"] == 1 and folder["tries"] == 0 and folder["standing_days_a_try"] is None
    with pytest.raises(SystemExit, match="no recorded sessions"):
        tries_script.folder_tries(tmp_path / "nowhere")
