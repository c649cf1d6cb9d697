"""play-policy --game x11: the simulator's window under a private Xvfb, driven through the X11 worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
from hoi4_arena.sessions.check import check_session
from hoi4_arena.sessions.reader import SessionReader


@pytest.mark.x11
def test_a_checkpoint_plays_the_simulators_window_for_a_few_decisions(
    tiny_checkpoint: Path, tmp_path: Path
) -> None:
    settings = dict(games=1, size=(360, 640), max_days=5, max_decisions=8, progress=False)
    out = tmp_path / "x11"
    summary = run_play_policy(PlayConfig(checkpoint=str(tiny_checkpoint), out=out, game="x11", **settings))
    row = json.loads((out / "results.jsonl").read_text())
    assert summary["invalid"] == 1
    assert row["valid"] is False and row["reason"].startswith("max_decisions"), row["reason"]
    assert row["decisions"] == 8
    session = out / row["session"]
    assert check_session(session)["verdict"] == "ok"
    reader = SessionReader(session)
    assert reader.manifest.source == "policy" and tuple(reader.manifest.screen) == (640, 360)
    assert reader.manifest.frames >= 8  # a realtime recorder may drop a frame; none are expected here
    assert reader.inputs and all(event.source == "policy" for event in reader.inputs)
    # The window and the headless game are one game: the console's coin, seeded by the game seed, agrees.
    headless = run_play_policy(
        PlayConfig(checkpoint=str(tiny_checkpoint), out=tmp_path / "sim", record=False, **settings)
    )
    assert headless["invalid"] == 1
    assert json.loads((tmp_path / "sim" / "results.jsonl").read_text())["declarer"] == row["declarer"]
