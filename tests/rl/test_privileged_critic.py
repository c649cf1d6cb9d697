"""train-ppo's privileged critic and its companions (rl/ppo.py, issue 49 part 3): --critic state's V(s)
reads the learner's ARENA facts and never the pixels; --value-shaping is potential-based; --bc-kl pulls
toward the start, its weight decaying as --bc-kl-decay says; the run trains and resumes exactly; bad
options are one-line errors."""

from __future__ import annotations

import copy
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from hoi4_arena.errors import UserError
from hoi4_arena.models import Policy, PolicyConfig
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.models.policy import PolicyState
from hoi4_arena.play.rollout_game import RolloutSettings
from hoi4_arena.rl.ppo import advantages_of, bc_kl_weight, ppo_update, state_values, train_ppo, value_shaping
from hoi4_arena.rl.ppo_config import PPOConfig
from hoi4_arena.rl.rollout import Rollouts, Schedule
from hoi4_arena.training.state_value import FORMAT, FORMAT_VERSION, StateValueNet
from hoi4_arena.training.value_data import FEATURES
from tiny import TINY, tiny_ppo

DAY, BLU = FEATURES.index("day"), FEATURES.index("own_is_blu")


def _state_value_file(path: Path, hidden: int = 8, seed: int = 3) -> Path:
    """A train-state-value checkpoint (its format, untrained weights): what --critic-init loads."""
    torch.manual_seed(seed)
    net = StateValueNet(len(FEATURES), hidden)
    net.scale.fill_(10.0)
    content = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "features": list(FEATURES),
        "config": {"hidden": hidden},
        "model": net.state_dict(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(content, path)
    return path


def _config(out: Path, **changes) -> PPOConfig:
    return tiny_ppo(out, **changes)


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> SimpleNamespace:
    """One rollout of 2 tiny games x 10 decisions (one ends, the next begins) with the ARENA facts, the
    tiny policy that played it, and a state-value file."""
    policy = Policy(PolicyConfig(layout="cpu", seed=0, **TINY)).eval()
    settings = RolloutSettings(size=(360, 640), layout="cpu", max_days=2, state=True)
    with Rollouts(settings, Schedule(games=2), workers=0) as engine:
        engine.start(policy)
        rollout = engine.collect(policy, 10)
    root = tmp_path_factory.mktemp("critic")
    return SimpleNamespace(
        policy=policy, rollout=rollout, value_file=_state_value_file(root / "state-value.pt")
    )


def test_the_rollout_carries_the_learner_sides_arena_facts(played) -> None:
    rollout = played.rollout
    assert rollout.facts.shape == (10, 2, len(FEATURES)) and rollout.last_facts.shape == (2, len(FEATURES))
    # Slot 0 plays BLU, slot 1 RED; the day runs on through a game and starts again with the next.
    assert (rollout.facts[:, 0, BLU] == 1).all() and (rollout.facts[:, 1, BLU] == 0).all()
    assert rollout.done.any()
    for n in range(2):
        days = rollout.facts[:, n, DAY]
        ended = np.flatnonzero(rollout.done[:, n])
        game = days[: ended[0] + 1] if len(ended) else days
        assert (np.diff(game) >= 0).all() and game[-1] > game[0], days


def test_the_facts_travel_through_worker_processes(played) -> None:
    settings = RolloutSettings(size=(360, 640), layout="cpu", max_days=2, state=True)
    with Rollouts(settings, Schedule(games=2), workers=1) as engine:
        engine.start(played.policy)
        rollout = engine.collect(played.policy, 10)
    assert np.array_equal(rollout.facts, played.rollout.facts)
    assert np.array_equal(rollout.last_facts, played.rollout.last_facts)


def test_the_state_critic_reads_arena_facts_and_never_pixels(played) -> None:
    rollout, config = played.rollout, _config(Path("unused"), critic="state")
    torch.manual_seed(0)
    critic = StateValueNet(len(FEATURES), 8)
    critic.scale.fill_(10.0)
    advantages, target = advantages_of(rollout, config, critic)

    # Other pixels, and another pixel value head's values: the advantages and targets do not move.
    repainted = replace(
        rollout,
        views={k: 255 - v for k, v in rollout.views.items()},
        value=torch.rand_like(rollout.value),
        last_value=torch.rand_like(rollout.last_value),
    )
    again, target_again = advantages_of(repainted, config, critic)
    assert torch.equal(again, advantages) and torch.equal(target_again, target)
    # Other facts: they do.
    facts = rollout.facts.copy()
    facts[..., FEATURES.index("own_strength_share")] += 0.5
    moved = replace(rollout, facts=facts, last_facts=rollout.last_facts + 1)
    assert not torch.equal(advantages_of(moved, config, critic)[0], advantages)
    assert torch.equal(
        state_values(critic, moved.facts), torch.sigmoid(critic(torch.from_numpy(facts))).detach()
    )

    # The critic's training step: the same weights after an update on repainted pixels, others after one
    # on other facts.
    def trained(r) -> dict[str, torch.Tensor]:
        policy, net = copy.deepcopy(played.policy).train(), copy.deepcopy(critic)
        optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
        critic_optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
        ppo_update(policy, None, optimizer, r, advantages, target, config, 0, net, critic_optimizer)
        return net.state_dict()

    first = trained(rollout)
    assert not torch.equal(first["net.0.weight"], critic.state_dict()["net.0.weight"])  # it learns
    assert all(torch.equal(v, trained(repainted)[k]) for k, v in first.items())
    assert not torch.equal(trained(moved)["net.0.weight"], first["net.0.weight"])


def test_value_shaping_is_potential_based() -> None:
    # V0(s) = sigmoid(first fact): potentials 0.5, sigmoid(1), sigmoid(2) in a game that ends at
    # decision 2; decision 3 begins the next game, bootstrapped from the last facts.
    net = torch.nn.Linear(1, 1)
    with torch.no_grad():
        net.weight.fill_(1.0)
        net.bias.fill_(0.0)
    potential = lambda x: net(x).squeeze(-1)  # noqa: E731
    facts = np.array([[[0.0]], [[1.0]], [[2.0]], [[-1.0]]], np.float32)
    done = np.array([[False], [False], [True], [False]])
    rollout = SimpleNamespace(
        facts=facts, last_facts=np.array([[3.0]], np.float32), done=done, entropy=torch.ones(4, 1)
    )
    config = _config(Path("unused"), gamma=0.9)
    terms = value_shaping(rollout, config, potential)[:, 0]
    phi = torch.sigmoid(torch.tensor([0.0, 1.0, 2.0, -1.0, 3.0]))
    expected = torch.stack(
        [0.9 * phi[1] - phi[0], 0.9 * phi[2] - phi[1], -phi[2], 0.9 * phi[4] - phi[3]]  # the end: V0(s') 0
    )
    assert torch.allclose(terms, expected)
    # gamma 1: a whole game's shaping telescopes to -V0(its first state), whatever the policy did there.
    whole = value_shaping(rollout, _config(Path("unused")), potential)[:3, 0].sum()
    assert whole.item() == pytest.approx(-0.5)


def _kl_to_start(policy, reference, rollout) -> float:
    """Mean squared log-likelihood gap of the rollout's tokens between `policy` and the start, each from
    a fresh memory over the whole rollout of each slot."""
    with torch.no_grad():
        steps, slots = rollout.done.shape
        tt, nn = np.meshgrid(np.arange(steps), np.arange(slots))  # (N, T) each
        obs = rollout.observation(tt, nn)
        tokens = rollout.tokens.transpose(0, 1)
        state = PolicyState(policy.initial_state(2).hidden, rollout.previous[0])
        gap = policy(obs, tokens, state).logp - reference(obs, tokens, state).logp
    return float(gap.pow(2).mean())


def test_the_kl_term_pulls_toward_the_start_and_its_weight_decays(played, make_checkpoint) -> None:
    rollout, start = played.rollout, played.policy
    advantages = torch.randn(rollout.done.shape, generator=torch.Generator().manual_seed(1))
    target = torch.full(rollout.done.shape, 0.5)
    init = str(make_checkpoint())

    def updated(config: PPOConfig, update: int = 0) -> torch.nn.Module:
        policy = copy.deepcopy(start).train()
        reference = copy.deepcopy(start).eval() if config.bc_kl else None
        optimizer = torch.optim.Adam(policy.parameters(), lr=3e-2)
        ppo_update(policy, reference, optimizer, rollout, advantages, target, config, update)
        return policy.eval()

    base = dict(lr=3e-2, epochs=3, clip=10.0, critic="joint", init=init)
    free = _kl_to_start(updated(_config(Path("u"), **base)), start, rollout)
    pulled = _kl_to_start(updated(_config(Path("u"), bc_kl=5.0, **base)), start, rollout)
    assert free > 0 and pulled < 0.5 * free, (pulled, free)

    # The schedule: W * D**u, and W itself without a decay (bit for bit).
    decaying = _config(Path("u"), bc_kl=0.4, bc_kl_decay=0.5, init=init)
    assert [bc_kl_weight(decaying, u) for u in range(4)] == [0.4, 0.2, 0.1, 0.05]
    fixed = _config(Path("u"), bc_kl=0.4, init=init)
    assert all(bc_kl_weight(fixed, u) == 0.4 for u in range(4))
    # ... and it is the weight the update uses: update 2 of the decaying run is the fixed run of W/4.
    late = updated(replace(decaying, **base, bc_kl=5.0), update=2).state_dict()
    quarter = updated(_config(Path("u"), **{**base, "bc_kl": 1.25}), update=2).state_dict()
    undecayed = updated(_config(Path("u"), **{**base, "bc_kl": 5.0}), update=2).state_dict()
    assert all(torch.equal(v, quarter[k]) for k, v in late.items())
    assert not all(torch.equal(v, undecayed[k]) for k, v in late.items())


@pytest.mark.slow
def test_critic_state_trains_and_resumes_exactly(tmp_path: Path, make_checkpoint) -> None:
    value_file = _state_value_file(tmp_path / "sv" / "state-value.pt")
    settings = dict(
        critic="state",
        critic_init=str(value_file),
        value_shaping=0.5,
        init=str(make_checkpoint()),
        policy={},
        bc_kl=0.1,
        bc_kl_decay=0.5,
    )
    whole = train_ppo(_config(tmp_path / "whole", **settings))
    part = _config(tmp_path / "part", **settings, updates=1)
    train_ppo(part)
    resumed = train_ppo(part, resume=True, changes={"updates": 2})
    assert resumed["weights_sha256"] == whole["weights_sha256"]
    critic = load_checkpoint(tmp_path / "whole" / "last.pt").extra["critic"]
    again = load_checkpoint(tmp_path / "part" / "last.pt").extra["critic"]
    assert all(torch.equal(v, again[k]) for k, v in critic.items())
    start = torch.load(value_file, weights_only=False)["model"]
    assert not torch.equal(critic["net.0.weight"], start["net.0.weight"])  # the critic learned
    assert "value_shaping" in whole["last"] and whole["last"]["bc_kl_weight"] == 0.05
    # Another state value in its place is refused on resume.
    _state_value_file(value_file, seed=4)
    with pytest.raises(UserError, match="--critic-init .* not the state value this run started from"):
        train_ppo(part, resume=True, changes={"updates": 3})

    # A fresh critic (no --critic-init) standardises its inputs by the first rollout's facts.
    train_ppo(_config(tmp_path / "fresh", critic="state", updates=1))
    fresh = load_checkpoint(tmp_path / "fresh" / "last.pt").extra["critic"]
    assert fresh["mean"][DAY] > 0 and not torch.equal(fresh["scale"], torch.ones_like(fresh["scale"]))


def test_bad_critic_options_are_refused(tmp_path: Path, make_checkpoint) -> None:
    out = tmp_path / "run"
    value_file = _state_value_file(tmp_path / "sv.pt")
    init = str(make_checkpoint())
    for changes, message in (
        (dict(critic="value"), "--critic must be one of pact, joint, state"),
        (dict(critic_init=str(value_file)), "--critic-init is a train-state-value checkpoint"),
        (dict(value_shaping=1.0), "--value-shaping takes its potential"),
        (dict(critic="state", critic_init=str(tmp_path / "none.pt")), "no such file"),
        (dict(critic_hidden=32), "--critic-hidden and --critic-lr shape --critic state"),
        (dict(critic="state", critic_init=str(value_file), critic_hidden=32), "brings its own"),
        (dict(bc_kl_decay=0.5), "--bc-kl-decay decays the --bc-kl weight"),
        (dict(bc_kl=0.1, bc_kl_decay=0.0, init=init), r"--bc-kl-decay must be in \(0, 1\]"),
        (dict(bc_kl=0.1, bc_kl_decay=1.5, init=init), "--bc-kl-decay must be a number in 0..1"),
        (dict(critic="state", critic_lr=0.0), "--critic-lr must be above 0"),
    ):
        with pytest.raises(UserError, match=message):
            _config(out, **changes)
    # A file that is no state value: refused when the run loads it, before anything is written.
    with pytest.raises(UserError, match="is not a state-value checkpoint"):
        train_ppo(_config(out, critic="state", critic_init=init))
    assert not out.exists()
    # Through the command line: one line, exit status 2.
    done = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "train-ppo", str(out), "--bc-kl-decay", "0.5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "--bc-kl-decay decays" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
