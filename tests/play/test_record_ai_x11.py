"""record-ai through the X11 worker: the simulator's window under a private Xvfb, played by the
scripted player from captured pixels and XTest input in real time, recorded as a session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai
from hoi4_arena.sessions.check import check_session

pytestmark = [pytest.mark.x11, pytest.mark.slow]


def test_the_scripted_player_sets_up_and_runs_its_plan_in_the_window(tmp_path: Path) -> None:
    out = tmp_path / "x11"
    config = RecordAIConfig(
        out=out, game="x11", games=1, arena="plains:2", seed=5, max_days=13, progress=False
    )
    summary = run_record_ai(config)
    assert summary["games"] == 1 and summary["invalid"] == 0
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    # The ARENA log of the window's game (read by the harness): the army, its front, an offensive plan,
    # executed -- all done through the window's pixels and XTest.
    assert row["setup"]["complete"], row["setup"]
    assert row["days"] == 13 and row["winner"] is None and row["seen"] == "draw"
    folder = out / row["session"]
    assert check_session(folder)["verdict"] == "ok"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [o["order"] for o in manifest["orders"]][:4] == ["form_army", "front", "offensive", "execute"]
    assert manifest["orders"][2]["target"]["held_by"] == "RED"
