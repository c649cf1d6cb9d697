"""train-bc trains the same weights whether its data are held raw, held compressed or streamed."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from hoi4_arena.data.loader import DataSettings
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.training.bc import train_bc
from hoi4_arena.training.bc_config import BCConfig
from tiny import TINY


@pytest.mark.parametrize("workers", [0, 2])
def test_held_compressed_trains_the_weights_of_held_raw_and_of_streamed(
    recorded_games: Path, tmp_path: Path, workers: int, caplog: pytest.LogCaptureFixture
) -> None:
    found = find_sessions(recorded_games, ("scripted",))
    everything = found.train + found.val
    # Windows of 4 decisions, 212,736 bytes of views each on the cpu layout.
    raw = sum(len(DataSettings(window=4).spans(s)) for s in everything) * 4 * 212_736
    settings = dict(
        data=str(recorded_games),
        policy=TINY,
        window=4,
        batch=4,
        workers=workers,
        threads=1,
        chunk=0,
        shuffle_windows=16,
        save_every=3600.0,
        epochs=1,
        max_steps=4,
        sources=("scripted",),
    )
    runs = {"raw": 1.0, "compressed": raw / 3 / 2**30}
    if not workers:  # (streamed and held give the same batches with workers too: tests/data)
        runs["streamed"] = 0.0
    weights = {}
    for name, hold_gb in runs.items():
        caplog.clear()
        with caplog.at_level(logging.INFO):
            summary = train_bc(BCConfig(out=str(tmp_path / name), hold_gb=hold_gb, **settings))
        assert summary["steps"] == 4
        assert ("holding them compressed" in caplog.text) == (name == "compressed"), name
        weights[name] = load_checkpoint(tmp_path / name / "last.pt").policy.state_dict()
    for name in list(runs)[1:]:
        assert all(torch.equal(weights["raw"][k], weights[name][k]) for k in weights["raw"]), name
