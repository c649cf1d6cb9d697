"""scripts/label_agreement.py: how a DAgger learner answered the expert's acting labels on its own decisions."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

# The marker game lives beside the data tests, which use it too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))

from marker_game import write_marker_session  # noqa: E402

from hoi4_arena.screen.tokens import BUTTON_KINDS, MOVE, NONE  # noqa: E402
from hoi4_arena.sessions.labels import write_labels  # noqa: E402
from hoi4_arena.sessions.reader import SessionReader  # noqa: E402
from project_scripts import load_script  # noqa: E402

agreement = load_script("label_agreement")
DOWN, UP = BUTTON_KINDS["left", "down"], BUTTON_KINDS["left", "up"]


def _tokens(*slots: tuple[int, int, int]) -> np.ndarray:
    tokens = np.zeros((8, 3), np.int64)
    tokens[: len(slots)] = slots
    return tokens


def test_timing_aside_the_same_inputs_and_the_last_move_near() -> None:
    label = _tokens((MOVE, 100, 100), (NONE, 0, 0), (DOWN, 0, 0), (UP, 0, 0))
    later = _tokens((NONE, 0, 0), (MOVE, 104, 97), (NONE, 0, 0), (NONE, 0, 0), (DOWN, 0, 0), (UP, 0, 0))
    assert agreement.timing_free(label, later)
    assert not agreement.timing_free(label, _tokens((MOVE, 120, 100), (DOWN, 0, 0), (UP, 0, 0)))  # 20 off
    assert not agreement.timing_free(label, _tokens((MOVE, 100, 100), (DOWN, 0, 0)))  # no release
    assert not agreement.timing_free(label, _tokens((DOWN, 0, 0), (UP, 0, 0)))  # no move
    assert agreement.timing_free(_tokens((DOWN, 0, 0)), _tokens((NONE, 0, 0), (DOWN, 0, 0)))


def test_a_games_learner_decisions_with_acting_labels_are_counted(tmp_path: Path) -> None:
    run = tmp_path / "run"
    folder = run / "iter-000" / "games" / "dagger-i000-g0000-plains-s0-BLU"
    write_marker_session(folder, frames=60, session_id="g")
    decisions = list(SessionReader(folder).decisions(images=False, arena=False))
    acting = [d for d in decisions if (d.tokens[:, 0] != NONE).any()]
    idle = [d for d in decisions if not (d.tokens[:, 0] != NONE).any()]
    assert len(acting) >= 2 and idle
    n = len(decisions)
    labels = np.zeros((n, 8, 3), np.int64)
    labels[acting[0].index] = acting[0].tokens  # carried out, slot for slot
    labels[acting[1].index] = acting[1].tokens  # the same, but the expert played it: not counted
    click = _tokens((MOVE, 500, 500), (DOWN, 0, 0), (UP, 0, 0))
    labels[idle[0].index] = click  # the learner made no input where the expert would click
    expert = [{"expert": d.index == acting[1].index} for d in decisions]
    frames = [d.frame_index for d in decisions]
    write_labels(folder, frames, labels, np.zeros((n, 8)), None, {}, source="expert", extra=expert)
    assert agreement.game_counts(folder) == {"acting": 2, "idle": 1, "slot_exact": 1, "timing_free": 1}
    (folder.parent / "dagger-i000-g0001-plains-s0-RED").mkdir()  # a game still being played: no labels
    (row,) = agreement.iteration_rows(run)
    assert row == {
        "iteration": "iter-000",
        "games": 1,
        "acting_labels": 2,
        "idle": 0.5,
        "slot_exact": 0.5,
        "timing_free": 0.5,
    }
    assert agreement.main([str(run)]) == 0
    assert agreement.main([str(tmp_path / "missing")]) == 2
