"""scripts/dagger_curve.py: a DAgger run's quick benchmark placed by optimizer steps past its start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from project_scripts import load_script

curve = load_script("dagger_curve")

STEPS = 500


def _checkpoint(path: Path, init: Path | None) -> str:
    """A train-bc folder's config.json naming `init`; the checkpoint file itself is never read (steps
    come from the test's own function)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    train = {"init": None if init is None else str(init)}
    (path.parent / "config.json").write_text(json.dumps({"train": train}))
    path.write_bytes(b"")
    return str(path)


def _board(folder: Path, players: dict[str, tuple[str | None, int, int]], days: int = 120) -> None:
    """A presets leaderboard: each player (checkpoint or None, wins, setups) of 20 games."""
    info, rows = {}, []
    for name, (checkpoint, wins, setups) in players.items():
        kind = "checkpoint" if checkpoint else name
        info[name] = {"player": name, "kind": kind, "checkpoint": checkpoint, "sha256": f"sha-{name}"}
        rows.append(
            {"player": name, "valid": 20, "wins": wins, "setup_complete": setups, "offensives": wins / 2}
        )
    folder.mkdir(parents=True, exist_ok=True)
    suites = {"presets": {"players": info, "table": rows}}
    (folder / "leaderboard.json").write_text(json.dumps({"settings": {"max_days": days}, "suites": suites}))


@pytest.fixture
def run(tmp_path: Path) -> Path:
    start = tmp_path / "bc" / "last.pt"
    _checkpoint(start, None)
    run = tmp_path / "dag"
    dag0 = _checkpoint(run / "iter-000" / "bc" / "last.pt", start)
    dag1 = _checkpoint(run / "iter-001" / "bc" / "last.pt", Path(dag0))
    c0 = _checkpoint(tmp_path / "control-0" / "last.pt", start)
    c1 = _checkpoint(tmp_path / "control-1" / "last.pt", Path(c0))
    other = _checkpoint(tmp_path / "elsewhere" / "last.pt", None)
    short = tmp_path / "short"
    short.mkdir()
    (short / "dagger.json").write_text("{}")
    s0 = _checkpoint(short / "iter-000" / "bc" / "last.pt", start)
    (run / "dagger.json").write_text(json.dumps({"settings": {"init": str(start), "max_days": 120}}))
    done = [
        {
            "iteration": i,
            "games": 16,
            "record": {"setup": {"army": 16, "complete": 12 - 4 * i}},
            "expert_share": 0.5 / (i + 1),
            "agree_acting": 0.05,
            "offensives_a_game": 1.0 + i,
            "held_out_pointer": {"pointer_exact": 0.02, "pointer_within_8": 0.1 * i},
        }
        for i in range(2)
    ]
    (run / "progress.json").write_text(json.dumps(done))
    _board(run / "bench", {"d0": (dag0, 2, 12), "d1": (dag1, 3, 14)})
    _board(
        tmp_path / "more",
        {
            "start": (str(start), 1, 10),
            "c0": (c0, 1, 9),
            "c1": (c1, 2, 11),
            "scripted": (None, 8, 20),
            "stranger": (other, 0, 0),
            "s0": (s0, 0, 4),
        },
    )
    return run


def _steps(path: str) -> int:
    return STEPS


def test_steps_follow_the_init_chain_back_to_the_start(run: Path) -> None:
    start = str(run.parent / "bc" / "last.pt")
    assert curve.steps_past(start, start, _steps) == 0
    assert curve.steps_past(str(run / "iter-001" / "bc" / "last.pt"), start, _steps) == 2 * STEPS
    assert curve.steps_past(str(run.parent / "control-1" / "last.pt"), start, _steps) == 2 * STEPS
    assert curve.steps_past(str(run.parent / "elsewhere" / "last.pt"), start, _steps) is None


def test_a_chain_that_loops_ends(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "last.pt", tmp_path / "b" / "last.pt"
    _checkpoint(a, b)
    _checkpoint(b, a)
    assert curve.steps_past(str(a), str(tmp_path / "start.pt"), _steps) is None


def test_series_steps_and_picture(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = curve.points(run, [tmp_path / "more"], _steps)
    by = {r["player"]: r for r in rows}
    assert "stranger" not in by and "left out" in capsys.readouterr().out
    assert (by["d0"]["series"], by["d0"]["steps"]) == ("dagger", STEPS)
    assert (by["d1"]["series"], by["d1"]["steps"]) == ("dagger", 2 * STEPS)
    assert (by["c1"]["series"], by["c1"]["steps"]) == ("control", 2 * STEPS)
    assert (by["start"]["series"], by["start"]["steps"]) == ("start", 0)
    assert by["scripted"]["series"] == "scripted" and "steps" not in by["scripted"]
    assert (by["s0"]["series"], by["s0"]["steps"]) == ("dagger: short", STEPS)
    assert [r["player"] for r in curve.line(rows, "presets", "dagger: short")] == ["start", "s0"]
    dagger_line = curve.line(rows, "presets", "dagger")
    assert [r["player"] for r in dagger_line] == ["start", "d0", "d1"]
    assert "| presets | dagger | 1000 |" in curve.table(rows)
    runs = curve.dagger_runs(rows, run)
    assert list(runs) == ["dagger", "dagger: short"] and runs["dagger: short"] == []
    png = curve.plot(rows, runs, tmp_path / "out" / "curve.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_benchmarks_of_other_lengths_are_refused(run: Path, tmp_path: Path) -> None:
    _board(tmp_path / "long", {"scripted": (None, 8, 20)}, days=365)
    with pytest.raises(SystemExit, match="one benchmark length"):
        curve.points(run, [tmp_path / "long"], _steps)


def test_a_folder_that_is_not_a_run_says_so(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="not a dagger run's settings file"):
        curve.iterations(tmp_path)


def test_two_runs_of_one_folder_name_are_two_series(run: Path, tmp_path: Path) -> None:
    start = tmp_path / "bc" / "last.pt"
    players = {}
    for parent in ("a", "b"):
        other = tmp_path / parent / "run"
        other.mkdir(parents=True)
        (other / "dagger.json").write_text("{}")
        players[f"{parent}0"] = (_checkpoint(other / "iter-000" / "bc" / "last.pt", start), 0, 5)
    _board(tmp_path / "twins", players)
    by = {r["player"]: r for r in curve.points(run, [tmp_path / "twins"], _steps)}
    assert (by["a0"]["series"], by["b0"]["series"]) == ("dagger: a/run", "dagger: b/run")
    assert by["d0"]["series"] == "dagger"
