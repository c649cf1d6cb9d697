"""`hoi4-arena train-ppo` through the command line: a tiny run, its resume, bad input as one message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoi4_arena.cli import app

runner = CliRunner()
TINY = "width=8,summary_dim=16,cell_dim=16,fovea_dim=16,hidden=32,head_dim=32,position_dim=8"


def _run(*args: str):
    return runner.invoke(app, ["train-ppo", *args], catch_exceptions=False)


@pytest.mark.slow
def test_a_tiny_run_and_its_resume(tmp_path: Path) -> None:
    out = tmp_path / "ppo"
    common = ["--policy", TINY, "--games", "2", "--workers", "0", "--steps", "8", "--window", "4"]
    common += ["--max-days", "3", "--reward", "setup=0.1,provinces=0.05", "--no-progress"]
    result = _run(str(out), "--updates", "1", *common)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["updates"] == 1 and summary["decisions"] == 16
    assert (out / "last.pt").is_file() and (out / "progress.pt").is_file() and (out / "tb").is_dir()
    assert json.loads((out / "config.json").read_text())["train"]["reward"] == {
        "setup": 0.1,
        "provinces": 0.05,
    }

    result = _run(str(out), "--resume", "--updates", "2")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["updates"] == 2

    result = runner.invoke(app, ["train-ppo", str(out), "--resume", "--lr", "0.5"])
    assert result.exit_code != 0 and "--lr" in str(result.exception or result.output)


def test_unknown_reward_term_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["train-ppo", str(tmp_path / "x"), "--reward", "gold=1"])
    assert result.exit_code != 0
    assert "unknown reward term 'gold'" in str(result.exception)
    assert not (tmp_path / "x").exists()


def test_arena_ranges_pass_the_guard_below_the_benchmark_and_are_refused_on_it(tmp_path: Path) -> None:
    from hoi4_arena.errors import UserError
    from hoi4_arena.rl.ppo_config import PPOConfig

    assert (
        PPOConfig(out=str(tmp_path / "a"), arena=("plains:0-999", "passes:0-999")).arena[0] == "plains:0-999"
    )
    for arena, message in (
        ("plains:0-1000", "--arena plains:0-1000 reaches the benchmark's maps"),
        ("river:0-3", "--arena river:0-3 reaches the benchmark's maps"),
        ("plains:5-2", "map 'plains:5-2': the range 5-2 runs backwards"),
        ("plains:a-b", "map 'plains:a-b': after 'plains:' comes a map seed"),
        ("moon:1-2", "--arena takes presets"),
    ):
        result = runner.invoke(app, ["train-ppo", str(tmp_path / "x"), "--arena", arena])
        assert result.exit_code != 0 and isinstance(result.exception, UserError), arena
        assert message in str(result.exception) and "\n" not in str(result.exception), arena
    assert not (tmp_path / "x").exists()
