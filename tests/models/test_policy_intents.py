"""The policy's optional intent input (PolicyConfig.intents, train-bc --skills): off by default and then
the policy is the one it was, bit for bit; on, the intent reaches the outputs on every path and the
checkpoint keeps it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hoi4_arena.models.checkpoint import Provenance, load_checkpoint, save_checkpoint, weights_sha256
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Observation, Policy
from hoi4_arena.players.intents import INTENTS
from tiny import TINY

# Computed with the code before the intent input existed (main at 84a21c5): the same config must keep
# drawing the same weights and giving the same scores.
DEFAULT_SHA256 = "ffb347c8ebeb247fca273298dceb1c078bf0952ac086247d68127f1a545cf078"
DEFAULT_LOGP = [-39.50802993774414, -52.28525161743164, -39.530906677246094]
DEFAULT_VALUE = [0.46184033155441284, 0.47177645564079285, 0.47658777236938477]
DEFAULT_KEYS = [
    "cell_dim", "cell_pool", "cells", "encoder", "fovea_dim", "freeze_blocks", "head_dim", "hidden",
    "layout", "memory", "position_dim", "seed", "speeds", "summary_dim", "weights", "width",
]  # fmt: skip


def pinned_window(
    config: PolicyConfig, intent: torch.Tensor | None = None
) -> tuple[Observation, torch.Tensor]:
    """The window the pinned numbers were computed on: (1, 3) decisions, a move in the second."""
    g = torch.Generator().manual_seed(3)
    s = config.sizes

    def px(*shape: int) -> torch.Tensor:
        return torch.randint(0, 256, (1, 3, *shape), dtype=torch.uint8, generator=g)

    obs = Observation(
        px(*s.global_hw, 3),
        px(4, *s.quadrant_hw, 3),
        px(s.fovea, s.fovea, 3),
        torch.randint(1, 6, (1, 3), generator=g),
        torch.randint(0, 1024, (1, 3, 2), generator=g),
        intent=intent,
    )
    tokens = torch.zeros(1, 3, 8, 3, dtype=torch.long)
    tokens[0, 1, 0] = torch.tensor([1, 300, 700])
    return obs, tokens


def test_the_default_policy_is_unchanged() -> None:
    config = PolicyConfig(layout="cpu", **TINY)
    assert config.intents == 0 and sorted(config.to_dict()) == DEFAULT_KEYS
    policy = Policy(config)
    assert policy.intent_embedding is None
    assert weights_sha256(policy.state_dict()) == DEFAULT_SHA256
    obs, tokens = pinned_window(config)
    with torch.no_grad():
        out = policy(obs, tokens, chunk=None)
    torch.testing.assert_close(out.logp, torch.tensor([DEFAULT_LOGP]), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(out.value, torch.tensor([DEFAULT_VALUE]), rtol=1e-5, atol=1e-5)


def test_the_intent_changes_the_outputs_on_every_path(make_obs, make_tokens) -> None:
    config = PolicyConfig(layout="cpu", intents=len(INTENTS), **TINY)
    policy = Policy(config).eval()
    obs, tokens = make_obs(config, 2, 4), make_tokens(2, 4)
    scores = {}
    for intent in (0, 3):
        obs.intent = torch.full((2, 4), intent, dtype=torch.long)
        with torch.no_grad():
            out = policy(obs, tokens, chunk=2)
            naive = policy.forward_naive(obs, tokens)
        torch.testing.assert_close(out.logp, naive.logp, rtol=1e-4, atol=1e-4)  # the reference agrees
        scores[intent] = out.logp
    assert not torch.allclose(scores[0], scores[3])
    one = make_obs(config, 1)
    heads = []
    for intent in (0, 3):
        one.intent = torch.tensor([intent])
        heads.append(policy.step(one, deterministic=True).state.hidden)
    assert not torch.allclose(heads[0], heads[1])  # play (step/act) reads it too


def test_a_missing_or_wrong_intent_is_refused(make_obs, make_tokens) -> None:
    config = PolicyConfig(layout="cpu", intents=len(INTENTS), **TINY)
    policy = Policy(config)
    obs, tokens = make_obs(config, 1, 2), make_tokens(1, 2)
    with pytest.raises(ValueError, match="conditioned on intents"):
        policy(obs, tokens)
    obs.intent = torch.full((1, 2), len(INTENTS), dtype=torch.long)
    with pytest.raises(ValueError, match="intents must be 0..6"):
        policy(obs, tokens)
    plain = Policy(PolicyConfig(layout="cpu", **TINY))
    obs.intent = torch.zeros(1, 2, dtype=torch.long)
    with pytest.raises(ValueError, match="takes no intent"):
        plain(obs, tokens)
    with pytest.raises(ValueError, match="intents must be an integer >= 0"):
        PolicyConfig(intents=-1)


def test_the_checkpoint_round_trips_the_intents(tmp_path: Path, make_obs, make_tokens) -> None:
    config = PolicyConfig(layout="cpu", intents=len(INTENTS), **TINY)
    policy = Policy(config).eval()
    path = save_checkpoint(tmp_path / "p.pt", policy, provenance=Provenance(data="none", seed=0))
    loaded = load_checkpoint(path)
    assert loaded.config.intents == len(INTENTS) and loaded.config.to_dict()["intents"] == len(INTENTS)
    obs, tokens = make_obs(config, 1, 3), make_tokens(1, 3)
    obs.intent = torch.tensor([[1, 2, 5]])
    with torch.no_grad():
        torch.testing.assert_close(loaded.policy(obs, tokens).logp, policy(obs, tokens).logp)


def test_commands_that_give_no_intents_refuse_a_skills_checkpoint_in_one_line(tmp_path: Path) -> None:
    from hoi4_arena.errors import UserError
    from hoi4_arena.evaluation.heatmap import heatmap
    from hoi4_arena.rl.ppo import _start_policy
    from hoi4_arena.rl.ppo_config import PPOConfig
    from hoi4_arena.training.critic import critic_policy
    from hoi4_arena.training.value_config import CriticConfig

    policy = Policy(PolicyConfig(layout="cpu", intents=len(INTENTS), **TINY))
    path = save_checkpoint(tmp_path / "skills.pt", policy, provenance=Provenance(data="none", seed=0))
    refusals = {
        "heatmap": lambda: heatmap(path, tmp_path / "no-session", tmp_path / "maps"),
        "train-ppo": lambda: _start_policy(PPOConfig(out=str(tmp_path / "ppo"), init=str(path))),
        "train-critic": lambda: critic_policy(
            CriticConfig(str(tmp_path), str(tmp_path / "c"), init=str(path))
        ),
    }
    for command, call in refusals.items():
        with pytest.raises(UserError, match="trained with train-bc --skills") as error:
            call()
        assert command in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "maps").exists() and not (tmp_path / "ppo").exists()
