"""scripts/held_share.py: what a DAgger learner leaves held down, counted from its games."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

# The marker game lives beside the data tests, which use it too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))

from marker_game import VK_A, write_marker_session  # noqa: E402

from hoi4_arena.screen.tokens import KEY_KINDS  # noqa: E402
from hoi4_arena.sessions.labels import write_labels  # noqa: E402
from hoi4_arena.sessions.reader import SessionReader  # noqa: E402
from project_scripts import load_script  # noqa: E402


def test_held_decisions_their_longest_run_and_release_labels_are_counted(tmp_path: Path) -> None:
    held_share = load_script("held_share")
    folder = tmp_path / "run" / "iter-000" / "games" / "dagger-i000-g0000-plains-s0-BLU"
    game = write_marker_session(folder, frames=60, holds=3, session_id="g")
    decisions = list(SessionReader(folder).decisions(images=False, arena=False))
    n = len(decisions)
    # The expert played the first held decision (not counted); the learner the rest, and one of the
    # two others is labelled with key A's release.
    first, second, third = (d + 1 for d in game.holds)
    labels = np.zeros((n, 8, 3), np.int64)
    labels[second, 0] = (KEY_KINDS[VK_A, "up"], 0, 0)
    labels[third, 0] = (KEY_KINDS[VK_A, "down"], 0, 0)
    expert = [{"expert": d.index == first} for d in decisions]
    frames = [d.frame_index for d in decisions]
    write_labels(folder, frames, labels, np.zeros((n, 8)), None, {}, source="expert", extra=expert)
    assert held_share.game_counts(folder) == {
        "learner": n - 1,
        "holding": 2,
        "longest": 1,
        "releases": 1,
        "learner_presses": 1,  # the press of key A, left pressed at the decision's end
        "learner_left": 1,
        "expert_presses": 0,
        "expert_left": 0,
    }
    (folder.parent / "dagger-i000-g0001-plains-s0-RED").mkdir()  # a game still being played: no labels
    (row,) = held_share.iteration_rows(tmp_path / "run")
    assert row == {
        "iteration": "iter-000",
        "games": 1,
        "unlabelled": 1,
        "learner_decisions": n - 1,
        "holding": round(2 / (n - 1), 4),
        "longest": 1,
        "labels_release": 0.5,
        "learner_press_left": 1.0,
        "expert_press_left": 0.0,
    }
    assert held_share.main([str(tmp_path / "missing")]) == 2
