"""The main job end to end with a tiny budget: record, train for seconds, play, report."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.quickstart import PLAYERS, QuickstartConfig, RunState

pytestmark = pytest.mark.slow

# Three demonstrations, seconds of training, one evaluation seed played from both sides.
TINY = ["--budget-minutes", "2", "--demo-games", "3", "--games", "2", "--max-days", "45", "--seed", "5"]


def _quickstart(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "quickstart", str(out), *TINY, *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_quickstart_end_to_end_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    first = _quickstart(out)
    assert first.returncode == 0, first.stderr[-3000:]
    result = json.loads(first.stdout)

    # The report exists and its numbers are the results files' numbers.
    assert (out / "report.html").stat().st_size > 1000
    assert json.loads((out / "report.json").read_text())["players"] == result["players"]
    for player in PLAYERS:
        rows = [r for r in _rows(out / "eval" / player / "results.jsonl") if r["valid"]]
        record = result["players"][player]
        assert record["games"] == len(rows) == 2  # one seed, played from both sides
        assert record["wins"] == sum(r["outcome"] == "win" for r in rows)
        assert record["draws"] == sum(r["outcome"] == "draw" for r in rows)
        assert record["setup"]["complete"] == sum(bool(r["setup"]["complete"]) for r in rows)
        assert record["win_rate"]["wins"] == record["wins"]
    # Every player met the same seeds from the same sides.
    seeds = {player: result["players"][player]["seeds"] for player in PLAYERS}
    assert seeds["learned"] == seeds["random"] == seeds["scripted"]
    # Training ran and left its checkpoint, curves and logs; the pictures exist.
    assert (out / "bc" / "last.pt").exists() and list((out / "bc" / "tb").iterdir())
    assert result["training"]["summary"]["steps"] >= 1
    for picture in ("training.png", "learned-game.png"):
        assert (out / "report" / picture).stat().st_size > 1000
    assert json.loads((out / "demos" / "splits.json").read_text())

    # Running again resumes: every stage is kept and the report says the same.
    again = _quickstart(out)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "done before" in again.stderr
    assert json.loads(again.stdout)["players"] == result["players"]

    # Other settings in the same folder are refused with a message.
    other = _quickstart(out, "--arena", "river")
    assert other.returncode == 2 and "other settings" in other.stderr and "Traceback" not in other.stderr


def test_bad_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="budget"):
        QuickstartConfig(out=tmp_path / "a", budget_minutes=0.5)
    with pytest.raises(UserError, match="preset"):
        QuickstartConfig(out=tmp_path / "a", arena="atlantis")
    with pytest.raises(UserError, match="val-games"):
        QuickstartConfig(out=tmp_path / "a", demo_games=2, val_games=2)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "something.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty"):
        RunState.open(QuickstartConfig(out=busy))
