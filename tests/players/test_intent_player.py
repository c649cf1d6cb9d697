"""record-ai --intent-policy: the scripted player chooses each decision's intent in the shadow, the policy
(a checkpoint of train-bc --skills) is given it and its tokens are the game's only input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint
from hoi4_arena.models.checkpoint import Provenance
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai
from hoi4_arena.players.intents import INTENTS
from hoi4_arena.sessions.check import check_session
from tiny import TINY


def checkpoint(path: Path, intents: int) -> Path:
    policy = Policy(PolicyConfig(layout="cpu", intents=intents, **TINY))
    return save_checkpoint(path, policy, provenance=Provenance(data="none", seed=0))


def config(out: Path, ckpt: Path, **changes) -> RecordAIConfig:
    # plains:0-999: plains:7, the game seed's map these tests were written on (maps/specs.py)
    settings = dict(
        out=out, games=1, arena="plains:0-999", seed=7, max_days=20, after_end_s=0.0, progress=False
    )
    return RecordAIConfig(**{**settings, "intent_policy": str(ckpt), **changes})


def test_the_policy_carries_out_the_intents_the_scripted_player_chooses(tmp_path: Path) -> None:
    out = tmp_path / "intents"
    summary = run_record_ai(config(out, checkpoint(tmp_path / "skills.pt", len(INTENTS))))
    assert summary["games"] == 1 and summary["valid"] == 1
    row = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    folder = out / row["session"]
    assert row["session"].startswith("intent-g0000-") and row["player"] == "intent-policy"
    assert row["intent_policy"].endswith("/skills")  # the checkpoint's folder/stem
    assert check_session(folder)["verdict"] == "ok"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["source"] == "policy"
    counts = manifest["extra"]["player"]["intents"]
    assert set(counts) == set(INTENTS) and sum(counts.values()) >= row["decisions"] - 1
    # The shadow moves on through its steps whether or not the untrained policy achieves them.
    assert counts["popup"] > 0 and counts["form_army"] > 0
    assert sum(1 for n in counts.values() if n) >= 4
    events = [json.loads(line) for line in (folder / "inputs.jsonl").read_text().splitlines()]
    assert events and {e["source"] for e in events} == {"policy"}
    assert {e["skill"] for e in events} <= set(INTENTS)
    assert len({e["skill"] for e in events}) >= 2  # the policy acted under several intents


def test_a_checkpoint_without_intents_and_bad_combinations_are_refused(tmp_path: Path) -> None:
    plain = checkpoint(tmp_path / "plain.pt", 0)
    with pytest.raises(UserError, match="trained without --skills"):
        run_record_ai(config(tmp_path / "out", plain))
    skills = checkpoint(tmp_path / "skills.pt", len(INTENTS))
    with pytest.raises(UserError, match="without --first and --paused-setup"):
        config(tmp_path / "out", skills, first=str(skills))
    with pytest.raises(UserError, match="no such checkpoint"):
        config(tmp_path / "out", tmp_path / "missing.pt")
