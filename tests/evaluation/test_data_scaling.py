"""scripts/data_scaling.py: leaderboards' checkpoint players grouped by the demonstrations they trained on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from project_scripts import load_script

scaling = load_script("data_scaling")


def _board(folder: Path, players: dict[str, tuple[str, int, int, int]]) -> Path:
    """A leaderboard.json of both suites: each player (kind, wins, setups, losses) of 20 games."""
    suites = {}
    for suite in ("presets", "river"):
        info, table = {}, []
        for name, (kind, wins, setups, losses) in players.items():
            checkpoint = f"/runs/{name}/last.pt" if kind == "checkpoint" else None
            info[name] = {"player": name, "kind": kind, "checkpoint": checkpoint, "sha256": f"sha-{name}"}
            draws = 20 - wins - losses
            table.append(
                {
                    "player": name,
                    "valid": 20,
                    "wins": wins,
                    "draws": draws,
                    "losses": losses,
                    "setup_complete": setups,
                }
            )
        suites[suite] = {"suite": suite, "players": info, "table": table}
    folder.mkdir(parents=True)
    (folder / "leaderboard.json").write_text(json.dumps({"suites": suites}))
    return folder


ACROSS = "plains:0-999,passes:0-999"
TRAINED = {
    "/runs/a/last.pt": (96, 0, ACROSS, 3000),
    "/runs/b/last.pt": (384, 0, ACROSS, 3000),
    "/runs/c/last.pt": (384, 1, ACROSS, 12000),
    "/runs/q/last.pt": (96, 0, "plains:0", None),
}


def test_policies_grouped_by_demonstrations(tmp_path: Path) -> None:
    first = _board(tmp_path / "one", {"a": ("checkpoint", 3, 14, 16), "scripted": ("scripted", 8, 20, 11)})
    # a is in both folders: counted once, from the first
    second = _board(
        tmp_path / "two",
        {
            "a": ("checkpoint", 19, 20, 0),
            "b": ("checkpoint", 2, 10, 18),
            "c": ("checkpoint", 4, 12, 16),
            "q": ("checkpoint", 0, 9, 19),
        },
    )
    rows = scaling.records([first, second], trained=TRAINED.__getitem__)
    assert len(rows) == 10  # a, scripted, b, c, q on each suite
    # the recipes apart: the same count of demonstrations on other maps is another line
    assert scaling.curves(rows, "presets", "wins") == {
        ACROSS: {96: [0.15], 384: [0.1, 0.2]},
        "plains:0": {96: [0.0]},
    }
    assert scaling.curves(rows, "river", "setups")[ACROSS] == {96: [0.7], 384: [0.5, 0.6]}
    text = scaling.table(rows)
    assert f"| presets | a | 96 | 0 | {ACROSS} | 3000 | 3 / 1 / 16 | 14 of 20 |" in text
    assert "| river | scripted |  |  |  |  | 8 / 1 / 11 | 20 of 20 |" in text
    # the steps curve: a line per recipe and number of demonstrations; a policy without steps left out
    assert scaling.curves(rows, "presets", "wins", "steps") == {
        f"{ACROSS}, 96 demonstrations": {3000: [0.15]},
        f"{ACROSS}, 384 demonstrations": {3000: [0.1], 12000: [0.2]},
    }
    steps = scaling.plot(rows, tmp_path / "pics" / "steps.png", "steps")
    assert steps.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert scaling._short(ACROSS) == "2 presets:0-999" and scaling._short("plains:0") == "plains:0"
    picture = scaling.plot(rows, tmp_path / "pics" / "scaling.png")
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_trained_on_reads_the_training_folder(tmp_path: Path) -> None:
    data = tmp_path / "demos"
    data.mkdir()
    run = tmp_path / "bc"
    run.mkdir()
    (run / "config.json").write_text(
        json.dumps({"train": {"data": str(data), "sources": ["scripted"], "seed": 3}})
    )
    assert scaling.trained_on(str(run / "last.pt")) == (0, 3, "?", None)  # an empty data folder: no sessions
    (data / "record-ai.json").write_text(json.dumps({"settings": {"arena": "plains:0-999"}}))
    assert scaling.trained_on(str(run / "last.pt"))[2] == "plains:0-999"
    # a relative data folder is read from where train-bc ran: the training folder less its `out`
    (run / "config.json").write_text(
        json.dumps({"train": {"data": "demos", "out": "bc", "sources": ["scripted"], "seed": 3}})
    )
    assert scaling.trained_on(str(run / "last.pt")) == (0, 3, "plains:0-999", None)
    # its steps: max_steps of a run from nothing; none for one that continued from a checkpoint
    train = {"data": "demos", "out": "bc", "sources": ["scripted"], "seed": 3, "max_steps": 12000}
    (run / "config.json").write_text(json.dumps({"train": train}))
    assert scaling.trained_on(str(run / "last.pt"))[3] == 12000
    (run / "config.json").write_text(json.dumps({"train": {**train, "init": "runs/x/last.pt"}}))
    assert scaling.trained_on(str(run / "last.pt"))[3] is None
    # the demonstrations' length, where record-ai.json has it, is part of the recipe
    (data / "record-ai.json").write_text(json.dumps({"settings": {"arena": ACROSS, "max_days": 365}}))
    assert scaling.trained_on(str(run / "last.pt"))[2] == f"{ACROSS} (365 days)"
    assert scaling._short(f"{ACROSS} (365 days)") == "2 presets:0-999 (365 days)"
    (run / "config.json").write_text(
        json.dumps({"train": {"data": "gone", "out": "bc", "sources": ["scripted"], "seed": 3}})
    )
    with pytest.raises(SystemExit, match="no such data folder"):
        scaling.trained_on(str(run / "last.pt"))
    with pytest.raises(SystemExit, match="no train-bc config.json"):
        scaling.trained_on(str(tmp_path / "elsewhere" / "last.pt"))
    with pytest.raises(SystemExit, match="not a benchmark's leaderboard"):
        scaling.records([tmp_path])
