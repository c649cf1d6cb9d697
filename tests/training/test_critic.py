"""train-critic: a tiny critic overfits tiny recorded games, its checkpoint gives advantages, and bad input
(another architecture, no ARENA logs, a value head never trained) is refused with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from recorded_games import SESSIONS, with_winners
from test_bc_train import TINY
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.data.loader import WindowLoader
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import save_checkpoint
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Policy
from hoi4_arena.training.advantage import ADVANTAGES, read_advantages
from hoi4_arena.training.critic import critic_values, data_settings, load_critic, train_critic
from hoi4_arena.training.value_config import CriticConfig
from hoi4_arena.training.value_data import value_games

runner = CliRunner()
# Seed 0 and seed 1 both won by BLU: the BLU sessions are wins (1), the RED ones losses (0).
WINNERS = dict(zip(SESSIONS, ("BLU", "BLU", "BLU", "BLU"), strict=True))
FAST = dict(policy=TINY, window=8, batch=4, threads=1, chunk=0, hold_gb=1.0)


@pytest.mark.slow
def test_a_tiny_critic_overfits_tiny_games_and_gives_advantages(recorded_games: Path, tmp_path: Path) -> None:
    data = with_winners(recorded_games, tmp_path / "games", WINNERS)
    out = tmp_path / "critic"
    summary = train_critic(CriticConfig(str(data), str(out), epochs=8, lr=1e-3, **FAST))
    assert summary["games"] == {"train": 2, "val": 2, "held_out_by": "maps"}
    assert summary["history"][-1]["train_bce"] < 0.25 < summary["history"][0]["train_bce"]
    assert set(summary["held_out"]["by_day"]) == {"10", "30", "60", "100"}
    assert json.loads((out / "report.json").read_text())["weights_sha256"] == summary["weights_sha256"]
    # On the games it trained on, every decision's value is on the winner's side of 0.5.
    checkpoint = load_critic(out / "critic.pt", torch.device("cpu"))
    games = value_games(data, seed=0)
    settings = data_settings(checkpoint.policy, window=8, lead_in=0, batch=4, hold_gb=0, seed=0)
    with WindowLoader(settings) as loader:
        values = critic_values(
            checkpoint.policy, loader, [g.source for g in games.train], torch.device("cpu")
        )
    for game in games.train:
        right = (values[game.id] > 0.5) == (game.outcome == 1.0)
        assert right.mean() >= 0.9, (game.id, values[game.id].mean())
        assert abs(values[game.id].mean() - game.outcome) < 0.2
    # Its advantages, through the command: written, and from these values.
    result = runner.invoke(
        app, ["advantage", str(data), "--critic", str(out / "critic.pt"), "--threads", "1"]
    )
    assert result.exit_code == 0, result.output
    for game in games.train:
        content = json.loads((Path(game.source.path) / ADVANTAGES).read_text())
        assert content["values"] == pytest.approx(values[game.id], abs=1e-5)
        assert content["value_model"]["kind"] == "critic"
        assert isinstance(read_advantages(game.source), np.ndarray)


def test_train_critic_refuses_bad_input_and_writes_nothing(marker_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    # No ARENA log in the marker game's sessions: nothing says who won.
    with pytest.raises(UserError, match="no session .* has an outcome to learn from"):
        train_critic(CriticConfig(str(marker_data), str(out), **FAST))
    # --init of another encoder or layout than asked for; a file that is no checkpoint.
    policy = save_checkpoint(tmp_path / "policy.pt", Policy(PolicyConfig(**TINY)))
    with pytest.raises(UserError, match="another architecture: encoder 'cnn' \\(asked for 'cnn_clip'\\)"):
        train_critic(CriticConfig(str(marker_data), str(out), init=str(policy), encoder="cnn_clip"))
    with pytest.raises(UserError, match="another architecture: layout 'cpu' \\(asked for 'full'\\)"):
        train_critic(CriticConfig(str(marker_data), str(out), init=str(policy), layout="full"))
    (tmp_path / "junk.pt").write_bytes(b"junk")
    with pytest.raises(UserError, match="cannot read checkpoint"):
        train_critic(CriticConfig(str(marker_data), str(out), init=str(tmp_path / "junk.pt")))
    content = torch.load(policy, weights_only=True)
    content["layout"]["version"] = "views0-other"
    torch.save(content, tmp_path / "old.pt")
    with pytest.raises(UserError):
        train_critic(CriticConfig(str(marker_data), str(out), init=str(tmp_path / "old.pt")))
    assert not out.exists()
    # Settings that cannot go together.
    with pytest.raises(UserError, match="--trained value .* --init"):
        CriticConfig(str(marker_data), str(out), trained="value")
    with pytest.raises(UserError, match="leave out --policy"):
        CriticConfig(str(marker_data), str(out), init=str(policy), policy={"width": 8})
    # A plain policy checkpoint is no critic: its value head was never trained.
    with pytest.raises(UserError, match="value head was never trained"):
        load_critic(policy, torch.device("cpu"))
    result = runner.invoke(
        app, ["train-critic", str(marker_data), str(out), "--policy", "width=8", "--threads", "1"]
    )
    assert isinstance(result.exception, UserError) and "no session" in str(result.exception)
    assert not out.exists()
