"""rung-games: promotion and the adaptive schedule on worked examples; games from a tiny ladder (rows carry
their rung, a re-run resumes, the report counts the rows); bad input refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.play.rung_games import RungGamesConfig, next_rung, plan_game, promoted
from hoi4_arena.results import GameResult, read_results

T, F = True, False


# --- promotion ---------------------------------------------------------------------------------------


def test_promotion_needs_the_wilson_lower_bound_of_the_window_at_the_threshold() -> None:
    # Wilson 95% lower bounds: 10/10 0.722, 9/10 0.596, 8/10 0.490, 7/7 0.646, 6/6 0.610.
    assert promoted([T] * 10, 10, 0.6)
    assert not promoted([T] * 9 + [F], 10, 0.6)  # 90% is not enough over 10 games at 0.6
    assert promoted([T] * 9 + [F], 10, 0.59)
    assert promoted([T] * 8 + [F] * 2, 10, 0.49) and not promoted([T] * 8 + [F] * 2, 10, 0.5)
    assert promoted([T] * 6, 10, 0.6) and not promoted([T] * 5, 10, 0.6)  # 5/5: 0.566
    # Only the last window counts: an early failing streak is forgotten.
    assert promoted([F] * 5 + [T] * 10, 10, 0.6)
    assert not promoted([T] * 10 + [F], 10, 0.6)
    assert not promoted([], 10, 0.0)


# --- the adaptive schedule ---------------------------------------------------------------------------


def test_the_adaptive_schedule_takes_the_rung_nearest_even() -> None:
    rungs = ("S3", "S2", "S1")
    assert next_rung(rungs, {}, 10) == "S3"  # nothing played: the order listed
    assert next_rung(rungs, {"S3": [T]}, 10) == "S2"  # S3 is at 1 (1/2 away), unplayed S2 counts as 1/2
    # S3 at 3/4 (1/4 away), S2 at 2/5 (1/10 away), S1 at 0 (1/2 away): S2.
    assert next_rung(rungs, {"S3": [T, T, T, F], "S2": [T, F, T, F, F], "S1": [F]}, 10) == "S2"
    # The window: S3's last 2 games are 1/2, though it lost twice before; S2 sits at 1.
    assert next_rung(rungs[:2], {"S3": [F, F, T, F], "S2": [T, T]}, 2) == "S3"


def test_ties_go_to_the_rate_that_moved_most_then_to_the_fewest_games() -> None:
    # Window 2. S3: last two 1/2, the two before 1 (moved 1/2). S2: 1/2 with nothing before (moved 0).
    assert next_rung(("S2", "S3"), {"S3": [T, T, T, F], "S2": [T, F]}, 2) == "S3"
    # Both 1/2, neither moved: the fewest games.
    assert next_rung(("S3", "S2"), {"S3": [T, F, T, F], "S2": [F, T]}, 2) == "S2"
    # 3/10 and 7/10 are equally far from 1/2 (exact fractions, not floats); S2 moved 7/10 - 2/10.
    s3 = [F] * 7 + [T] * 3 + [F] * 7 + [T] * 3
    s2 = [F] * 8 + [T] * 2 + [T] * 7 + [F] * 3
    assert next_rung(("S3", "S2"), {"S3": s3, "S2": s2}, 10) == "S2"
    # Equal in everything: the order listed.
    assert next_rung(("S1", "S0"), {"S1": [T, F], "S0": [F, T]}, 10) == "S1"


def _row(game: int, rung: str, complete: bool, valid: bool = True) -> GameResult:
    return GameResult(
        player="p",
        side="BLU",
        winner=None,
        valid=valid,
        arena="river",
        seed=3,
        extra={"game": game, "rung": rung, "setup": {"complete": complete}},
    )


def test_the_plan_follows_the_rows_so_far(ladder: Path, tmp_path: Path) -> None:
    fixed = RungGamesConfig("scripted", ladder, tmp_path / "a", rungs="S3,S1", games=4)
    assert [plan_game(i, fixed, [])[0] for i in range(4)] == ["S3", "S1", "S3", "S1"]
    adaptive = RungGamesConfig(
        "scripted", ladder, tmp_path / "b", rungs="S3,S2", schedule="adaptive", window=4
    )
    assert plan_game(0, adaptive, [])[0] == "S3"
    # After S3 succeeded once, unplayed S2 is nearer even; an invalid game counts in no rate.
    rows = [_row(0, "S3", True), _row(1, "S2", False, valid=False)]
    assert plan_game(1, adaptive, rows)[0] == "S2"  # game 1's plan sees only game 0
    assert plan_game(2, adaptive, rows)[0] == "S2"
    rows.append(_row(2, "S2", True))
    assert plan_game(3, adaptive, rows)[0] == "S3"  # both at 1 over one valid game: the order listed
    saves = plan_game(3, adaptive, rows)[1]
    assert saves["rung"] == "S3" and saves["save"].endswith("S3.simsave")


# --- games from a ladder -------------------------------------------------------------------------------


def _invoke(*args: str):
    return CliRunner().invoke(app, ["rung-games", *map(str, args)])


def _report(output: str) -> dict:
    return json.loads(output[output.index("{") :])


def test_scripted_games_carry_their_rung_resume_and_are_counted(ladder: Path, tmp_path: Path) -> None:
    out = tmp_path / "scripted"
    result = _invoke("scripted", ladder, out, "--rungs", "S3,S0", "--games", "3", "--max-days", "12")
    assert result.exit_code == 0, result.output
    rows = read_results(out / "results.jsonl")
    assert [(r.extra["game"], r.extra["rung"]) for r in rows] == [(0, "S3"), (1, "S0"), (2, "S3")]
    # A rung's saves (the ladder has both sides) are played in turn: S3 from BLU, then from RED.
    assert [r.extra["save"] for r in rows] == [
        "plains-m3-g3-BLU/S3.simsave",
        "plains-m3-g3-BLU/S0.simsave",
        "plains-m3-g3-RED/S3.simsave",
    ]
    assert [r.side for r in rows] == ["BLU", "BLU", "RED"]
    assert all(r.valid and r.arena == "plains" and r.extra["days"] == 12 for r in rows)
    assert all(r.extra["session"] is None for r in rows)  # no --record: no sessions
    assert rows[0].extra["declarer"] is not None  # read from the restored game's log
    report = _report(result.output)
    assert json.loads((out / "rung-games.json").read_text()) == {
        k: v
        for k, v in report.items()
        if k not in ("player", "out", "results", "skipped", "interrupted", "this_run")
    }
    for rung in ("S3", "S0"):
        mine = [r for r in rows if r.extra["rung"] == rung]
        entry = report["rungs"][rung]
        setups = sum(bool(r.extra["setup"]["complete"]) for r in mine)
        assert entry["games"] == entry["valid"] == len(mine)
        assert entry["successes"] == entry["setups_complete"] == setups
        assert entry["wins"] == sum(r.outcome == "win" for r in mine)
        assert entry["rate"]["games"] == len(mine) and entry["rate"]["wins"] == setups
        assert entry["promoted"] is False  # 2 games, or 1: too few for a lower bound of 0.6
    assert report["success"] == "setup" and report["next"] == "S3"

    again = _invoke("scripted", ladder, out, "--rungs", "S3,S0", "--games", "4", "--max-days", "12")
    assert again.exit_code == 0, again.output
    assert _report(again.output)["skipped"] == 3 and _report(again.output)["this_run"]["games"] == 1
    rows = read_results(out / "results.jsonl")
    assert [r.extra["rung"] for r in rows] == ["S3", "S0", "S3", "S0"]
    other = _invoke("scripted", ladder, out, "--rungs", "S3,S0", "--games", "4", "--max-days", "20")
    assert isinstance(other.exception, UserError) and "holds games of other settings" in str(other.exception)


def test_random_games_on_the_adaptive_schedule(ladder: Path, tmp_path: Path) -> None:
    out = tmp_path / "random"
    args = (
        "random",
        ladder,
        out,
        "--rungs",
        "S2,S1",
        "--games",
        "2",
        "--max-days",
        "8",
        "--schedule",
        "adaptive",
    )
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    rows = read_results(out / "results.jsonl")
    assert [r.player for r in rows] == ["random", "random"]
    assert [r.extra["rung"] for r in rows] == ["S2", "S1"]  # nothing played yet: S2; then unplayed S1
    report = _report(result.output)
    assert sum(entry["games"] for entry in report["rungs"].values()) == 2


def test_a_checkpoint_plays_the_rungs_with_the_decoding_asked_for(ladder: Path, tmp_path: Path) -> None:
    from hoi4_arena.models.checkpoint import Provenance, save_checkpoint
    from hoi4_arena.models.config import PolicyConfig
    from hoi4_arena.models.policy import Policy

    tiny = dict(width=8, summary_dim=16, cell_dim=16, fovea_dim=16, hidden=32, head_dim=32, position_dim=8)
    checkpoint = save_checkpoint(
        tmp_path / "tiny.pt", Policy(PolicyConfig(layout="cpu", **tiny)), provenance=Provenance("none", 0)
    )
    out = tmp_path / "policy"
    decoding = ("--point", "--follow-through", "--reset-memory", "4")
    args = (str(checkpoint), ladder, out, "--rungs", "S3", "--games", "1", "--max-days", "6")
    result = _invoke(*args, *decoding)
    assert result.exit_code == 0, result.output
    (row,) = read_results(out / "results.jsonl")
    assert row.valid and row.extra["rung"] == "S3" and row.player.endswith("/tiny")  # folder/stem
    stored = json.loads((out / "rung-games.settings.json").read_text())["settings"]
    assert stored["decoding"] == {
        "point": True,
        "deterministic": False,
        "temperature": 1.0,
        "reset_memory": 4,
        "follow_through": True,
    }
    other = _invoke(*args, "--reset-memory", "2")  # other decoding, same folder: refused
    assert other.exit_code != 0 and "other settings" in str(other.exception)


# --- bad input -------------------------------------------------------------------------------------------


def test_bad_input_is_refused_with_one_message_and_nothing_written(ladder: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    not_a_checkpoint = tmp_path / "notes.pt"
    not_a_checkpoint.write_text("hello")
    cases = [
        (("scripted", tmp_path, out), "has no ladder.json"),
        (("scripted", ladder, out, "--rungs", "S3,S9"), "--rungs takes rungs of S0, S1, S2, S3"),
        ((not_a_checkpoint, ladder, out), "notes.pt"),
        ((tmp_path / "missing.pt", ladder, out), "no such checkpoint file"),
        (("scripted", ladder, out, "--games", "0"), "--games must be a whole number >= 1"),
        (("scripted", ladder, out, "--threshold", "1.5"), "--threshold must lie in 0..1"),
    ]
    for args, message in cases:
        result = _invoke(*args)
        assert isinstance(result.exception, UserError), (args, result.output)
        assert message in str(result.exception), (args, str(result.exception))
        assert not out.exists(), args
