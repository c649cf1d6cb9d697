import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.evaluation.winrate import summarize, win_rate
from hoi4_arena.results import GameResult, append_result, read_results


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_summary_counts_wins_draws_losses_by_group(tmp_path: Path) -> None:
    rows = [
        {"player": "scripted", "side": "BLU", "winner": "BLU", "arena": "plains", "strategy": "deep"},
        {"player": "scripted", "side": "RED", "winner": "RED", "arena": "river", "strategy": "near"},
        {"player": "scripted", "side": "RED", "winner": "BLU", "arena": "plains", "strategy": "deep"},
        {"player": "scripted", "side": "BLU", "winner": None, "arena": "plains", "strategy": "none"},
        {"player": "scripted", "side": "BLU", "winner": "RED", "valid": False, "reason": "desync"},
    ]
    summary = summarize(read_results(_write(tmp_path / "r.jsonl", rows)))["scripted"]
    assert summary["invalid"] == 1
    overall = summary["overall"]["all"]
    assert (overall["games"], overall["wins"], overall["draws"], overall["losses"]) == (4, 2, 1, 1)
    assert summary["side"]["BLU"]["games"] == 2 and summary["side"]["BLU"]["wins"] == 1
    assert summary["side"]["RED"]["wins"] == 1 and summary["side"]["RED"]["losses"] == 1
    assert summary["arena"]["plains"]["games"] == 3
    assert summary["strategy"]["deep"]["wins"] == 1


def test_round_trip_and_outcome_check(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    result = GameResult(player="policy", side="RED", winner="RED", arena="ford", seed=4, extra={"days": 90})
    append_result(path, result)
    (back,) = read_results(path)
    assert back == result and back.outcome == "win" and back.extra == {"days": 90}
    _write(path, [{"side": "BLU", "winner": "RED", "outcome": "win"}])
    with pytest.raises(UserError, match="results.jsonl:1"):
        read_results(path)


def test_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"side": "BLU", "winner": "BLU"}\n{not json\n')
    with pytest.raises(UserError, match="bad.jsonl:2"):
        read_results(path)
    _write(path, [{"side": "GRN", "winner": "BLU"}])
    with pytest.raises(UserError, match="side"):
        read_results(path)
    with pytest.raises(UserError, match="no such results file"):
        read_results(tmp_path / "missing.jsonl")


def test_command_prints_table_json_and_plot(tmp_path: Path) -> None:
    rows = [
        {"player": "scripted", "side": "BLU" if i % 2 else "RED", "winner": "BLU", "arena": "plains"}
        for i in range(10)
    ]
    path = _write(tmp_path / "results.jsonl", rows)
    runner = CliRunner()
    table = runner.invoke(app, ["win-rate", str(path)])
    assert table.exit_code == 0, table.output
    assert "overall" in table.stdout and "side=BLU" in table.stdout
    assert (tmp_path / "win-rate.png").stat().st_size > 1000
    out = runner.invoke(app, ["win-rate", str(path), "--json", "--no-plot"])
    data = json.loads(out.stdout)
    overall = data["players"]["scripted"]["overall"]["all"]
    assert overall["wins"] == 5 and overall["games"] == 10
    # Through the real entry point: a missing file is a one-line message and status 2.
    exe = [sys.executable, "-m", "hoi4_arena.cli", "win-rate", str(tmp_path / "nope.jsonl")]
    bad = subprocess.run(exe, capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_win_rate_needs_games(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(UserError, match="no games"):
        win_rate([empty], None)
