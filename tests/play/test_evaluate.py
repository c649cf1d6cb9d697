"""`hoi4-arena evaluate` (play/evaluate.py): both players on the same seeds and sides, the paired report,
resume, an interrupted run, bad input, and the command line. Games are short (a few game days)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.play import evaluate as evaluate_module
from hoi4_arena.play.evaluate import EvaluateConfig, run_evaluate
from hoi4_arena.results import read_results

SMALL = {"size": (360, 640), "max_days": 4, "progress": False}


@pytest.mark.slow
def test_a_checkpoint_against_random_on_the_same_games(tmp_path: Path, tiny_checkpoint: Path) -> None:
    config = EvaluateConfig(
        a=str(tiny_checkpoint), b="random", out=tmp_path / "eval", pairs=1, record=False, **SMALL
    )
    report = run_evaluate(config)
    assert config.names == ("ckpt/tiny", "random")
    a_rows = read_results(tmp_path / "eval" / "ckpt-tiny" / "results.jsonl")
    b_rows = read_results(tmp_path / "eval" / "random" / "results.jsonl")
    assert (
        [(r.seed, r.side) for r in a_rows] == [(r.seed, r.side) for r in b_rows] == [(0, "BLU"), (0, "RED")]
    )
    assert {r.arena for r in a_rows + b_rows} == {"plains:0"}
    assert report["complete"] and report["paired_games"] == 2 and report["excluded_invalid"] == 0
    assert [(g["seed"], g["side"]) for g in report["games"]] == [(0, "BLU"), (0, "RED")]
    assert [g["a"] for g in report["games"]] == [r.outcome for r in a_rows]
    assert [g["b"] for g in report["games"]] == [r.outcome for r in b_rows]
    assert report["records"]["a"]["games"] == 2 and "p_value" in report["win_rate_difference"]
    stored = json.loads((tmp_path / "eval" / "evaluate.json").read_text())
    assert stored["settings"] == config.settings() and stored["table"] == report["table"]
    assert stored["settings"]["arena"] == "plains:0" and stored["settings"]["size"] == [640, 360]

    # Resume: nothing replayed; more pairs play only the new seeds.
    again = run_evaluate(
        EvaluateConfig(
            a=str(tiny_checkpoint), b="random", out=tmp_path / "eval", pairs=1, record=False, **SMALL
        )
    )
    assert again["this_run"]["random"]["skipped"] == 2 and again["games"] == report["games"]
    more = run_evaluate(
        EvaluateConfig(
            a=str(tiny_checkpoint), b="random", out=tmp_path / "eval", pairs=2, record=False, **SMALL
        )
    )
    assert more["planned_games"] == 4 and more["games"][:2] == report["games"] and more["complete"]
    with pytest.raises(UserError, match="other settings"):
        run_evaluate(
            EvaluateConfig(
                a=str(tiny_checkpoint), b="random", out=tmp_path / "eval", pairs=1, **{**SMALL, "max_days": 5}
            )
        )


def test_the_same_player_twice_plays_the_same_games(tmp_path: Path) -> None:
    # The random policy is seeded per (seed, side): playing it twice is a check that pairing lines up.
    report = run_evaluate(
        EvaluateConfig(a="random", b="random", out=tmp_path / "eval", pairs=2, record=False, **SMALL)
    )
    assert report["players"] == {"a": "random-a", "b": "random-b"}
    assert all(g["a"] == g["b"] and g["paired"] for g in report["games"])
    assert report["win_rate_difference"]["estimate"] == 0 and report["win_rate_difference"]["p_value"] == 1.0
    assert (tmp_path / "eval" / "random-a" / "results.jsonl").is_file()


@pytest.mark.slow
def test_the_scripted_player_against_random(tmp_path: Path) -> None:
    # The scripted player's calibration ships for 960x540; record-ai plays the same seeds and sides.
    config = EvaluateConfig(
        a="scripted", b="random", out=tmp_path / "eval", pairs=1, size=(540, 960), max_days=6, progress=False
    )
    report = run_evaluate(config)
    rows = read_results(tmp_path / "eval" / "scripted" / "results.jsonl")
    assert [(r.seed, r.side, r.arena) for r in rows] == [(0, "BLU", "plains:0"), (0, "RED", "plains:0")]
    assert report["complete"] and report["paired_games"] == 2
    assert [g["a"] for g in report["games"]] == [r.outcome for r in rows]


def test_an_interrupted_evaluation_is_flagged(tmp_path: Path, monkeypatch) -> None:
    real = evaluate_module._run_player
    calls = []

    def interrupted(config):
        calls.append(config.out.name)
        summary = real(config)
        return {**summary, "interrupted": True}

    monkeypatch.setattr(evaluate_module, "_run_player", interrupted)
    report = run_evaluate(
        EvaluateConfig(
            a="random",
            b="random",
            out=tmp_path / "eval",
            pairs=1,
            record=False,
            name_a="r1",
            name_b="r2",
            **SMALL,
        )
    )
    assert calls == ["r1"] and report["interrupted"]  # B was not started
    assert not report["complete"] and report["incomplete"] == ["r2: 2 of 2 games not played", "interrupted"]
    assert json.loads((tmp_path / "eval" / "evaluate.json").read_text())["complete"] is False


def test_bad_input_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "eval"
    for settings, match in (
        ({"a": "missing.pt"}, "neither a checkpoint"),
        ({"pairs": 0}, "--pairs"),
        ({"a": "scripted"}, "960x540|calibrat"),  # 640x360 has no calibration for the scripted player
        ({"name_a": "x", "name_b": "x"}, "names"),
        ({"size": (360, 500)}, "16:9"),
        ({"arena": "nowhere"}, "nowhere"),
    ):
        with pytest.raises(UserError, match=match):
            EvaluateConfig(**{"a": "random", "b": "random", "out": out, "pairs": 1, **SMALL, **settings})
    assert not out.exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "other.txt").write_text("x")
    with pytest.raises(UserError, match="not empty"):
        run_evaluate(EvaluateConfig(a="random", b="random", out=tmp_path / "full", pairs=1, **SMALL))


def test_the_command_line(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "eval"
    result = runner.invoke(
        app,
        [
            "evaluate",
            "random",
            "random",
            str(out),
            "--pairs",
            "1",
            "--size",
            "640x360",
            "--max-days",
            "3",
            "--no-record",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert report["paired_games"] == 2 and report["complete"]
    result = runner.invoke(app, ["evaluate", "nothing.pt", "random", str(tmp_path / "x"), "--pairs", "1"])
    assert result.exit_code != 0 and isinstance(result.exception, UserError)
