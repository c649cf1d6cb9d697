"""Tiny real games for the value tests: four scripted games recorded by record-ai (20 game days, 960x540,
plains seeds 0 and 1, each from BLU and from RED), and copies of them with the winners a test needs.

A 20-day game ends in a draw at the time limit, so a test that needs winners copies the sessions and
rewrites each manifest's `winner` (`with_winners`); the ARENA logs stay as recorded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai

SESSIONS = (
    "scripted-g0000-plains-s0-BLU",
    "scripted-g0001-plains-s0-RED",
    "scripted-g0002-plains-s1-BLU",
    "scripted-g0003-plains-s1-RED",
)


def record_games(out: Path) -> Path:
    summary = run_record_ai(
        # plains:0-999: each pair on the map of its game seed (plains:0, plains:1), as these were recorded
        # before a bare preset became its map of seed 0 in every command (maps/specs.py).
        RecordAIConfig(
            out,
            player="scripted",
            games=4,
            arena="plains:0-999",
            max_days=20,
            size=(540, 960),
            after_end_s=0.0,
        )
    )
    assert not summary.get("interrupted"), summary
    missing = [s for s in SESSIONS if not (out / s / "manifest.json").is_file()]
    assert not missing, f"record-ai wrote no {missing}"
    return out


def with_winners(recorded: Path, out: Path, winners: dict[str, str | None]) -> Path:
    """Copies of the sessions named in `winners` (session id -> winner: BLU, RED, draw or None)."""
    out.mkdir(parents=True, exist_ok=True)
    for session, winner in winners.items():
        target = out / session
        shutil.copytree(recorded / session, target)
        manifest = json.loads((target / "manifest.json").read_text())
        manifest["winner"] = winner
        (target / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return out


def file_hashes(folder: Path) -> dict[str, str]:
    import hashlib

    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()
    }
