"""scripts/rollout_fidelity.py: how well world rollouts foretell screen games, and the ceiling beside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from project_scripts import SCRIPTS, load_script


def test_foretold_counts_agreement_gap_brier_and_calibration_bins() -> None:
    fidelity = load_script("rollout_fidelity")
    games = [
        ([1.0, 1.0, 0.0], 1.0),  # mean 2/3, majority 1: agrees
        ([0.0, 0.0, 0.5], 0.0),  # mean 1/6, majority 0: agrees
        ([1.0, 0.0], 0.5),  # mean 1/2, a tie goes to the win: disagrees with the draw
        ([1.0, 1.0], 1.0),  # mean 1: the last bin holds 1
    ]
    got = fidelity.foretold(games)
    assert (got.games, got.agree) == (4, 3)
    assert got.gap == pytest.approx((1 / 3 + 1 / 6 + 0 + 0) / 4)
    assert got.brier == pytest.approx((1 / 9 + 1 / 36 + 0 + 0) / 4)
    base = (1.0 + 0.0 + 0.5 + 1.0) / 4
    assert got.base_brier == pytest.approx(sum((base - t) ** 2 for t in (1.0, 0.0, 0.5, 1.0)) / 4)
    assert got.bins[0] == pytest.approx((1, 1 / 6, 0.0))
    assert got.bins[1] == (0, 0.0, 0.0)
    assert got.bins[2] == pytest.approx((2, (1 / 2 + 2 / 3) / 2, 0.75))
    assert got.bins[3] == pytest.approx((1, 1.0, 1.0))
    assert "majority agrees in 3 of 4 (75%)" in got.line("x")
    with pytest.raises(ValueError):
        fidelity.foretold([])


def test_the_script_rolls_out_recorded_games_against_the_screen_and_a_stand_in(tmp_path: Path) -> None:
    out = tmp_path / "games"
    hoi4_arena = Path(sys.executable).with_name("hoi4-arena")
    record = [str(hoi4_arena), "record-ai", str(out), "--player", "scripted", "--arena", "plains:3"]
    subprocess.run(
        [*record, "--games", "2", "--max-days", "30", "--no-record"], check=True, capture_output=True
    )
    script = [sys.executable, str(SCRIPTS / "rollout_fidelity.py"), str(out / "results.jsonl")]
    search = ["--search", "--search-k", "1", "--search-delays", "0", "--search-replans", "2,4"]
    options = ["--k", "2", "--max-days", "30", "--stand-ins", "3", *search]
    done = subprocess.run([*script, *options], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[:2]] == ["plains:3", "plains:3"]
    assert all("stand-in" in line for line in lines[:2])
    assert lines[2].startswith("2 games: screen win rate")
    assert lines[3].startswith("the screen (K = 2): majority agrees in") and " of 2 (" in lines[3]
    assert lines[4].startswith("3 stand-in rollout(s) a game (the ceiling): majority agrees in")
    assert " of 6 (" in lines[4]  # three stand-ins for each of the two games
    # the three kinds, one delay, two replanning periods
    assert lines[5].startswith("the searched opening against") and "search K = 1 of 6 candidates" in lines[5]
    for bad_options in (["--search-replans", "2,x"], ["--stand-ins", "0"], ["--battle-noise", "1.5"]):
        bad = subprocess.run([*script, *bad_options], capture_output=True, text=True)
        assert bad.returncode != 0 and len(bad.stderr.splitlines()) == 1, bad.stderr
    missing = subprocess.run([*script[:2], str(tmp_path / "none.jsonl")], capture_output=True, text=True)
    assert missing.returncode != 0 and missing.stderr.strip().endswith("no such results file")
