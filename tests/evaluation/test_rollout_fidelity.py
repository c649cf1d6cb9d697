"""scripts/rollout_fidelity.py, plan_worth.py and pair_results.py: rollouts against screen games, other plans, pairs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hoi4_arena.sim.ai import AIConfig, GameAI
from hoi4_arena.sim.headless import arena_of
from hoi4_arena.sim.world import World
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


@pytest.fixture(scope="module")
def scripted_games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two scripted games of 30 days on plains:3 (one seed, both sides): their results file."""
    out = tmp_path_factory.mktemp("games")
    hoi4_arena = Path(sys.executable).with_name("hoi4-arena")
    record = [str(hoi4_arena), "record-ai", str(out), "--player", "scripted", "--arena", "plains:3"]
    subprocess.run(
        [*record, "--games", "2", "--max-days", "30", "--no-record"], check=True, capture_output=True
    )
    return out / "results.jsonl"


def test_the_script_rolls_out_recorded_games_against_the_screen_and_a_stand_in(
    scripted_games: Path, tmp_path: Path
) -> None:
    script = [sys.executable, str(SCRIPTS / "rollout_fidelity.py"), str(scripted_games)]
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


def test_plan_worth_plays_each_family_from_the_games_starts(scripted_games: Path) -> None:
    worth = load_script("plan_worth")
    assert worth.parse_plan("hold") == "hold"
    plan = worth.parse_plan("ai:1:3")
    assert (plan.config.strength, plan.config.armies, plan.every) == (1.0, 3, None)
    assert worth.parse_plan("ai:0.5:2:72").every == 72
    assert worth.parse_plan("scripted@3") == worth.ScriptedAt(3)
    for bad in ("ai:2:1", "ai:1", "ai:x:1", "search", "ai:1:2:0", "ai:1:2:3:4", "scripted@0", "scripted@x"):
        with pytest.raises(ValueError):
            worth.parse_plan(bad)
    script = [sys.executable, str(SCRIPTS / "plan_worth.py"), str(scripted_games), "--max-days", "30"]
    plans = ["--k", "2", "--plans", "scripted", "hold", "ai:1:2:48", "--choose"]
    done = subprocess.run([*script, *plans], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("2 games, 2 rollouts a game and plan")
    assert [line.split()[0] for line in lines[1:4]] == ["scripted", "hold", "ai:1:2:48"]
    assert "against scripted" not in lines[1] and all("against scripted" in line for line in lines[2:4])
    # The chosen family of each game is named, two games in all.
    assert lines[4].startswith("the best family a game (") and "on 2 fresh seeds against scripted" in lines[4]
    picked = lines[4].split("(")[1].split(")")[0].split(", ")
    assert sum(int(part.split()[1]) for part in picked) == 2
    # The same seeds give the same values: a second run prints the same.
    assert subprocess.run([*script, *plans], capture_output=True, text=True).stdout == done.stdout
    # At the benchmark's own speed the strategy's pace is the scripted family's: the same values.
    paced = subprocess.run(
        [*script, "--k", "2", "--plans", "scripted", "scripted@5"], capture_output=True, text=True
    )
    assert paced.returncode == 0, paced.stderr
    assert "scripted@5   mean win value" in paced.stdout and "against scripted +0.000" in paced.stdout
    refused = subprocess.run([*script, "--plans", "ai:5:1"], capture_output=True, text=True)
    assert refused.returncode != 0 and len(refused.stderr.splitlines()) == 1, refused.stderr


def test_a_paced_ai_looks_at_the_map_every_so_many_hours() -> None:
    worth = load_script("plan_worth")

    def looks(ai: GameAI) -> list[int]:
        world = World(arena_of("plains:3"), 0)
        world.declare_war("BLU")
        seen = []
        for _ in range(200):
            before = ai.next_hour
            ai.update(world)
            if ai.next_hour != before:
                seen.append(world.hour)
            world.step(1)
        return seen

    assert looks(worth.PacedAI("BLU", AIConfig(strength=1.0), every=72)) == [0, 72, 144]
    assert looks(GameAI("BLU", AIConfig(strength=1.0)))[:4] == [0, 24, 48, 72]


def test_pair_results_pairs_two_results_files_by_seed_and_side(scripted_games: Path, tmp_path: Path) -> None:
    script = [sys.executable, str(SCRIPTS / "pair_results.py")]
    same = [str(scripted_games), str(scripted_games), "--pairs", "1", "--seed", "0", "--names", "x,y"]
    done = subprocess.run([*script, *same], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("x vs y: 2 paired games of 2")
    assert "difference +0.0%" in done.stdout and "exact McNemar p = 1" in done.stdout
    # A plan of more seeds than were played says so.
    more = subprocess.run([*script, *same[:2], "--pairs", "2", "--seed", "0"], capture_output=True, text=True)
    assert "INCOMPLETE" in more.stdout
    for bad in (["--names", "x"], ["--pairs", "0"]):
        refused = subprocess.run([*script, *same[:6], *bad], capture_output=True, text=True)
        assert refused.returncode != 0 and len(refused.stderr.splitlines()) == 1, refused.stderr
    missing = subprocess.run(
        [*script, str(tmp_path / "no.jsonl"), *same[1:6]], capture_output=True, text=True
    )
    assert missing.returncode != 0 and missing.stderr.strip().endswith("no such results file")
