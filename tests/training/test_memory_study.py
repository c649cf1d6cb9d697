"""train-memory on a tiny cache: every memory trains and reports, the same seed gives the same report, carry
and burn-in walk games as documented, a stopped run resumes exactly, and bad input is one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from test_features import SRC, perturbed, tiny_checkpoint, with_arena_logs
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.models import memory_cells
from hoi4_arena.training.features import LAYOUT, cache_features, open_cache
from hoi4_arena.training.memory_study import StudyModel, gather, split_sessions, train_memory, walk
from hoi4_arena.training.probes import FACTS
from hoi4_arena.training.research_config import MEMORY_KINDS, FeaturesConfig, MemoryStudyConfig

runner = CliRunner()
FAST = dict(parameters=20_000, window=8, burn_in=2, steps=4, batch=2, probe_decisions=60, save_every=2)
VOLATILE = ("seconds", "model", "features")  # where and how long: not what the run computed


@pytest.fixture(scope="module")
def cache(marker_sessions: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache of the marker game (one training game, the same game held out) with ARENA facts."""
    root = tmp_path_factory.mktemp("memory-study")
    data = with_arena_logs(Path(shutil.copytree(marker_sessions, root / "data")))
    checkpoint = tiny_checkpoint(root / "policy.pt")
    return Path(cache_features(FeaturesConfig(str(data), str(checkpoint), str(root / "features")))["out"])


def run(cache: Path, out: Path, **changes) -> dict:
    return train_memory(MemoryStudyConfig(str(cache), str(out), **{**FAST, **changes}))


def stable(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in VOLATILE}


def test_the_configs_memory_kinds_are_the_cells() -> None:
    assert MEMORY_KINDS == memory_cells.MEMORY_KINDS


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_each_memory_trains_on_a_tiny_cache_and_reports(cache: Path, tmp_path: Path, kind: str) -> None:
    report = run(cache, tmp_path / kind, memory=kind)
    assert json.loads((tmp_path / kind / "report.json").read_text()) == json.loads(json.dumps(report))
    assert report["memory"] == kind and report["steps"] == 4
    assert abs(report["parameters"]["memory"] - 20_000) / 20_000 < 0.15
    held = open_cache(cache).sessions[1]
    assert held.split == "val"
    assert report["held_out"]["decisions"] == int(np.asarray(held.arrays["trainable"]).sum())
    assert report["held_out"]["sessions"] == 1 and report["held_out"]["held_out_by"] == "split"
    assert np.isfinite(report["held_out"]["loss"]) and 0 <= report["held_out"]["kind_accuracy"] <= 1
    assert report["held_out"]["pointer_distance_median"] is not None
    for of in ("memory", "perception"):
        assert set(report["probes"][of]) == set(FACTS)
        assert report["probes"][of]["army"]["n_test"] == 60
    assert (tmp_path / kind / "memory.pt").is_file()


def test_the_same_seed_gives_the_same_report(cache: Path, tmp_path: Path) -> None:
    first = run(cache, tmp_path / "a", memory="gru")
    second = run(cache, tmp_path / "b", memory="gru")
    assert stable(first) == stable(second)
    other = run(cache, tmp_path / "c", memory="gru", seed=1)
    assert other["held_out"]["loss"] != first["held_out"]["loss"]


def test_held_out_games_are_the_split_or_a_seeded_share_of_the_maps(cache: Path) -> None:
    opened = open_cache(cache)
    config = MemoryStudyConfig(str(cache), "unused")
    assert split_sessions(opened, config) == ([0], [1], "split")
    seeded = MemoryStudyConfig(str(cache), "unused", held_out="seeded", val_share=0.5)
    train, val, how = split_sessions(opened, seeded)
    assert sorted(train + val) == [0, 1] and len(val) == 1 and how == "seeded maps (1)"
    assert split_sessions(opened, seeded) == (train, val, how)
    one_map = replace(opened, sessions=[replace(s, group="plains:0") for s in opened.sessions])
    with pytest.raises(UserError, match="games of 1 map: nothing to hold out"):
        split_sessions(one_map, seeded)


@pytest.mark.parametrize(
    ("kind", "window", "burn_in"), [(kind, 8, 3) for kind in MEMORY_KINDS] + [("gru", 4, 6), ("gru", 8, 0)]
)
def test_carry_walks_whole_games_and_no_carry_starts_each_window_fresh(
    cache: Path, kind: str, window: int, burn_in: int
) -> None:
    opened = open_cache(cache)
    torch.manual_seed(0)
    model = StudyModel(opened, kind, 20_000).eval()
    session = opened.sessions[1]
    n = session.decisions
    whole = gather([session], [(0, 0)], 0, n, torch.device("cpu"))
    with torch.no_grad():
        x, _ = model.inputs(whole.perception, whole.previous, whole.speed, whole.pointer)
        straight, _ = model.memory.run(x, model.memory.initial(1))
    config = MemoryStudyConfig(str(cache), "unused", window=window, burn_in=burn_in)
    _, (carried,) = walk(model, [session], config, torch.device("cpu"))
    np.testing.assert_allclose(carried, straight[0].numpy(), rtol=1e-5, atol=1e-5)

    no_carry = MemoryStudyConfig(str(cache), "unused", window=window, burn_in=burn_in, carry=False)
    _, (fresh,) = walk(model, [session], no_carry, torch.device("cpu"))
    for p in range(0, n, window):
        lo = max(0, p - burn_in)
        with torch.no_grad():
            y, _ = model.memory.run(x[:, lo : p + window], model.memory.initial(1))
        np.testing.assert_allclose(fresh[p : p + window], y[0, p - lo :].numpy(), rtol=1e-5, atol=1e-5)
    if kind != "none":  # a memory's two walks differ (none has no state to carry)
        assert not np.allclose(fresh[window:], carried[window:], atol=1e-3)


def test_a_stopped_run_resumes_exactly(cache: Path, tmp_path: Path) -> None:
    straight = run(cache, tmp_path / "straight", memory="gru")
    config = MemoryStudyConfig(str(cache), str(tmp_path / "stopped"), memory="gru", **FAST)
    stopped = train_memory(config, stop_after=1)
    assert stopped["stopped"] == "stop_after" and stopped["steps"] == 1
    assert not (tmp_path / "stopped" / "report.json").exists()
    with pytest.raises(UserError, match="already holds a train-memory run"):
        train_memory(config)
    with pytest.raises(UserError, match="settings differ from it: lr"):
        train_memory(MemoryStudyConfig(**{**config.to_dict(), "lr": 0.5}), resume=True)
    assert stable(train_memory(config, resume=True)) == stable(straight)
    # On the command line only the options typed count: the stored run's memory and steps go on.
    other = MemoryStudyConfig(str(cache), str(tmp_path / "cli"), **{**FAST, "memory": "none"})
    train_memory(other, stop_after=1)
    result = runner.invoke(app, ["train-memory", str(cache), str(tmp_path / "cli"), "--resume"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "cli" / "report.json").read_text())["memory"] == "none"
    result = runner.invoke(
        app, ["train-memory", str(cache), str(tmp_path / "cli"), "--resume", "--lr", "0.5"]
    )
    assert isinstance(result.exception, UserError) and "differ from it: lr" in str(result.exception)
    (tmp_path / "cli" / "progress.pt").write_bytes(b"junk")
    with pytest.raises(UserError, match="cannot read"):
        train_memory(other, resume=True)


def test_train_memory_refuses_bad_input_in_one_line(cache: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="holds no features cache"):
        run(tmp_path / "none", tmp_path / "out")
    with pytest.raises(UserError, match="nothing to resume"):
        train_memory(MemoryStudyConfig(str(cache), str(tmp_path / "out")), resume=True)
    # A cache of another encoder than the checkpoint given; an incomplete cache.
    layout = json.loads((cache / LAYOUT).read_text())
    other = perturbed(Path(layout["checkpoint"]), tmp_path / "other.pt", "encoder.")
    with pytest.raises(UserError, match="cached from another encoder"):
        run(cache, tmp_path / "out", checkpoint=str(other))
    broken = Path(shutil.copytree(cache, tmp_path / "broken"))
    (broken / LAYOUT).write_text(json.dumps({**layout, "complete": False}))
    with pytest.raises(UserError, match="incomplete"):
        run(broken, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    result = runner.invoke(app, ["train-memory", str(cache), str(tmp_path / "out"), "--memory", "lstm"])
    assert isinstance(result.exception, UserError) and "--memory must be one of" in str(result.exception)
    result = runner.invoke(app, ["train-memory", str(cache), str(tmp_path / "out"), "--window", "0"])
    assert isinstance(result.exception, UserError) and "--window must be" in str(result.exception)
    out = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "train-memory", str(tmp_path / "none"), str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC, "COLUMNS": "300"},
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "holds no features cache" in out.stderr
    assert not (tmp_path / "o").exists()
