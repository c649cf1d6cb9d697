"""scripts/probe_encoders.py on four tiny recorded games: a table and JSON with every encoder's probe of
every fact, fitted on two sessions and scored on the other map's two."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import save_checkpoint
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Policy
from hoi4_arena.training.probes import FACTS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import probe_encoders  # noqa: E402


def test_probe_encoders_reports_every_encoder_and_fact(recorded_games: Path, tmp_path: Path, capsys) -> None:
    policy = save_checkpoint(tmp_path / "policy.pt", Policy(PolicyConfig(width=4, summary_dim=8, seed=2)))
    out = tmp_path / "probes.json"
    args = [
        str(recorded_games),
        "random=cnn:width=4,summary_dim=8",
        f"policy={policy}",
        "timm:qwen3_vit_88m_enc",
    ]
    args += ["--tower-args", "embed_dim=32,depth=2,num_heads=2", "--held-out", "2", "--every", "4"]
    result = probe_encoders.main([*args, "--out", str(out)])
    assert json.loads(out.read_text())["probes"] == json.loads(json.dumps(result["probes"]))
    assert list(result["probes"]) == ["random", "policy", "timm:qwen3_vit_88m_enc"]
    assert len(result["sessions"]["train"]) == 2 and len(result["sessions"]["held_out"]) == 2
    held = {s.split("-")[-2] for s in result["sessions"]["held_out"]}  # the seed: s0 or s1
    assert len(held) == 1  # one map (seed) held out: both sides of its game
    assert result["encoders"]["timm:qwen3_vit_88m_enc"]["dims"] == 32  # the tower's own width
    for per_fact in result["probes"].values():
        assert set(per_fact) == set(FACTS)
        # The recorded side is the same decision after decision: held out, the majority side is one of two.
        assert per_fact["own_side"]["baseline"] == 0.5
        for fact in per_fact.values():
            assert fact["n_test"] == result["decisions"]["held_out"]
            if fact["kind"] == "class":
                assert 0 <= fact["score"] <= 1 and 0 <= fact["baseline"] <= 1
    table = capsys.readouterr().out
    assert table.splitlines()[0].startswith("| representation | day R2 | army acc |")
    assert sum(line.startswith(("| random |", "| policy |", "| timm:")) for line in table.splitlines()) == 3


def test_probe_encoders_refuses_data_without_facts(marker_data: Path) -> None:
    with pytest.raises(UserError, match="no session .* has an ARENA log"):
        probe_encoders.main([str(marker_data), "cnn:width=4,summary_dim=8"])
    with pytest.raises(UserError, match="encoder .*absent.pt: no such file"):
        probe_encoders.main([str(marker_data), str(marker_data / "absent.pt")])
