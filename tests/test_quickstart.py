"""The main job end to end on tiny settings: record, train a fixed number of steps, play, report; its budget
mode's scaling; bad settings."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.quickstart import HELD_OUT, HELD_OUT_PLAYERS, PLAYERS, QuickstartConfig, RunState

# Three demonstrations, a few optimizer steps of a narrow policy, one evaluation seed played from both
# sides on two maps. (The quickstart's own policy made this run 3 minutes of CPU: 7 s a training step,
# 0.6 s a decision, 40 s of heat maps; `make demo` runs it.)
TINY_POLICY = dict(width=8, summary_dim=16, cell_dim=16, fovea_dim=16, hidden=32, head_dim=32, position_dim=8)
TINY = [
    *(arg for key, value in TINY_POLICY.items() for arg in ("--policy", f"{key}={value}")),
    "--threads",
    "1",  # torch's second thread only spins beside the suite's other worker (4x slower at load 6)
    "--train-steps",
    "6",
    "--demo-games",
    "3",
    "--demo-max-days",
    "3",
    "--games",
    "2",
    "--max-days",
    "3",
    "--seed",
    "5",
    "--held-out",
    "ford:2",
]


def _quickstart(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "quickstart", str(out), *TINY, *extra],
        capture_output=True,
        text=True,
        timeout=900,
    )


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _check_records(records: dict, folder: Path, players: tuple[str, ...]) -> None:
    for player in players:
        rows = [r for r in _rows(folder / player / "results.jsonl") if r["valid"]]
        record = records[player]
        assert record["games"] == len(rows) == 2  # one seed, played from both sides
        assert record["wins"] == sum(r["outcome"] == "win" for r in rows)
        assert record["draws"] == sum(r["outcome"] == "draw" for r in rows)
        assert record["setup"]["complete"] == sum(bool(r["setup"]["complete"]) for r in rows)
        assert record["win_rate"]["wins"] == record["wins"]
    # Every player met the same seeds from the same sides.
    assert len({json.dumps(records[p]["seeds"]) for p in players}) == 1


@pytest.mark.slow
def test_quickstart_end_to_end_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    # The run in this process (which has torch imported already: about 5 s of CPU a fresh process pays
    # before its first optimizer step); the resume below goes through the installed command line.
    first = CliRunner().invoke(app, ["quickstart", str(out), *TINY])
    assert first.exit_code == 0, first.output[-3000:]
    result = json.loads(first.stdout)

    # The report exists and its numbers are the results files' numbers, on both maps.
    assert (out / "report.html").stat().st_size > 1000
    report = json.loads((out / "report.json").read_text())
    assert report["players"] == result["players"]
    _check_records(result["players"], out / "eval", PLAYERS)
    assert result["held_out"]["arena"] == "ford:2"
    _check_records(result["held_out"]["players"], out / "eval" / HELD_OUT, HELD_OUT_PLAYERS)
    assert {r["arena"] for r in _rows(out / "eval" / HELD_OUT / "learned" / "results.jsonl")} == {"ford:2"}
    assert {r["arena"] for r in _rows(out / "eval" / "learned" / "results.jsonl")} == {"plains:0"}
    # The learned policy played with the quickstart's decoding (its kinds at temperature 0.7), on both maps.
    for folder in (out / "eval" / "learned", out / "eval" / HELD_OUT / "learned"):
        played = json.loads((folder / "play.json").read_text())["settings"]
        assert {k: played[k] for k in ("mode", "temperature", "reset_memory", "follow_through")} == {
            "mode": "point",
            "temperature": 0.7,
            "reset_memory": 8,
            "follow_through": True,
        }
    # Training made exactly the steps asked for: the run is fixed by work.
    work = result["work"]
    assert work["fixed"] and work["train_steps"] == work["planned_steps"] == 6
    assert len(work["weights_sha256"]) == 64 and work["scaled"] is None
    # Only `hoi4-arena quickstart` pins torch's CPU kernels (before torch loads, tests/test_numerics.py):
    # this in-process run trained with the CPU's own, and its report says so.
    assert work["numerics"]["pinned"] is False and work["numerics"]["settings"]["MKL_CBWR"] is None
    assert "this CPU's own kernels" in (out / "report.html").read_text()
    trained = json.loads((out / "bc" / "config.json").read_text())["policy"]
    assert trained["width"] == 8 and trained["cell_pool"] == "mean_max"  # --policy over the quickstart's
    assert (out / "bc" / "last.pt").exists() and list((out / "bc" / "tb").iterdir())
    assert "fixed by work" in (out / "report.html").read_text()
    for picture in ("training.png", "learned-game.png"):
        assert (out / "report" / picture).stat().st_size > 1000
    assert json.loads((out / "demos" / "splits.json").read_text())
    # The demonstrations stored their views: training read no video.
    assert list((out / "demos").glob("*/views-*"))

    # Running again resumes: every stage is kept and the report says the same (through the installed
    # command line, in a process of its own, as a user runs it again).
    again = _quickstart(out)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "done before" in again.stderr
    assert "report: done before, kept" in again.stderr  # nothing changed: its pictures are not drawn again
    assert json.loads(again.stdout)["players"] == result["players"]

    # Other settings in the same folder are refused with a message naming them (in this process: the
    # command line's UserError-to-message path is test_cli's).
    with pytest.raises(UserError, match=r"other settings \(.*arena.*\)"):
        RunState.open(QuickstartConfig(out=out, arena="ford"))

    # A second training seed added to the finished run: the demonstrations, baselines and first policy are
    # kept; the new policy trains on the same demonstrations, plays the same games, and the report gives
    # the spread of the two.
    spread = CliRunner().invoke(app, ["quickstart", str(out), *TINY, "--train-seeds", "2"])
    assert spread.exit_code == 0, spread.output[-3000:]
    assert "demonstrations: done before" in spread.stderr and "training: done before" in spread.stderr
    result2 = json.loads(spread.stdout)
    assert result2["players"]["learned"] == result["players"]["learned"]
    _check_records(result2["players"], out / "eval", ("learned-2", *PLAYERS))
    _check_records(result2["held_out"]["players"], out / "eval" / HELD_OUT, ("learned-2", *HELD_OUT_PLAYERS))
    assert json.loads((out / "bc-2" / "config.json").read_text())["train"]["seed"] == 6  # --seed 5, the next
    seeds = result2["seed_spread"]["plains:0"]
    assert seeds["seeds"] == [5, 6] and seeds["games"] == [2, 2]
    assert seeds["wins"] == [result2["players"][p]["wins"] for p in ("learned", "learned-2")]
    assert seeds["win_rate"]["min"] <= seeds["win_rate"]["mean"] <= seeds["win_rate"]["max"]
    assert set(result2["seed_spread"]) == {"plains:0", "ford:2"}
    assert "Training seeds" in (out / "report.html").read_text()
    rated = {row["player"] for row in result2["ratings"]["plains:0"]}
    assert rated == {"ai", "learned", "learned-2", "scripted", "random"}
    assert "League table" in (out / "report.html").read_text()


def test_a_report_is_kept_only_while_it_is_the_report_of_the_stages(tmp_path: Path) -> None:
    from hoi4_arena.quickstart import _kept_report

    config = QuickstartConfig(out=tmp_path / "q")
    state = RunState.open(config)
    assert state.reported is False and _kept_report(config, state) is None  # a new run has none
    (config.out / "report.json").write_text('{"players": {"learned": 1}}')
    (config.out / "report.html").write_text("<html>")
    state.reported = True
    assert _kept_report(config, state) == {"players": {"learned": 1}}
    (config.out / "report.json").write_text("{cut")
    assert _kept_report(config, state) is None  # unreadable: drawn again
    (config.out / "report.json").write_text("{}")
    (config.out / "report.html").unlink()
    assert _kept_report(config, state) is None  # its page gone: drawn again
    # A run made before the report was kept reads as not reported.
    saved = json.loads((config.out / "quickstart.json").read_text())
    assert "reported" in saved
    saved.pop("reported")
    (config.out / "quickstart.json").write_text(json.dumps(saved))
    assert RunState.open(config).reported is False


def test_a_budget_scales_the_games_down_and_says_so(tmp_path: Path) -> None:
    full = QuickstartConfig(out=tmp_path / "a")
    assert full.scaled == {"demo_games": 96, "games": 20, "max_days": 365, "demo_max_days": 30}
    assert QuickstartConfig(out=tmp_path / "a", budget_minutes=30).scaled == full.scaled
    small = QuickstartConfig(out=tmp_path / "a", budget_minutes=3).scaled
    assert small["demo_games"] < 96 and small["games"] < 20 and small["games"] % 2 == 0
    assert small["max_days"] < 365 and small["demo_max_days"] <= 30
    smallest = QuickstartConfig(out=tmp_path / "a", budget_minutes=2).scaled
    assert smallest["games"] >= 2 and smallest["demo_games"] >= 4
    # A budget is part of what decides the run; the steps are not, then.
    assert "budget_minutes" in QuickstartConfig(out=tmp_path / "a", budget_minutes=3).settings()
    assert "train_steps" not in QuickstartConfig(out=tmp_path / "a", budget_minutes=3).settings()
    assert "budget_minutes" not in full.settings() and full.settings()["train_steps"] == 3000


def test_bad_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="budget"):
        QuickstartConfig(out=tmp_path / "a", budget_minutes=1.5)
    with pytest.raises(UserError, match="preset"):
        QuickstartConfig(out=tmp_path / "a", arena="atlantis")
    with pytest.raises(UserError, match="preset"):
        QuickstartConfig(out=tmp_path / "a", arena="plains,atlantis")
    with pytest.raises(UserError, match="training maps"):
        QuickstartConfig(out=tmp_path / "a", arena="plains,river:7", held_out="river:7")
    with pytest.raises(UserError, match="one map"):
        QuickstartConfig(out=tmp_path / "a", held_out="river,ford")
    with pytest.raises(UserError, match="one map"):
        QuickstartConfig(out=tmp_path / "a", held_out="ford:0-9")
    with pytest.raises(UserError, match="training maps"):  # inside a training range
        QuickstartConfig(out=tmp_path / "a", arena="bay,plains:0-99", held_out="plains:5")
    ranged = QuickstartConfig(out=tmp_path / "a", arena="plains:0-99,bay", held_out="plains:100")
    assert ranged.arena_spec == "plains:0-99,bay:0" and ranged.held_out_spec == "plains:100"
    for arena in ("river", "plains,bay:1000"):  # the benchmark's maps are for evaluation only
        with pytest.raises(UserError, match="is on the benchmark's maps"):
            QuickstartConfig(out=tmp_path / "a", arena=arena)
    with pytest.raises(UserError, match="train-steps"):
        QuickstartConfig(out=tmp_path / "a", train_steps=0)
    with pytest.raises(UserError, match="val-games"):
        QuickstartConfig(out=tmp_path / "a", demo_games=2, val_games=2)
    assert QuickstartConfig(out=tmp_path / "a", held_out="none").held_out_spec is None
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "something.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty"):
        RunState.open(QuickstartConfig(out=busy))


def test_an_interrupted_game_stage_is_not_finished(tmp_path: Path, monkeypatch) -> None:
    """A stage whose run of games was interrupted must not be kept as done: the next run resumes it."""
    import hoi4_arena.play.play_policy as play_policy
    from hoi4_arena import quickstart

    monkeypatch.setattr(play_policy, "run_play_policy", lambda config: {"interrupted": True, "games": 3})
    with pytest.raises(KeyboardInterrupt):
        quickstart.evaluate_learned(QuickstartConfig(out=tmp_path / "q"))
    monkeypatch.setattr(play_policy, "run_play_policy", lambda config: {"interrupted": False, "games": 20})
    assert quickstart.evaluate_learned(QuickstartConfig(out=tmp_path / "q")) == {
        "learned": 20,
        "held-out learned": 20,
    }


def test_an_interrupted_training_stage_is_not_finished(tmp_path: Path, monkeypatch) -> None:
    """Ctrl+C in training: train-bc saves and returns `stopped: interrupt`; the stage must not count as
    done (the run stops; the next one resumes the steps that are left), while a run that ends its steps
    is kept."""
    import hoi4_arena.training.bc as bc
    from hoi4_arena import quickstart

    config = QuickstartConfig(out=tmp_path / "q", train_steps=7)
    monkeypatch.setattr(bc, "train_bc", lambda *args, **kwargs: {"stopped": "interrupt", "steps": 3})
    with pytest.raises(KeyboardInterrupt):
        quickstart.train(config)
    monkeypatch.setattr(bc, "train_bc", lambda *args, **kwargs: {"stopped": "max_steps", "steps": 7})
    assert quickstart.train(config) == {"stopped": "max_steps", "steps": 7}


def test_a_training_stopped_before_its_first_save_starts_again(tmp_path: Path, monkeypatch) -> None:
    """Killed between writing its settings and its first save, the training stage holds config.json and
    logs only: the next run starts it again instead of refusing the folder."""
    import hoi4_arena.training.bc as bc
    from hoi4_arena import quickstart

    config = QuickstartConfig(out=tmp_path / "q", train_steps=7)
    (config.out / "bc" / "tb").mkdir(parents=True)
    (config.out / "bc" / "config.json").write_text("{}")
    calls = []

    def fake_train(bc_config, resume=False, changes=None):
        calls.append((resume, sorted(p.name for p in Path(bc_config.out).glob("*"))))
        return {"steps": bc_config.max_steps}

    monkeypatch.setattr(bc, "train_bc", fake_train)
    assert quickstart.train(config) == {"steps": 7}
    assert calls == [(False, [])]


def test_the_ppo_stage_is_a_setting_only_when_asked_for(tmp_path: Path, monkeypatch) -> None:
    """--rl-updates adds the fine-tuning stage and the fine-tuned player on every map; without it the
    settings are those of a run made before the stage existed (its folder still resumes)."""
    import hoi4_arena.play.play_policy as play_policy
    from hoi4_arena import quickstart

    assert "rl_updates" not in QuickstartConfig(out=tmp_path / "a").settings()
    assert QuickstartConfig(out=tmp_path / "a", rl_updates=3).settings()["rl_updates"] == 3
    with pytest.raises(UserError, match="rl-updates"):
        QuickstartConfig(out=tmp_path / "a", rl_updates=-1)
    with pytest.raises(UserError, match="fixed work"):
        QuickstartConfig(out=tmp_path / "a", rl_updates=2, budget_minutes=5)

    played = []
    monkeypatch.setattr(
        play_policy,
        "run_play_policy",
        lambda config: (
            played.append((config.name, Path(config.checkpoint).parent.name, config.arena))
            or {"interrupted": False, "games": config.games}
        ),
    )
    config = QuickstartConfig(out=tmp_path / "q", rl_updates=2, games=4)
    assert quickstart.evaluate_learned(config) == {
        "learned": 4,
        "fine-tuned": 4,
        "held-out learned": 4,
        "held-out fine-tuned": 4,
    }
    assert played == [
        ("learned", "bc", "plains:0"),
        ("fine-tuned", "ppo", "plains:0"),
        ("learned", "bc", "river:7"),
        ("fine-tuned", "ppo", "river:7"),
    ]


def test_a_ppo_stage_can_be_added_to_a_finished_run(tmp_path: Path) -> None:
    """--rl-updates on a run made without it keeps its stages but the evaluation (which then plays the
    fine-tuned policy too); any other change, or changing the updates of a run that has the stage, is
    refused."""
    out = tmp_path / "q"
    state = RunState.open(QuickstartConfig(out=out))
    state.stages = {
        "demonstrations": {"games": 96},
        "baselines": {},
        "training": {"steps": 3000},
        "evaluation": {},
    }
    state.save(out)
    added = RunState.open(QuickstartConfig(out=out, rl_updates=5))
    assert sorted(added.stages) == ["baselines", "demonstrations", "training"]
    assert added.settings["rl_updates"] == 5
    assert RunState.open(QuickstartConfig(out=out, rl_updates=5)).settings["rl_updates"] == 5
    with pytest.raises(UserError, match="other settings"):
        RunState.open(QuickstartConfig(out=out, rl_updates=6))
    with pytest.raises(UserError, match="other settings"):
        RunState.open(QuickstartConfig(out=out))
    other = tmp_path / "other"
    RunState.open(QuickstartConfig(out=other))
    with pytest.raises(UserError, match="other settings"):
        RunState.open(QuickstartConfig(out=other, rl_updates=5, games=10))


def test_training_seeds_are_a_setting_only_when_asked_for(tmp_path: Path, monkeypatch) -> None:
    """--train-seeds K trains K policies on the same demonstrations (seeds seed..seed+K-1, folders bc,
    bc-2, ...) and plays each on every map; K = 1 has the settings of a run made before the option."""
    import hoi4_arena.play.play_policy as play_policy
    import hoi4_arena.training.bc as bc
    from hoi4_arena import quickstart

    assert "train_seeds" not in QuickstartConfig(out=tmp_path / "a").settings()
    config = QuickstartConfig(out=tmp_path / "q", train_seeds=3, seed=4, games=4)
    assert config.settings()["train_seeds"] == 3
    assert [(x.name, x.folder, x.stage, x.seed) for x in config.learners] == [
        ("learned", "bc", "training", 4),
        ("learned-2", "bc-2", "training-2", 5),
        ("learned-3", "bc-3", "training-3", 6),
    ]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(UserError, match="train-seeds"):
            QuickstartConfig(out=tmp_path / "a", train_seeds=bad)
    with pytest.raises(UserError, match="fixed work"):
        QuickstartConfig(out=tmp_path / "a", train_seeds=2, budget_minutes=5)

    trained = []
    monkeypatch.setattr(
        bc, "train_bc", lambda c, **kw: trained.append((Path(c.out).name, c.seed)) or {"steps": c.max_steps}
    )
    quickstart.train(config, learner=config.learners[2])
    assert trained == [("bc-3", 6)]
    played = []
    monkeypatch.setattr(
        play_policy,
        "run_play_policy",
        lambda c: (
            played.append((c.name, Path(c.checkpoint).parent.name)) or {"interrupted": False, "games": 4}
        ),
    )
    assert set(quickstart.evaluate_learned(config)) == {
        "learned",
        "learned-2",
        "learned-3",
        "held-out learned",
        "held-out learned-2",
        "held-out learned-3",
    }
    assert played[:3] == [("learned", "bc"), ("learned-2", "bc-2"), ("learned-3", "bc-3")]


def test_training_seeds_can_be_added_to_a_finished_run(tmp_path: Path) -> None:
    """--train-seeds on a run made without it keeps its stages but the evaluation; so does adding PPO
    updates and seeds at once; any other change beside them is refused."""
    out = tmp_path / "q"
    state = RunState.open(QuickstartConfig(out=out))
    state.stages = {"demonstrations": {}, "baselines": {}, "training": {"steps": 3000}, "evaluation": {}}
    state.save(out)
    both = RunState.open(QuickstartConfig(out=out, train_seeds=3, rl_updates=2))
    assert sorted(both.stages) == ["baselines", "demonstrations", "training"]
    assert both.settings["train_seeds"] == 3 and both.settings["rl_updates"] == 2
    with pytest.raises(UserError, match="other settings"):
        RunState.open(QuickstartConfig(out=out, train_seeds=2, rl_updates=2))  # fewer seeds: refused
    other = tmp_path / "other"
    RunState.open(QuickstartConfig(out=other))
    with pytest.raises(UserError, match="other settings"):
        RunState.open(QuickstartConfig(out=other, train_seeds=2, games=10))


def test_the_seed_spread_is_the_mean_and_range_of_the_learned_policies(tmp_path: Path) -> None:
    from hoi4_arena.quickstart import _seed_spread

    config = QuickstartConfig(out=tmp_path / "q", train_seeds=3)

    def record(wins: int, setups: int) -> dict:
        return {"games": 20, "wins": wins, "draws": 1, "setup": {"complete": setups}}

    records = {
        "learned": record(6, 16),
        "learned-2": record(2, 10),
        "learned-3": record(4, 19),
        "scripted": {},
    }
    spread = _seed_spread(config, records, {})
    assert list(spread) == ["plains:0"]
    row = spread["plains:0"]
    assert row["seeds"] == [0, 1, 2] and row["wins"] == [6, 2, 4] and row["setups"] == [16, 10, 19]
    assert row["win_rate"] == pytest.approx({"mean": 0.2, "min": 0.1, "max": 0.3})
    assert row["setup_rate"] == pytest.approx({"mean": 0.75, "min": 0.5, "max": 0.95})


def test_the_report_rates_every_player_against_the_ai_on_each_map(tmp_path: Path) -> None:
    """The league table of the report: Bradley-Terry ratings from the evaluation games, the AI at 1000; a
    player that never scored rated below one that won half its games, flagged as the prior's bound."""
    from hoi4_arena.quickstart import _ratings
    from hoi4_arena.results import GameResult

    def games(player: str, wins: int, n: int = 8) -> list[GameResult]:
        return [
            GameResult(
                player=player,
                side="BLU" if k % 2 == 0 else "RED",
                winner=("BLU" if k % 2 == 0 else "RED") if k < wins else ("RED" if k % 2 == 0 else "BLU"),
                valid=True,
                arena="plains:0",
                seed=1000 + k // 2,
            )
            for k in range(n)
        ]

    config = QuickstartConfig(out=tmp_path / "q")
    rows = {"learned": games("learned", 4), "scripted": games("scripted", 6), "random": games("random", 0)}
    held = {"learned": games("learned", 2), "scripted": games("scripted", 4)}
    tables = _ratings(config, rows, held)
    assert list(tables) == ["plains:0", "river:7"]
    table = {row["player"]: row for row in tables["plains:0"]}
    assert table["ai"]["rating"] == 1000 and table["ai"]["anchor"]
    assert table["scripted"]["rating"] > table["learned"]["rating"] > table["random"]["rating"]
    assert abs(table["learned"]["rating"] - 1000) < 1  # 4 of 8: even with the AI
    assert table["random"]["prior_bound"] == "never scored" and table["learned"]["prior_bound"] is None
    assert table["learned"]["low"] < table["learned"]["rating"] < table["learned"]["high"]  # seeds resampled
    assert {row["player"] for row in tables["river:7"]} == {"ai", "learned", "scripted"}
    assert _ratings(config, rows, held) == tables  # a seeded bootstrap
