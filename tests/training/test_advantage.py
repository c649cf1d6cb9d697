"""Advantages: the n-step formula by hand, the AWR weights, the files beside each session, train-bc
--advantage weighting the loss exactly, and the refusals."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from recorded_games import SESSIONS, file_hashes, with_winners
from test_bc_train import config as bc_config
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.data.loader import DataSettings, WindowLoader
from hoi4_arena.data.shuffle import WindowRef
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import save_checkpoint, weights_sha256
from hoi4_arena.models.policy import Policy
from hoi4_arena.training.advantage import (
    ADVANTAGES,
    AdvantageWeights,
    advantage_payload,
    awr_weights,
    compute_advantages,
    n_step_advantages,
    read_advantages,
    write_advantages,
)
from hoi4_arena.training.bc import train_bc
from hoi4_arena.training.state_value import load_state_value, train_state_value
from hoi4_arena.training.value_config import AdvantageConfig, StateValueConfig
from hoi4_arena.training.value_data import read_game

runner = CliRunner()
WINNERS = dict(zip(SESSIONS, ("BLU", "BLU", "RED", "RED"), strict=True))
MODEL = {"kind": "test", "checkpoint": "-", "weights_sha256": "-"}


def test_n_step_advantages_by_hand() -> None:
    values = [0.5, 0.6, 0.4, 0.8]
    # h = 2: V2 - V0, V3 - V1, then the outcome (1) in place of V4 and V5.
    assert n_step_advantages(values, 1.0, 2) == pytest.approx([-0.1, 0.2, 0.6, 0.2])
    assert n_step_advantages(values, 0.0, 1) == pytest.approx([0.1, -0.2, 0.4, -0.8])
    assert n_step_advantages(values, 0.5, 25) == pytest.approx([0.0, -0.1, 0.1, -0.3])
    assert len(n_step_advantages([], 1.0, 3)) == 0


def test_awr_weights_are_exp_of_a_over_beta_clipped() -> None:
    a = np.array([-1.0, 0.0, 0.1, 0.2, 5.0, 1e6])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way to the clip
        got = awr_weights(a, beta=0.5, max_weight=3.0)
    assert got == pytest.approx([math.exp(-2), 1.0, math.exp(0.2), math.exp(0.4), 3.0, 3.0], rel=1e-12)
    assert awr_weights(np.array([-1000.0]), 0.1, 20.0)[0] == 0.0


def write_constant(sources: list, advantage: float) -> None:
    for source in sources:
        a = np.full(source.decisions, advantage)
        write_advantages(source.path, advantage_payload(source.id, a, a, 1.0, 25, MODEL))


def test_a_batch_gets_the_weights_of_its_own_decisions(marker_data: Path) -> None:
    source = find_sessions(marker_data).train[0]
    a = np.linspace(-0.3, 0.3, source.decisions)
    write_advantages(source.path, advantage_payload(source.id, a, a, 1.0, 25, MODEL))
    settings = DataSettings(window=4, lead_in=3, batch=4)
    weights = AdvantageWeights([source], settings, beta=0.2, max_weight=2.0)
    spans = settings.spans(source)
    with WindowLoader(settings, 0) as loader:
        batches = list(loader.ordered([source], [WindowRef(0, i) for i in range(len(spans))]))
    expected_all = np.minimum(np.exp(np.round(a, 6) / 0.2), 2.0)  # the file keeps 6 decimals
    for batch in batches:
        got = weights.for_batch(batch)
        for row, (_, span) in enumerate(batch.keys):
            start = spans[span].start
            want = expected_all[start : start + got.shape[1]]
            assert got[row, : len(want)] == pytest.approx(want, rel=1e-6)
            assert not got[row, len(want) :].any()  # padding past the end


def tb_losses(folder: Path) -> list[float]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder / "tb"))
    events.Reload()
    return [e.value for e in events.Scalars("train/loss")]


@pytest.mark.slow
def test_train_bc_weights_each_decisions_loss_by_its_awr_weight(marker_data: Path, tmp_path: Path) -> None:
    data = find_sessions(marker_data)
    plain = train_bc(bc_config(marker_data, tmp_path / "plain", max_steps=2))
    # A = 0: every weight is exp(0) = 1, so the run is plain BC bit for bit.
    write_constant(data.train, 0.0)
    ones = train_bc(bc_config(marker_data, tmp_path / "ones", max_steps=2, advantage=True))
    assert ones["weights_sha256"] == plain["weights_sha256"]
    assert ones["advantage"]["mean_weight"] == 1.0
    # A = beta ln 3: weight 3 for every decision, so the first step's loss (same weights, same batch) is 3x.
    write_constant(data.train, 0.1 * math.log(3.0))
    train_bc(bc_config(marker_data, tmp_path / "three", max_steps=1, advantage=True, beta=0.1))
    assert tb_losses(tmp_path / "three")[0] == pytest.approx(3 * tb_losses(tmp_path / "plain")[0], rel=1e-5)
    # Clipped at max_weight: A = 1 with beta 0.1 would weigh e^10; --max-weight 2 makes it 2x.
    write_constant(data.train, 1.0)
    clipped = train_bc(bc_config(marker_data, tmp_path / "clip", max_steps=1, advantage=True, max_weight=2.0))
    assert clipped["advantage"]["clipped_share"] == 1.0
    assert tb_losses(tmp_path / "clip")[0] == pytest.approx(2 * tb_losses(tmp_path / "plain")[0], rel=1e-5)
    # Weight 0 everywhere: no gradient, so the weights stay the initial ones.
    write_constant(data.train, -1000.0)
    zero = train_bc(bc_config(marker_data, tmp_path / "zero", max_steps=2, advantage=True))
    initial = Policy(bc_config(marker_data, tmp_path / "x").policy_config)
    assert zero["weights_sha256"] == weights_sha256(initial.state_dict())


def test_train_bc_refuses_sessions_without_usable_advantages(marker_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(
        UserError, match=r"--advantage: 1 of 1 training session.*train \(no advantages.json\)"
    ):
        train_bc(bc_config(marker_data, out, advantage=True))
    assert not out.exists()
    source = find_sessions(marker_data).train[0]
    write_constant([source], 0.1)
    path = Path(source.path) / ADVANTAGES
    path.write_text(path.read_text().replace('"outcome": 1.0', '"outcome": 0.0'))
    assert "checksum" in read_advantages(source)
    with pytest.raises(UserError, match="damaged"):
        train_bc(bc_config(marker_data, out, advantage=True))
    a = np.zeros(source.decisions + 3)
    write_advantages(source.path, advantage_payload(source.id, a, a, 1.0, 25, MODEL))
    with pytest.raises(UserError, match="another recording"):
        train_bc(bc_config(marker_data, out, advantage=True))
    assert not out.exists()
    with pytest.raises(UserError, match="beta must be a finite number > 0"):
        bc_config(marker_data, out, advantage=True, beta=0.0)


@pytest.mark.slow
def test_advantage_from_the_state_value_is_written_beside_each_session(
    recorded_games: Path, tmp_path: Path
) -> None:
    data = with_winners(recorded_games, tmp_path / "data", WINNERS)
    model_path = tmp_path / "sv" / "state-value.pt"
    train_state_value(StateValueConfig(str(data), str(tmp_path / "sv"), steps=30))
    before = {s: file_hashes(data / s) for s in SESSIONS}
    result = runner.invoke(app, ["advantage", str(data), "--state-value", str(model_path), "--horizon", "5"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["sessions"] == 4 and summary["horizon"] == 5
    model = load_state_value(model_path)
    sources = {s.id: s for s in find_sessions(data, ("scripted",)).train}
    for session in SESSIONS:
        after = file_hashes(data / session)
        assert {k: v for k, v in after.items() if k != ADVANTAGES} == before[
            session
        ]  # the session's own files
        content = json.loads((data / session / ADVANTAGES).read_text())
        game = read_game(sources[session])
        values = model.net.predict(game.features)
        assert content["values"] == pytest.approx(values, abs=1e-6)
        assert content["advantages"] == pytest.approx(n_step_advantages(values, game.outcome, 5), abs=1e-6)
        assert content["outcome"] == game.outcome and content["value_model"]["kind"] == "state-value"
        assert read_advantages(sources[session]) == pytest.approx(content["advantages"])


@pytest.mark.slow
def test_advantage_refuses_bad_input_and_writes_nothing(
    recorded_games: Path, marker_data: Path, tmp_path: Path
) -> None:
    data = with_winners(recorded_games, tmp_path / "games", WINNERS)  # marker_data is tmp_path / "data"
    train_state_value(StateValueConfig(str(data), str(tmp_path / "sv"), steps=5))
    state_value = str(tmp_path / "sv" / "state-value.pt")
    policy = save_checkpoint(
        tmp_path / "policy.pt", Policy(bc_config(marker_data, tmp_path / "x").policy_config)
    )
    with pytest.raises(UserError, match="one value model"):
        AdvantageConfig(str(data))
    with pytest.raises(UserError, match="one value model"):
        AdvantageConfig(str(data), critic=str(policy), state_value=state_value)
    cases = [
        (AdvantageConfig(str(data), state_value=str(policy)), "not a state-value checkpoint"),
        (AdvantageConfig(str(data), critic=state_value), "is a state-value checkpoint"),
        (AdvantageConfig(str(data), critic=str(policy)), "value head was never trained"),
        (AdvantageConfig(str(marker_data), state_value=state_value), "no session .* has an outcome"),
    ]
    for config, message in cases:
        with pytest.raises(UserError, match=message):
            compute_advantages(config)
    assert not list(data.glob(f"*/{ADVANTAGES}")) and not list(marker_data.glob(f"*/{ADVANTAGES}"))
