"""A training run's folder, checked before anything is read or written (training/run_control.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.training.run_control import open_run


def _never(path: Path):
    raise AssertionError("nothing to load")


@pytest.mark.parametrize("resume", [False, True])
def test_an_output_folder_that_is_a_file_is_refused_first(tmp_path: Path, resume: bool) -> None:
    # train-bc with a file as OUT printed its held-out-data warning before the error: the check that
    # OUT can be a run's folder comes before the data is read.
    taken = tmp_path / "out"
    taken.write_text("a file")
    with pytest.raises(UserError, match="is a file"):
        open_run(taken, resume, "training", ("progress.pt", "last.pt"), _never)
    assert taken.read_text() == "a file"


def test_a_new_or_empty_folder_starts_a_run(tmp_path: Path) -> None:
    assert open_run(tmp_path / "new", False, "training", ("progress.pt",), _never) is None
    assert open_run(tmp_path, False, "training", ("progress.pt",), _never) is None
