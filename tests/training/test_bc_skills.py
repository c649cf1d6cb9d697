"""train-bc --skills on four tiny recorded scripted games: each window's intents line up with its
decisions, a tiny run trains and saves a checkpoint that records its intents, the checkpoint round-trips
and refuses to play without an intent source, and sessions without skills are refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from test_bc_train import TINY, config

from hoi4_arena.data.decode import DecodeSettings
from hoi4_arena.data.loader import DataPosition, DataSettings, WindowLoader
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.play.policy_player import PolicyPlayer
from hoi4_arena.players.intents import INTENTS, NONE, VERSION
from hoi4_arena.training.bc import to_device
from hoi4_arena.training.bc_config import BCConfig
from hoi4_arena.training.skills import SessionIntents


def test_each_windows_intents_line_up_with_its_decisions(recorded_games: Path) -> None:
    data = find_sessions(recorded_games, ("scripted",))
    settings = DataSettings(decode=DecodeSettings("cpu"), window=4, lead_in=2, batch=4, shuffle_windows=8)
    intents = SessionIntents(data.train + data.val, settings)
    assert sum(intents.stats["decisions"].values()) == sum(s.decisions for s in data.train + data.val)
    acting = idle = 0
    with WindowLoader(settings, 0) as loader:
        for batch, _ in loader.epoch(data.train, 0, DataPosition(0, (0,))):
            got = intents.for_batch(batch)  # (B, L)
            assert got.shape == batch.arrays["region"].shape
            acts = (batch.arrays["tokens"][..., 0] != 0).any(-1)  # the decision holds an input
            real = np.zeros_like(acts)
            for row, (sid, span) in enumerate(batch.keys):
                source = next(s for s in data.train if s.id == sid)
                start = settings.spans(source)[span].start
                real[row, : max(0, min(got.shape[1], source.decisions - start))] = True
            # A decision with input has its step's intent; one labelled none holds no input.
            assert (got[acts & real] != NONE).all()
            assert not acts[(got == NONE) & real].any()
            assert (got[~real] == NONE).all()  # padding past a session's end
            acting += int((acts & real).sum())
            idle += int(((got == NONE) & real).sum())
    assert acting > 20 and idle > 20


def test_a_tiny_skills_run_trains_saves_and_round_trips(recorded_games: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    summary = train_bc_skills(recorded_games, out)
    assert summary["steps"] == 3 and summary["stopped"] == "max_steps"
    assert summary["intents"]["version"] == VERSION and summary["intents"]["intents"] == list(INTENTS)
    checkpoint = load_checkpoint(out / "last.pt")
    assert checkpoint.config.intents == len(INTENTS)
    assert checkpoint.extra["intents"] == {"version": VERSION, "intents": list(INTENTS)}
    assert BCConfig.from_dict(checkpoint.extra["train_config"]).skills
    assert json.loads((out / "config.json").read_text())["policy"]["intents"] == len(INTENTS)
    # The weights trained: the intent embedding moved from its initialisation.
    fresh = type(checkpoint.policy)(checkpoint.config)
    assert not torch.equal(fresh.intent_embedding.weight, checkpoint.policy.intent_embedding.weight)
    # The trained intents change what it predicts on a real batch.
    data = find_sessions(recorded_games, ("scripted",))
    settings = DataSettings(decode=DecodeSettings("cpu"), window=4, batch=2, shuffle_windows=8)
    intents = SessionIntents(data.train, settings)
    with WindowLoader(settings, 0) as loader:
        batch, _ = next(iter(loader.epoch(data.train, 0, DataPosition(0, (0,)))))
    policy = checkpoint.policy.eval()
    obs, tokens, _, state, _ = to_device(batch, policy, torch.device("cpu"), intents)
    with torch.no_grad():
        given = policy(obs, tokens, state).logp
        obs.intent = (obs.intent + 1) % len(INTENTS)
        other = policy(obs, tokens, state).logp
    assert not torch.allclose(given, other)
    # Playing it needs something that chooses intents.
    with pytest.raises(UserError, match="trained with train-bc --skills"):
        PolicyPlayer(out / "last.pt")
    assert PolicyPlayer(out / "last.pt", intents=True).intent == 0


def train_bc_skills(data: Path, out: Path, **changes) -> dict:
    from hoi4_arena.training.bc import train_bc

    settings = dict(skills=True, sources=("scripted",), max_steps=3, val_windows=4, lead_in=0)
    return train_bc(config(data, out, **{**settings, **changes}))


def test_sessions_without_skills_are_refused(marker_data: Path, tmp_path: Path) -> None:
    # The marker game's sessions are scripted, but their inputs name no skill.
    with pytest.raises(UserError, match="carry no skill"):
        train_bc_skills(marker_data, tmp_path / "run")
    with pytest.raises(UserError, match="use --skills"):
        BCConfig(data="d", out="o", policy={**TINY, "intents": 3})
