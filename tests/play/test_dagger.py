"""hoi4-arena dagger: the learner's games labelled by the scripted player (or the search player: expert
iteration), the data growing, train-bc going on."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint
from hoi4_arena.models.checkpoint import Provenance, load_checkpoint, weights_sha256
from hoi4_arena.play.dagger import STORED_BEFORE, DaggerConfig, bc_settings, run_dagger
from hoi4_arena.results import open_run
from hoi4_arena.sessions.labels import read_labels
from hoi4_arena.sessions.reader import SessionReader
from project_scripts import load_script
from tiny import TINY


@pytest.fixture
def init(tmp_path: Path) -> Path:
    policy = Policy(PolicyConfig(layout="cpu", **TINY))
    return save_checkpoint(tmp_path / "init.pt", policy, provenance=Provenance(data="none", seed=0))


def config(out: Path, init: Path, **changes) -> DaggerConfig:
    settings = dict(
        out=out, init=str(init), iterations=2, games=2, steps=2, max_days=4, progress=False, threads=1
    )
    return DaggerConfig(**{**settings, **changes})


def sha(path: str | Path) -> str:
    return weights_sha256(load_checkpoint(Path(path)).policy.state_dict())


def test_two_iterations_label_grow_train_and_resume(tmp_path: Path, init: Path) -> None:
    # With --held-inputs and --takeover 1 (their checks below): one run of games and training serves all.
    options = dict(held_inputs=True, takeover=1.0)
    out = tmp_path / "dagger"
    summary = run_dagger(config(out, init, **options))
    first, second = summary["iterations"]
    assert [first["beta"], second["beta"]] == [0.5, 0.25]
    assert first["learner"] == str(init) and second["learner"] == first["checkpoint"]
    # The data grows: iteration 1 trains on both iterations' games.
    assert (first["train_sessions"], second["train_sessions"]) == (2, 4)
    # The weights change each iteration.
    hashes = [sha(init), sha(first["checkpoint"]), sha(second["checkpoint"])]
    assert len(set(hashes)) == 3
    # Fresh training maps each iteration, each from both sides.
    maps = {
        (r["map"], r["side"])
        for i in range(2)
        for r in map(json.loads, (out / f"iter-{i:03d}" / "games" / "results.jsonl").read_text().splitlines())
    }
    assert maps == {("plains:0", "BLU"), ("plains:0", "RED"), ("passes:1", "BLU"), ("passes:1", "RED")}
    # Each iteration says how often its games attacked: the mean of its rows' war.
    for i, iteration in enumerate(summary["iterations"]):
        rows = [
            json.loads(line)
            for line in (out / f"iter-{i:03d}" / "games" / "results.jsonl").read_text().splitlines()
        ]
        assert all(set(row["war"]) == {"offensives", "executing_days"} for row in rows)
        assert iteration["offensives_a_game"] == sum(row["war"]["offensives"] for row in rows) / len(rows)
    # Every session has the expert's labels beside it, one a decision, aligned with what was played: a
    # decision whose label was played holds the label's tokens.
    sessions = sorted((out / "iter-000" / "games").glob("dagger-i*"))
    assert len(sessions) == 2
    played_labels = 0
    for folder in sessions:
        labels = read_labels(folder, "expert")
        assert labels.index["source"] == "expert" and labels.index["beta"] == 0.5
        decisions = list(SessionReader(folder).decisions(images=False, arena=False))
        assert len(labels) == len(decisions) > 15
        lines = [json.loads(line) for line in (folder / "labels-expert.jsonl").read_text().splitlines()]
        for decision, line in zip(decisions, lines, strict=True):
            if line["expert"]:
                assert np.array_equal(decision.tokens, labels.tokens[decision.index])
                played_labels += 1
        assert labels.keep().sum() >= len(labels) - 1
    assert played_labels > 5
    held_inputs_and_takeovers(summary, out)
    # Resuming: finished iterations are not touched; an iteration cut short goes on where it was.
    results = (out / "iter-001" / "games" / "results.jsonl").read_text()
    again = run_dagger(config(out, init, **options))
    assert again["iterations"] == summary["iterations"]
    progress = json.loads((out / "progress.json").read_text())
    (out / "progress.json").write_text(json.dumps(progress[:1]))  # killed after iteration 1's training
    resumed = run_dagger(config(out, init, **options))
    assert (out / "iter-001" / "games" / "results.jsonl").read_text() == results  # no game played again
    assert sha(resumed["iterations"][1]["checkpoint"]) == hashes[2]  # the training run not redone
    # The settings that decide the run must match.
    with pytest.raises(UserError, match="settings"):
        run_dagger(config(out, init, **options, beta0=0.9))


def held_inputs_and_takeovers(summary: dict, out: Path) -> None:
    """--held-inputs: the first iteration's training adds them to a start without them, the second
    iteration's learner plays with them (shown, each decision, what the inputs sent hold down); --takeover
    1: every label the learner does not carry out goes to the expert (labels-expert.jsonl says so), and
    the summary says what share of decisions began one."""
    for iteration in summary["iterations"]:
        assert load_checkpoint(Path(iteration["checkpoint"])).config.held_inputs == 1
        assert 0 < iteration["takeover_share"] <= iteration["expert_share"] < 1
    assert summary["iterations"][1]["record"]["valid"] == 2  # played by a policy that sees what it holds
    games = out / "iter-000" / "games"
    assert all(
        json.loads(line)["takeovers"] > 0 for line in (games / "results.jsonl").read_text().splitlines()
    )
    for folder in sorted(games.glob("dagger-i*")):
        lines = [json.loads(line) for line in (folder / "labels-expert.jsonl").read_text().splitlines()]
        assert any(line["expert"] for line in lines) and not all(line["expert"] for line in lines)
    # scripts/held_share.py counts, per iteration, the learner's decisions that began holding something.
    rows = load_script("held_share").iteration_rows(out)
    assert [r["iteration"] for r in rows] == ["iter-000", "iter-001"] and all(r["games"] == 2 for r in rows)
    for row in rows:
        assert row["learner_decisions"] > 0 and 0 <= row["holding"] <= 1 and 0 <= row["labels_release"] <= 1
    # scripts/release_probability.py scores the labels' releases with the policy that sees what it holds.
    logps = load_script("release_probability").release_logps(
        summary["iterations"][0]["checkpoint"], out / "iter-001" / "games", 2
    )
    assert all(v <= 0 for v in logps)
    # scripts/begin_probability.py reads a labelled game on the learner's own decisions only.
    folder = sorted(games.glob("dagger-i*"))[0]
    lines = [json.loads(line) for line in (folder / "labels-expert.jsonl").read_text().splitlines()]
    probe = load_script("begin_probability").acting_probabilities(
        summary["iterations"][0]["checkpoint"], [folder]
    )
    learner = [line for line in lines if not line["expert"]]
    assert 0 < len(probe["p"]) <= len(learner) < len(lines)
    assert ((probe["p"] >= 0) & (probe["p"] <= 1)).all() and not (probe["begins"] & ~probe["acts"]).any()


def test_held_out_pointer_error_from_the_val_sessions(tmp_path: Path, init: Path) -> None:
    first = tmp_path / "first"
    run_dagger(config(first, init, iterations=1))
    demos = tmp_path / "demos"
    session = next((first / "iter-000" / "games").glob("dagger-i*"))
    shutil.copytree(session, demos / session.name)
    (demos / "splits.json").write_text(json.dumps({session.name: "val"}))  # the demonstrations' held-out set
    second = tmp_path / "second"
    summary = run_dagger(config(second, init, iterations=1, seed=10, data=str(demos), benchmark_pairs=1))
    pointer = summary["iterations"][0]["held_out_pointer"]
    assert 0 <= pointer["pointer_exact"] <= pointer["pointer_within_8"] <= 1
    # The quick benchmark: the new checkpoint's first pair of the presets suite, and OUT/bench's
    # leaderboard naming it (scripts/dagger_curve.py reads it).
    bench = summary["iterations"][0]["benchmark"]
    assert bench["games"] == 2 and bench["wins"] + bench["draws"] + bench["losses"] == 2
    board = json.loads((second / "bench" / "leaderboard.json").read_text())
    players = board["suites"]["presets"]["players"].values()
    assert [p["checkpoint"] for p in players] == [summary["iterations"][0]["checkpoint"]]


def test_each_iterations_learning_rate_starts_anew_and_decays(tmp_path: Path, init: Path) -> None:
    # Each iteration continues from the last weights with a fresh optimizer: by default its rate starts
    # at the start's own (train-bc's default for this untrained init) and falls to 0 over its steps.
    def trained(**changes):
        cfg = config(tmp_path / "o", init, steps=40, **changes)
        return bc_settings(cfg, 1, init, tmp_path / "data", tmp_path / "bc")

    plain = trained()
    assert (plain.lr, plain.lr_decay_steps, plain.max_steps) == (3e-4, 40, 40)
    assert plain.init == str(init) and plain.seed == 1
    assert (trained(lr=1e-4).lr, trained(lr=1e-4).lr_decay_steps) == (1e-4, 40)
    assert trained(lr_decay=False).lr_decay_steps == 0  # constant, as runs before the option trained
    assert STORED_BEFORE["lr_decay"] is False and STORED_BEFORE["beta_segment"] == 1


def test_held_inputs_and_labels_reach_train_bc(tmp_path: Path, init: Path) -> None:
    # (A run with them: test_two_iterations_label_grow_train_and_resume.)
    held = bc_settings(config(tmp_path / "o", init, held_inputs=True), 0, init, tmp_path, tmp_path)
    assert held.policy["held_inputs"] == 1
    assert STORED_BEFORE["held_inputs"] is False and STORED_BEFORE["labels"] == "all"
    played = bc_settings(config(tmp_path / "p", init, labels="played"), 0, init, tmp_path, tmp_path)
    assert played.expert_labels == "played"
    with pytest.raises(UserError, match="--labels must be all or played"):
        config(tmp_path / "q", init, labels="some")


def test_bad_input_is_one_line(tmp_path: Path, init: Path) -> None:
    with pytest.raises(UserError, match="even"):
        config(tmp_path / "o", init, games=3)
    with pytest.raises(UserError, match="training maps only"):
        config(tmp_path / "o", init, seed=998, iterations=2, games=4)
    with pytest.raises(UserError, match="beta0"):
        config(tmp_path / "o", init, beta0=1.5)
    with pytest.raises(UserError, match="--beta-segment"):
        config(tmp_path / "o", init, beta_segment=0)
    with pytest.raises(UserError, match="--lr"):
        config(tmp_path / "o", init, lr=-1.0)
    with pytest.raises(UserError, match="--takeover"):
        config(tmp_path / "o", init, takeover=1.5)
    with pytest.raises(UserError, match="no such checkpoint"):
        config(tmp_path / "o", tmp_path / "missing.pt")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "hoi4_arena.cli",
            "dagger",
            str(tmp_path / "o"),
            "--init",
            str(init),
            "--games",
            "3",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and run.stderr.strip().count("\n") == 0 and "even" in run.stderr


SEARCH = dict(
    expert="search",
    search_k=1,
    search_days=3,
    # Not the scripted player's draw on map seed 0 (near): a fallback to it cannot pass for the search.
    search_kinds=("deep", "none"),
    search_delays=(0.0,),
    search_replans=(2.0,),
    search_aims=(),
)


def test_expert_iteration_labels_with_the_search_player(tmp_path: Path, init: Path) -> None:
    # beta = 1: every decision plays the search player's label, so the game is the search player's own
    # and its labels are the inputs played, decision by decision.
    out = tmp_path / "expert"
    summary = run_dagger(config(out, init, iterations=1, steps=1, beta0=1.0, **SEARCH))
    assert summary["iterations"][0]["expert"] == "search"
    sessions = sorted((out / "iter-000" / "games").glob("dagger-i*"))
    assert len(sessions) == 2
    for folder in sessions:
        labels = read_labels(folder, "expert")
        assert labels.index["source"] == "expert" and labels.index["expert"] == "search"
        # The opening the search chose among its candidates, not the scripted player's own draw.
        assert labels.index["expert_strategy"].split("+")[0] in ("deep", "none")
        assert labels.index["searches"] >= 1
        manifest = json.loads((folder / "manifest.json").read_text())
        searches = manifest["extra"]["player"]["searches"]
        assert searches[0]["point"] == "opening" and len(searches[0]["means"]) == 2
        decisions = list(SessionReader(folder).decisions(images=False, arena=False))
        lines = [json.loads(line) for line in (folder / "labels-expert.jsonl").read_text().splitlines()]
        assert len(decisions) == len(labels) > 15
        for decision, line in zip(decisions, lines, strict=True):
            if line["expert"] is not None:
                assert line["expert"] and np.array_equal(decision.tokens, labels.tokens[decision.index])
        assert labels.keep().sum() >= len(labels) - 1
    rows = [
        json.loads(line) for line in (out / "iter-000" / "games" / "results.jsonl").read_text().splitlines()
    ]
    assert {r["expert"] for r in rows} == {"search"} and all(
        r["expert_decisions"] == r["decisions"] for r in rows
    )
    # The expert is one of the run's settings: resumed with another, the run is refused.
    with pytest.raises(UserError, match="expert"):
        run_dagger(config(out, init, iterations=1, steps=1, beta0=1.0))
    with pytest.raises(UserError, match="search_kinds"):
        run_dagger(
            config(out, init, iterations=1, steps=1, beta0=1.0, **{**SEARCH, "search_kinds": ("deep",)})
        )


def test_a_run_stored_before_the_expert_option_resumes_as_scripted(tmp_path: Path, init: Path) -> None:
    out = tmp_path / "old"
    out.mkdir()
    settings = config(out, init).settings()
    del settings["expert"], settings["takeover"]  # dagger.json as runs wrote it before these options
    (out / "dagger.json").write_text(json.dumps({"settings": settings, "command": "dagger"}))
    open_run(out, "dagger.json", config(out, init).settings(), "dagger", added=STORED_BEFORE)
    with pytest.raises(UserError, match="expert"):
        open_run(out, "dagger.json", config(out, init, **SEARCH).settings(), "dagger", added=STORED_BEFORE)
    with pytest.raises(UserError, match="takeover"):
        open_run(
            out, "dagger.json", config(out, init, takeover=0.5).settings(), "dagger", added=STORED_BEFORE
        )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"expert": "oracle"}, "--expert must be scripted or search"),
        ({"expert": "search", "search_kinds": ("sideways",)}, "--search-kinds must be among"),
        ({"expert": "search", "search_k": 0}, "--search-k must be"),
        ({"expert": "search", "search_value": "value.pt"}, "give --search-days N too"),
        ({"expert": "search", "search_value": "missing.pt", "search_days": 5}, "no such checkpoint file"),
        ({"search_value": "value.pt", "search_days": 5}, "use it with --expert search"),
    ],
)
def test_bad_expert_settings_are_refused(tmp_path: Path, init: Path, changes: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        config(tmp_path / "o", init, **changes)
    assert not (tmp_path / "o").exists()


def test_the_command_refuses_an_unknown_expert_in_one_line(tmp_path: Path, init: Path) -> None:
    # In process (test_bad_input_is_one_line runs the command itself: a UserError is one line on stderr).
    from typer.testing import CliRunner

    from hoi4_arena.cli import app

    for args, message in (
        (["--expert", "oracle"], "--expert must be scripted or search"),
        (["--expert", "search", "--search-kinds", "sideways"], "--search-kinds must be among"),
    ):
        result = CliRunner().invoke(app, ["dagger", str(tmp_path / "o"), "--init", str(init), *args])
        assert isinstance(result.exception, UserError), result.output
        assert message in str(result.exception) and "\n" not in str(result.exception)
        assert not (tmp_path / "o").exists()
