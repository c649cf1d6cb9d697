"""Corrections: a policy opens each game, the scripted player takes over; training skips the policy's part."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoi4_arena.data.decode import DecodeSettings, decode_session
from hoi4_arena.errors import UserError
from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint
from hoi4_arena.models.checkpoint import Provenance
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai
from hoi4_arena.players.handover import draw_handover
from hoi4_arena.sessions.check import check_session
from tiny import TINY


@pytest.fixture
def first(tmp_path: Path) -> Path:
    """An untrained tiny policy: it clicks and presses about at random, the worst opening there is."""
    policy = Policy(PolicyConfig(layout="cpu", **TINY))
    return save_checkpoint(tmp_path / "first.pt", policy, provenance=Provenance(data="none", seed=0))


def config(out: Path, first: Path, **changes) -> RecordAIConfig:
    settings = dict(
        out=out,
        games=2,
        arena="plains:0-999",  # plains:30, the game seed's map these tests were written on (maps/specs.py)
        seed=30,
        max_days=12,
        after_end_s=0.0,
        progress=False,
        first=str(first),
        handover=(15, 30),
    )
    return RecordAIConfig(**{**settings, **changes})


def inputs_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "inputs.jsonl").read_text().splitlines()]


def test_the_policy_opens_and_the_scripted_player_takes_over(tmp_path: Path, first: Path) -> None:
    out = tmp_path / "corrections"
    summary = run_record_ai(config(out, first))
    assert summary["games"] == 2 and summary["valid"] == 2
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for row in rows:
        assert row["handover"] == draw_handover(30, row["side"], 15, 30)
        folder = out / row["session"]
        assert row["session"].startswith("handover-g")
        assert check_session(folder)["verdict"] == "ok"
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["source"] == "scripted"
        assert manifest["extra"]["player"]["handover"] == row["handover"]
        events = inputs_of(folder)
        sources = [e["source"] for e in events]
        # The policy's inputs come first, the scripted player's after: one handover, never back.
        assert "scripted" in sources and sources == sorted(sources, key=lambda s: s != "policy")
        # Nothing the policy pressed is still down when the scripted player starts.
        held: set = set()
        for e in events:
            if e["source"] != "policy":
                break
            what = (e.get("button"), e.get("key"))
            if e["kind"].endswith("_down"):
                held.add(what)
            elif e["kind"].endswith("_up"):
                held.discard(what)
        assert not held
        # The scripted player found its way from whatever the policy left: it gave orders of its own.
        assert any(o["order"] in ("form_army", "front", "offensive") for o in manifest["orders"])
        # Training leaves the policy's decisions out of the loss, and keeps the scripted player's.
        samples = list(decode_session(folder, DecodeSettings()))
        masked = [s for s in samples if s.policy_inputs]
        assert masked and all(not s.trainable for s in masked)
        assert max(s.index for s in masked) < row["handover"]
        acted = [s for s in samples if s.index >= row["handover"] and s.tokens[:, 0].any()]
        assert acted and all(s.trainable for s in acted)


def test_the_handover_is_drawn_per_game_and_bad_settings_are_refused(tmp_path: Path, first: Path) -> None:
    draws = {draw_handover(seed, side, 0, 150) for seed in range(20) for side in ("BLU", "RED")}
    assert len(draws) > 20 and all(0 <= d <= 150 for d in draws)
    assert draw_handover(3, "RED", 0, 150) == draw_handover(3, "RED", 0, 150)
    with pytest.raises(UserError, match="--player scripted"):
        config(tmp_path / "a", first, player="ai")
    with pytest.raises(UserError, match="--paused-setup"):
        config(tmp_path / "b", first, paused_setup=True)
    with pytest.raises(UserError, match="no such checkpoint"):
        config(tmp_path / "c", tmp_path / "missing.pt")
    with pytest.raises(UserError, match="--handover"):
        config(tmp_path / "d", first, handover=(30, 10))
