"""train-ppo --replay (rl/replay.py): the imitation data's batches come in train-bc's seeded order epoch
after epoch and resume where they stopped; their behaviour-cloning loss pulls the policy toward the data;
a run with replay resumes exactly; bad options are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.rl.ppo import train_ppo
from hoi4_arena.rl.ppo_config import PPOConfig
from hoi4_arena.rl.replay import Replay, bc_loss
from tiny import tiny_ppo


def _config(out: Path, **changes) -> PPOConfig:
    return tiny_ppo(out, **changes)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Two finished games recorded by a tiny run (sessions of source policy): the data to replay."""
    out = tmp_path_factory.mktemp("replay") / "recorded"
    train_ppo(_config(out, record=True, seed=5))
    return out / "sessions"


def _stream(data: Path, position=None) -> Replay:
    return Replay(str(data), ("policy",), "cpu", window=4, batch=3, seed=0, position=position)


def test_the_stream_is_seeded_runs_epoch_after_epoch_and_resumes(data: Path) -> None:
    first = _stream(data)
    assert len(first.sessions) >= 2
    count = 2 * first.loader.batches_in_epoch(first.sessions, 0) + 1
    batches = [first.next() for _ in range(count)]
    assert first.position()["epoch"] == 2  # it went on past the epochs' ends
    assert {key[0] for b in batches for key in b.keys} == {s.id for s in first.sessions}
    again = _stream(data)
    assert all(a.keys == b.keys for a, b in zip(batches, (again.next() for _ in range(count)), strict=True))
    # From a saved position: the batches an uninterrupted stream reads next.
    part = _stream(data)
    for _ in range(3):
        part.next()
    resumed = _stream(data, position=part.position())
    for _ in range(5):
        a, b = resumed.next(), part.next()
        assert a.keys == b.keys
        assert all(np.array_equal(a.arrays[k], b.arrays[k]) for k in a.arrays)


@pytest.mark.slow
def test_replay_pulls_toward_the_data_and_resumes_exactly(tmp_path: Path, data: Path) -> None:
    common = dict(replay=str(data), replay_sources=("policy",), updates=1, lr=3e-3, epochs=2)
    with_replay = train_ppo(_config(tmp_path / "with", replay_weight=5.0, **common))
    train_ppo(_config(tmp_path / "without", replay_weight=0.0, **common))
    assert with_replay["last"]["replay_nll"] > 0

    def nll(run: str) -> float:
        policy = load_checkpoint(tmp_path / run / "last.pt").policy.eval()
        stream = _stream(data)
        with torch.no_grad():
            return float(np.mean([bc_loss(policy, stream.next()).item() for _ in range(4)]))

    assert nll("with") < nll("without") - 0.05, (nll("with"), nll("without"))

    whole = train_ppo(_config(tmp_path / "whole", replay_weight=1.0, **{**common, "updates": 2}))
    part = _config(tmp_path / "part", replay_weight=1.0, **common)
    train_ppo(part)
    resumed = train_ppo(part, resume=True, changes={"updates": 2})
    assert resumed["weights_sha256"] == whole["weights_sha256"]


def test_bad_replay_options_are_refused(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(UserError, match="--replay-sources and --replay-weight shape --replay"):
        _config(out, replay_weight=0.5)
    with pytest.raises(UserError, match="no such folder"):
        _config(out, replay=str(tmp_path / "nothing"))
    with pytest.raises(UserError, match="unknown source"):
        train_ppo(_config(out, replay=str(data), replay_sources=("robots",)))
    with pytest.raises(UserError, match=r"--replay .*: no usable training session .* see --replay-sources"):
        train_ppo(_config(out, replay=str(data)))  # the data is the policy's own games
    assert not out.exists()


def test_replay_follows_the_start_policys_slot_timing(tmp_path: Path, data: Path) -> None:
    """A start cloned with `train-bc --timing in_order` replays its data in order, others as recorded."""
    from hoi4_arena.models.checkpoint import save_checkpoint
    from hoi4_arena.rl.ppo import start_timing
    from hoi4_arena.screen.tokens import in_order

    policy = load_checkpoint(data.parent / "last.pt").policy
    assert start_timing("random") == "recorded"
    assert start_timing(str(data.parent / "last.pt")) == "recorded"  # no train-bc settings in it
    cloned = save_checkpoint(tmp_path / "bc.pt", policy, extra={"train_config": {"timing": "in_order"}})
    assert start_timing(str(cloned)) == "in_order"
    stream = _stream(data)
    ordered = Replay(str(data), ("policy",), "cpu", window=4, batch=3, seed=0, timing="in_order")
    gapped = 0
    for _ in range(stream.loader.batches_in_epoch(stream.sessions, 0)):
        a, b = stream.next(), ordered.next()
        assert a.keys == b.keys
        assert np.array_equal(b.arrays["tokens"], in_order(a.arrays["tokens"]))
        gapped += int((a.arrays["tokens"] != b.arrays["tokens"]).any())
    assert gapped, "the recorded games' inputs leave no slot free before a later one: nothing is tested"
