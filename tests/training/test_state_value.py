"""The state-value baseline and its data: outcomes, the per-decision ARENA state, the by-day report, a fit
that learns a synthetic rule, and train-state-value end to end on tiny recorded games."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from recorded_games import SESSIONS, with_winners
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.data.sources import SessionSource
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import SETUP_STEPS, setup_milestones
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.rollout import Choice, play_choice, rollout
from hoi4_arena.training.state_value import (
    StateValueModel,
    StateValueNet,
    fit_state_value,
    load_state_value,
    train_state_value,
    world_value,
)
from hoi4_arena.training.value_config import StateValueConfig
from hoi4_arena.training.value_data import FEATURES, Game, read_game, session_outcome, value_games
from hoi4_arena.training.value_report import report

runner = CliRunner()
WINNERS = dict(zip(SESSIONS, ("BLU", "BLU", "RED", "RED"), strict=True))


def test_the_outcome_is_seen_from_the_recorded_side() -> None:
    assert session_outcome("BLU", "BLU") == 1.0
    assert session_outcome("RED", "BLU") == 0.0
    assert session_outcome("draw", "RED") == 0.5
    assert session_outcome(None, "RED") is None
    assert session_outcome("BLU", None) is None


def test_the_report_scores_each_game_once_at_each_day() -> None:
    # Game a: a win, predicted 0.4 on day 10 and 0.9 from day 30 on; game b: a loss that ends on day 40.
    days_a = np.array([0.0, 10.0, 10.0, 30.0, 60.0, 100.0])
    p_a = np.array([0.5, 0.4, 0.45, 0.9, 0.9, 0.9])
    days_b = np.array([0.0, 12.0, 35.0, 40.0])
    p_b = np.array([0.5, 0.2, 0.6, 0.1])
    got = report([p_a, p_b], [days_a, days_b], [1.0, 0.0], base=0.5)
    day10, day30, day60 = got["by_day"]["10"], got["by_day"]["30"], got["by_day"]["60"]
    assert day10["games"] == 2 and day10["accuracy"] == pytest.approx(0.5)  # a: 0.4 wrong, b: 0.2 right
    assert day10["brier"] == pytest.approx(((0.4 - 1) ** 2 + 0.2**2) / 2)
    assert day30["games"] == 2 and day30["accuracy"] == pytest.approx(0.5)  # a: 0.9 right, b: 0.6 wrong
    assert day60["games"] == 1 and day60["accuracy"] == 1.0  # b ended before day 60
    assert day10["base_brier"] == pytest.approx(0.25)
    assert got["decisions"]["count"] == 10
    assert sum(row["count"] for row in got["calibration"]) == 10


def synthetic_games(count: int, seed: int) -> list[Game]:
    """Games whose outcome is a rule of their state: the side with more strength on day 5 wins."""
    rng = np.random.default_rng(seed)
    games = []
    for i in range(count):
        days = np.repeat(np.arange(20, dtype=np.float64), 5)
        features = rng.normal(size=(len(days), len(FEATURES))).astype(np.float32)
        features[:, FEATURES.index("day")] = days
        share = rng.uniform(0.2, 0.8)
        features[:, FEATURES.index("own_strength_share")] = share + rng.normal(0, 0.02, len(days))
        outcome = 1.0 if share > 0.5 else 0.0
        source = SessionSource(f"/nowhere/{seed}-{i}", f"g{seed}-{i}", "scripted", "train", len(days))
        games.append(Game(source, outcome, "BLU", f"m{i}", days, features))
    return games


def test_the_state_value_learns_a_rule_of_the_state() -> None:
    config = StateValueConfig("unused", "unused", steps=300)
    net, loss = fit_state_value(synthetic_games(60, seed=1), config)
    held = synthetic_games(40, seed=2)
    got = report(
        [net.predict(g.features) for g in held], [g.days for g in held], [g.outcome for g in held], 0.5
    )
    assert got["decisions"]["accuracy"] >= 0.95
    assert got["by_day"]["10"]["accuracy"] >= 0.95
    assert got["decisions"]["brier"] < 0.1
    assert loss < 0.3


@pytest.mark.slow
def test_the_decision_states_follow_the_arena_log(recorded_games: Path) -> None:
    data = with_winners(recorded_games, recorded_games.parent / "states", {SESSIONS[0]: "BLU"})
    source = SessionSource(str(data / SESSIONS[0]), SESSIONS[0], "scripted", "train", 0)
    game = read_game(source)
    assert isinstance(game, Game)
    reader = SessionReader(source.path)
    decisions = list(reader.decisions(images=False))
    assert len(game.days) == len(decisions) == len(game.features)
    assert game.outcome == 1.0 and game.side == "BLU" and game.group == "plains:0"
    # Day and divisions as the reader's own fold of the log gives them, decision by decision.
    for decision, day, row in zip(decisions, game.days, game.features, strict=True):
        assert day == decision.arena.h / 24
        blu = decision.arena.sides.get("BLU")
        assert row[FEATURES.index("own_divisions")] == (blu.divisions if blu else 0)
    assert game.days[-1] >= 19  # a 20-day game
    # The setup flags at the end are gamelog.setup_milestones over the whole log.
    final = setup_milestones([r.line for r in reader.log_records], "BLU")
    for step in SETUP_STEPS:
        assert game.features[-1, FEATURES.index(f"own_setup_{step}")] == float(final[step] is not None)


@pytest.mark.slow
def test_train_state_value_writes_a_model_and_its_report(recorded_games: Path, tmp_path: Path) -> None:
    data = with_winners(recorded_games, tmp_path / "data", WINNERS)
    out = tmp_path / "sv"
    result = runner.invoke(app, ["train-state-value", str(data), str(out), "--steps", "50"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["games"] == {"train": 2, "val": 2, "held_out_by": "maps"}
    assert set(summary["held_out"]["by_day"]) == {"10", "30", "60", "100"}
    assert summary["held_out"]["by_day"]["10"]["games"] == 2
    assert summary["held_out"]["by_day"]["30"]["games"] == 0  # the games end on day 20
    assert json.loads((out / "report.json").read_text())["weights_sha256"] == summary["weights_sha256"]
    model = load_state_value(out / "state-value.pt")
    assert model.weights_sha256 == summary["weights_sha256"]
    # The same data, seed and settings give the same split and weights.
    again = train_state_value(StateValueConfig(str(data), str(tmp_path / "again"), steps=50))
    assert again["weights_sha256"] == summary["weights_sha256"]


@pytest.mark.slow
def test_bad_input_is_refused_and_nothing_is_written(recorded_games: Path, tmp_path: Path) -> None:
    # No ARENA log: nothing says who won.
    data = with_winners(recorded_games, tmp_path / "no-log", {SESSIONS[0]: "BLU", SESSIONS[2]: "RED"})
    for session in (SESSIONS[0], SESSIONS[2]):
        (data / session / "arena-log.jsonl").write_text("")
    out = tmp_path / "out"
    with pytest.raises(UserError, match="no session .* has an outcome to learn from .*no ARENA log"):
        train_state_value(StateValueConfig(str(data), str(out)))
    assert not out.exists()
    # Games that did not end.
    data = with_winners(recorded_games, tmp_path / "no-winner", {SESSIONS[0]: None, SESSIONS[2]: None})
    with pytest.raises(UserError, match="did not end"):
        train_state_value(StateValueConfig(str(data), str(out)))
    assert not out.exists()
    # One map only: nothing to hold out.
    data = with_winners(recorded_games, tmp_path / "one-map", {SESSIONS[0]: "BLU", SESSIONS[1]: "BLU"})
    with pytest.raises(UserError, match="nothing to hold out"):
        value_games(data)
    # A state-value file of another feature layout, and a file that is no state-value model.
    good = tmp_path / "sv"
    train_state_value(
        StateValueConfig(str(with_winners(recorded_games, tmp_path / "ok", WINNERS)), str(good), steps=5)
    )
    content = torch.load(good / "state-value.pt", weights_only=True)
    content["features"] = [*content["features"][:-1], "something_else"]
    torch.save(content, tmp_path / "other.pt")
    with pytest.raises(UserError, match="another ARENA feature layout"):
        load_state_value(tmp_path / "other.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(UserError, match="cannot read state-value checkpoint"):
        load_state_value(tmp_path / "junk.pt")
    with pytest.raises(UserError, match="exists; choose another output folder"):
        train_state_value(StateValueConfig(str(tmp_path / "ok"), str(good)))
    with pytest.raises(UserError, match="val_share"):
        StateValueConfig("d", "o", val_share=1.5)


def test_world_value_scores_a_search_rollout_from_its_arena_facts() -> None:
    # A linear state value on one fact: P(win) = sigmoid(8 * own_controlled_share - 4), 0.5 at the start.
    net = StateValueNet(len(FEATURES), 0)
    with torch.no_grad():
        net.net[0].weight.zero_()
        net.net[0].weight[0, FEATURES.index("own_controlled_share")] = 8.0
        net.net[0].bias.fill_(-4.0)
    score = world_value(StateValueModel(net, {"hidden": 0}, {}, "", "test"))
    with SimGame("river:3", seed=3, ai={"RED": 0.5}, declarer="BLU", news=False, events=False) as game:
        for division in [d for d in game.world.divisions.values() if d.tag == "RED"]:
            game.world.destroy(division)  # attacking takes provinces, holding keeps them as they are
        options = {"days": 15, "score": score}
        held = rollout(game.world, game.ais, "BLU", Choice("none", 0, None), 0, **options)
        attacked = rollout(game.world, game.ais, "BLU", Choice("city", 0, 48), 0, **options)
        world = play_choice(game.world, game.ais, "BLU", Choice("city", 0, 48), 0, days=15)
    assert held == pytest.approx(0.5, abs=1e-6) and attacked > 0.6
    own = sum(1 for tag in world.control[1:] if tag == "BLU")
    assert score(world, "BLU") == pytest.approx(attacked)
    assert attacked == pytest.approx(1 / (1 + np.exp(-(8 * own / world.n_provinces - 4))), abs=1e-5)
