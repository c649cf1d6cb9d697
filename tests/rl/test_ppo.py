"""train-ppo (rl/ppo.py): PACT's weighting by hand, the windows, learning on a tiny game, exact resume,
bad input refused with nothing written."""

from __future__ import annotations

import math
import signal
from pathlib import Path

import numpy as np
import pytest
import torch

from hoi4_arena.errors import UserError
from hoi4_arena.play import rollout_game
from hoi4_arena.rl import ppo
from hoi4_arena.rl.ppo import pact_value_loss, train_ppo, windows_of
from hoi4_arena.rl.ppo_config import PPOConfig
from hoi4_arena.screen.tokens import NONE
from tiny import tiny_ppo


def test_pact_weights_each_value_loss_by_the_clipped_ratio() -> None:
    # Values 0.5 and 0.75 (logits 0 and ln 3), targets 1 and 0: BCEs ln 2 and ln 4. The updated actor's
    # ratios are 2 and 10, the second clipped to 6; a third decision is masked out (its ratio 1/2 and
    # BCE do not count). (2 ln 2 + 6 ln 4) / 2 = 7 ln 2.
    logit = torch.tensor([0.0, math.log(3), 1.0])
    target = torch.tensor([1.0, 0.0, 0.0])
    old = torch.tensor([-5.0, -7.0, -1.0])
    new = old + torch.tensor([math.log(2), math.log(10), -math.log(2)])
    mask = torch.tensor([1.0, 1.0, 0.0])
    loss = pact_value_loss(logit, target, new, old, mask, max_ratio=6.0)
    assert loss.item() == pytest.approx(7 * math.log(2), rel=1e-6)
    # The weights carry no gradient: only the value's logits learn.
    logit.requires_grad_(True)
    new.requires_grad_(True)
    pact_value_loss(logit, target, new, old, mask).backward()
    assert new.grad is None or not new.grad.any()
    assert logit.grad[0].item() == pytest.approx(2 * (0.5 - 1) / 2)
    assert logit.grad[2].item() == 0


def test_windows_cut_at_game_starts_and_every_window() -> None:
    first = np.zeros((7, 2), dtype=bool)
    first[0] = True
    first[3, 1] = True  # slot 1's next game begins at decision 3
    assert windows_of(first, 4) == [(0, 0, 4), (0, 4, 3), (1, 0, 3), (1, 3, 4)]


def _config(out: Path, tiny: dict, **changes) -> PPOConfig:
    return tiny_ppo(out, policy=tiny, **changes)


@pytest.mark.slow
def test_a_tiny_run_raises_a_shaped_return(tmp_path: Path, tiny: dict, monkeypatch) -> None:
    """A random tiny policy cannot move the game's own terms in seconds (it would have to form an army
    through the screen), so the game's `setup` term is replaced here by one it can: the share of no-op
    tokens in each decision. The run must raise it well above its start."""
    earned: list[float] = []
    step = rollout_game.RolloutGame.step

    def shaped(self, tokens, next_plan, rival=None):
        answer = step(self, tokens, next_plan, rival)
        answer.rewards["setup"] = float(np.mean(tokens[:, 0] == NONE))
        earned.append(answer.rewards["setup"])
        return answer

    monkeypatch.setattr(rollout_game.RolloutGame, "step", shaped)
    settings = dict(steps=16, window=8, max_days=4, reward={"setup": 1.0}, gamma=0.0, lr=5e-2, epochs=3)
    summary = train_ppo(_config(tmp_path / "run", tiny, updates=3, **settings))
    per_update = np.array(earned).reshape(3, -1).mean(axis=1)  # 2 games x 16 decisions an update
    assert summary["updates"] == 3
    assert per_update[-1] > 3 * per_update[0] + 0.05, per_update


@pytest.mark.slow
def test_resume_gives_the_uninterrupted_run(tmp_path: Path, tiny: dict, monkeypatch) -> None:
    # A policy shown the buttons and keys its inputs hold: the resumed games follow them again over
    # their replayed tokens (a resume that did not would see other inputs and train other weights).
    tiny = {**tiny, "held_inputs": 1}
    whole = train_ppo(_config(tmp_path / "whole", tiny))
    part = _config(tmp_path / "part", tiny, updates=1)
    train_ppo(part)
    resumed = train_ppo(part, resume=True, changes={"updates": 2})
    assert resumed["updates"] == 2
    assert resumed["weights_sha256"] == whole["weights_sha256"]

    # Ctrl+C during update 1 of 2 (no periodic save due): the run ends after that update, saves it, and
    # the resumed run ends on the uninterrupted weights.
    game_stats = ppo._game_stats

    def ctrl_c_once(*args):
        monkeypatch.setattr(ppo, "_game_stats", game_stats)
        signal.raise_signal(signal.SIGINT)  # what Ctrl+C sends
        return game_stats(*args)

    monkeypatch.setattr(ppo, "_game_stats", ctrl_c_once)
    stopped = _config(tmp_path / "stopped", tiny, save_every=3600.0)
    summary = train_ppo(stopped)
    assert summary["stopped"] == "interrupt" and summary["updates"] == 1
    assert (tmp_path / "stopped" / "update-0001.pt").is_file()
    assert train_ppo(stopped, resume=True)["weights_sha256"] == whole["weights_sha256"]
    # The checkpoints load as policies (play-policy, evaluate).
    from hoi4_arena.models.checkpoint import load_checkpoint

    assert load_checkpoint(tmp_path / "part" / "last.pt").extra["update"] == 2

    # A resume with changed settings is refused, and nothing is written.
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "part").iterdir()}
    with pytest.raises(UserError, match="--lr"):
        train_ppo(part, resume=True, changes={"lr": 1e-2, "updates": 3})
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "part").iterdir()} == before
    with pytest.raises(UserError, match="already holds a train-ppo run"):
        train_ppo(part)


def test_bad_input_is_refused_before_anything_is_written(tmp_path: Path, tiny: dict, make_checkpoint) -> None:
    out = tmp_path / "run"
    with pytest.raises(UserError, match="unknown reward term 'gold'"):
        _config(out, tiny, reward={"gold": 1.0})
    full = make_checkpoint("full", layout="full")
    with pytest.raises(UserError, match="layout"):
        train_ppo(_config(out, {}, init=str(full)))
    with pytest.raises(UserError, match="clip encoders"):
        train_ppo(_config(out, {}, init=str(make_checkpoint("clip", encoder="cnn_clip"))))
    with pytest.raises(UserError, match="--bc-kl"):
        _config(out, tiny, bc_kl=0.1)
    with pytest.raises(UserError, match="nothing to resume"):
        train_ppo(_config(out, tiny), resume=True)
    assert not out.exists()
