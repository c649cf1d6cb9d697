"""The quickstart's PPO stage (rl/fine_tune.py): its settings make a valid run, a second call resumes it."""

from __future__ import annotations

from pathlib import Path

from hoi4_arena.rl import ppo
from hoi4_arena.rl.fine_tune import PPO_SETTINGS, fine_tune


def test_the_stage_starts_then_resumes_its_run(tmp_path: Path, monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(ppo, "train_ppo", lambda config, **kw: calls.append((config, kw)) or {"updates": 0})
    out = tmp_path / "ppo"
    common = dict(arena=("plains:0",), size=(540, 960), speed=5, seed=3, workers=0, progress=False)
    fine_tune(out, tmp_path / "bc" / "last.pt", 4, **common)
    config, options = calls[-1]
    assert options == {}
    assert config.updates == 4 and config.init == str(tmp_path / "bc" / "last.pt")
    assert config.reward == PPO_SETTINGS["reward"] and config.reset_memory == config.window
    out.mkdir()
    (out / ppo.PROGRESS).write_bytes(b"")
    fine_tune(out, tmp_path / "bc" / "last.pt", 6, **common)
    assert calls[-1][1] == {"resume": True, "changes": {"updates": 6}}
