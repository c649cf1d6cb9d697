"""InfoPPO's options of train-ppo: the entropy each rollout decision keeps (rl/rollout.py), the adaptive clip
bounds (rl/ppo.py), a tiny run with both options and its exact resume, and the bad input refused. The
information clock's GAE is worked by hand in tests/rl/test_gae.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from test_ppo import _config as ppo_config
from torch.distributions import Categorical
from typer.testing import CliRunner

from hoi4_arena.errors import UserError
from hoi4_arena.models.policy import Observation, Policy, PolicyState
from hoi4_arena.rl import ppo
from hoi4_arena.rl.ppo import adaptive_clip_bounds, train_ppo
from hoi4_arena.rl.ppo_config import PPOConfig
from hoi4_arena.rl.rollout import Rollouts, Schedule


def test_adaptive_clip_bounds_widen_with_the_log_of_the_entropy() -> None:
    # ln(1 + h) = 0, 1, 3, 10; widths 0.10 and 0.20:
    #   h = 0:        [1 - 0,   1 + 0]   = [1.0, 1.0]  (a confident decision does not move)
    #   h = e - 1:    [1 - 0.1, 1 + 0.2] = [0.9, 1.2]
    #   h = e^3 - 1:  [1 - 0.3, 1 + 0.6] = [0.7, 1.6]
    #   h = e^10 - 1: [1 - 1.0, 1 + 2.0], the lower width held at 0.95: [0.05, 3.0]
    entropy = torch.tensor([0.0, math.e - 1, math.e**3 - 1, math.e**10 - 1])
    low, high = adaptive_clip_bounds(entropy, 0.10, 0.20)
    assert torch.allclose(low, torch.tensor([1.0, 0.9, 0.7, 0.05]), atol=1e-6)
    assert torch.allclose(high, torch.tensor([1.0, 1.2, 1.6, 3.0]), atol=1e-6)
    # --info-clip is in percent; the paper's 10,20 unless given.
    assert PPOConfig(out="x", clip_mode="adaptive").info_clip_widths == (0.10, 0.20)
    assert PPOConfig(out="x", clip_mode="adaptive", info_clip=(5, 50)).info_clip_widths == (0.05, 0.50)


def _entropy_by_hand(
    policy: Policy, obs: Observation, state: PolicyState, tokens: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Entropy and log p (at temperature 1) of sampled tokens, the head walked slot by slot as decode
    walks it, each factor a Categorical over softmax(logits / temperature)."""
    seen, _, context = policy._observe(obs, state)
    head, cells = policy.head, seen.cells
    rows = torch.arange(tokens.shape[0])
    z = head.start(context)
    entropy, logp = torch.zeros(tokens.shape[0]), torch.zeros(tokens.shape[0])
    for s in range(tokens.shape[1]):
        kind, x, y = tokens[:, s].unbind(-1)
        cell = head._cell_of(x, y)
        u = z + head.slot.weight[s]
        column, row = head._position_logits(u, cells[rows, cell])
        factors = [(head.kind(u), kind), (head._cell_logits(u, cells), cell)]
        factors += [(column, x % head.grid.cell_size), (row, y % head.grid.cell_size)]
        move = head.tokens.move_mask[kind]
        for i, (logits, chosen) in enumerate(factors):
            counts = torch.ones_like(move) if i == 0 else move  # a move's pointer factors only
            entropy += torch.where(counts, Categorical(logits=logits / temperature).entropy(), 0.0)
            logp += torch.where(counts, Categorical(logits=logits).log_prob(chosen), 0.0)
        z = head._advance(z, kind, x, y, cells)
    return entropy, logp


@pytest.mark.slow
def test_the_stored_entropy_is_the_sampling_distributions(tiny_policy, settings) -> None:
    temperature = 1.5  # the entropy is the sampled distributions', at the sampling temperature
    with Rollouts(settings, Schedule(games=2, seed=5), workers=0, temperature=temperature) as engine:
        engine.start(tiny_policy)
        rollout = engine.collect(tiny_policy, 6)
    assert rollout.entropy.shape == (6, 2)
    moves = tiny_policy.head.tokens.move_mask[rollout.tokens[..., 0]]
    assert moves.any() and not moves.all()  # both kinds of token are in the example
    with torch.no_grad():
        for t in range(6):
            obs = rollout.observation(t, slice(None))
            state = PolicyState(rollout.hidden[t], rollout.previous[t])
            entropy, logp = _entropy_by_hand(tiny_policy, obs, state, rollout.tokens[t], temperature)
            torch.testing.assert_close(logp, rollout.logp[t], rtol=1e-5, atol=1e-4)  # the same path
            torch.testing.assert_close(rollout.entropy[t], entropy, rtol=1e-5, atol=1e-4)
    assert (rollout.entropy > 0).all()


def _config(out: Path, tiny: dict, **changes) -> PPOConfig:
    """test_ppo's tiny run, shorter, with InfoPPO's options on."""
    infoppo = dict(
        steps=8,
        window=4,
        max_days=3,
        gamma=0.9,  # below 1, or the information clock would change nothing
        lam=0.95,
        clock="information",
        clip_mode="adaptive",
        info_clip=(10, 30),
    )
    return ppo_config(out, tiny, **{**infoppo, **changes})


@pytest.mark.slow
def test_a_tiny_infoppo_run_logs_its_scalars_and_resumes_exactly(
    tmp_path: Path, tiny: dict, monkeypatch
) -> None:
    clocks: list[torch.Tensor | None] = []
    plain_gae = ppo.gae

    def recording(*args, **kwargs):
        clocks.append(kwargs.get("exponents"))
        return plain_gae(*args, **kwargs)

    monkeypatch.setattr(ppo, "gae", recording)
    whole = train_ppo(_config(tmp_path / "whole", tiny))
    # Both GAEs of each update (advantages, value targets) ran on the stored entropies.
    assert len(clocks) == 4 and all(c is not None and c.shape == (8, 2) and (c > 0).all() for c in clocks)
    last = whole["last"]
    assert last["entropy_rollout"] > 0
    assert 0.05 <= last["clip_low"] < 1 < last["clip_high"]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = EventAccumulator(str(tmp_path / "whole" / "tb")).Reload().Tags()["scalars"]
    assert {"train/entropy_rollout", "train/clip_low", "train/clip_high", "train/clip_fraction"} <= set(tags)

    part = _config(tmp_path / "part", tiny, updates=1)
    train_ppo(part)
    resumed = train_ppo(part, resume=True, changes={"updates": 2})
    assert resumed["weights_sha256"] == whole["weights_sha256"]
    assert resumed["last"]["entropy_rollout"] == last["entropy_rollout"]
    # The clock and the clip are what the run computes: a resume may not change them.
    for option, change in (
        ("--clock", {"clock": "ticks"}),
        ("--clip-mode", {"clip_mode": "fixed", "info_clip": None}),
        ("--info-clip", {"info_clip": (10.0, 20.0)}),
    ):
        with pytest.raises(UserError, match=option):
            train_ppo(part, resume=True, changes={**change, "updates": 3})


def test_the_fixed_clip_and_the_tick_clock_are_the_defaults() -> None:
    config = PPOConfig(out="x")
    assert (config.clock, config.clip_mode, config.clip, config.info_clip) == ("ticks", "fixed", 0.2, None)
    # An adaptive run keeps the widths it used in config.json, given or not.
    stored = PPOConfig(out="x", clip_mode="adaptive").to_dict()
    assert stored["info_clip"] == [10.0, 20.0]
    assert PPOConfig.from_dict(stored).info_clip == (10.0, 20.0)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"clock": "minutes"}, "--clock must be one of ticks, information"),
        ({"clip_mode": "soft"}, "--clip-mode must be one of fixed, adaptive"),
        ({"clip_mode": "adaptive", "info_clip": (10,)}, "--info-clip takes two numbers above 0"),
        ({"clip_mode": "adaptive", "info_clip": (10, 20, 30)}, "--info-clip takes two numbers above 0"),
        ({"clip_mode": "adaptive", "info_clip": (0, 20)}, "--info-clip takes two numbers above 0"),
        ({"clip_mode": "adaptive", "info_clip": (10, -5)}, "--info-clip takes two numbers above 0"),
        ({"clip_mode": "adaptive", "info_clip": (10, math.inf)}, "--info-clip takes two numbers above 0"),
        ({"clip_mode": "adaptive", "info_clip": ("a", 20)}, "--info-clip takes two numbers above 0"),
        ({"info_clip": (10, 20)}, "--info-clip .* needs --clip-mode adaptive"),
    ],
)
def test_bad_input_is_one_clear_message(changes: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        PPOConfig(out="x", **changes)


def test_bad_input_on_the_command_line(tmp_path: Path) -> None:
    from hoi4_arena.cli import app

    runner = CliRunner()
    for args, message in (
        (["--clip-mode", "adaptive", "--info-clip", "10"], "--info-clip takes two numbers above 0"),
        (["--clip-mode", "adaptive", "--info-clip", "ten,20"], "--info-clip takes a comma-separated list"),
        (["--info-clip", "10,20"], "needs --clip-mode adaptive"),
        (["--clock", "information", "--clip-mode", "clipped"], "--clip-mode must be one of"),
    ):
        result = runner.invoke(app, ["train-ppo", str(tmp_path / "run"), *args])
        assert result.exit_code != 0 and message in str(result.exception), (args, result.output)
    # With gamma 1 and lambda 1 the information clock is allowed: it is a no-op, as --help says.
    assert PPOConfig(out="x", clock="information").clock == "information"
    assert not (tmp_path / "run").exists()
