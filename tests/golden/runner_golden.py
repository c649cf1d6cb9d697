"""Golden fingerprints of recorded games: what every game loop of the project must keep producing.

Short games of each kind of player the runner plays (the random policy, a tiny freshly initialised
checkpoint, the scripted player, the game's AI watched by the spectator) are played and recorded in the
headless simulator with the lossless ffv1 codec, and each game is reduced to a fingerprint: its results
row (without timings) and the sha256 of its inputs, frames, ARENA log and decoded video pixels. The
fingerprints were first written by the two game loops that came before the one runner
(`play/runner.py`); tests/play/test_runner_golden.py holds the runner to them.

Regenerate (only when a change of behaviour is meant, never to make a test pass; say why in the
commit):

    .venv/bin/python tests/golden/runner_golden.py --write

Check without writing: `.venv/bin/python tests/golden/runner_golden.py`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: tiny.py, when run as a script
from tiny import TINY  # noqa: E402

GOLDEN = Path(__file__).with_name("runner.json")
SIZE = (540, 960)
# Fields of a results row that measure time or name files, not what happened in the game.
UNSTABLE = ("session", "minutes")


def _sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def _jsonl_sha(path: Path, drop: tuple[str, ...] = ()) -> str | None:
    """The sha256 of a JSON-lines file's records with the named keys left out."""
    if not path.exists():
        return None
    digest = hashlib.sha256()
    for line in path.read_text().splitlines():
        record = json.loads(line)
        for key in drop:
            record.pop(key, None)
        digest.update(json.dumps(record, sort_keys=True).encode())
    return digest.hexdigest()


def _video_sha(folder: Path) -> str | None:
    from hoi4_arena.sessions.reader import SessionReader

    digest = hashlib.sha256()
    frames = 0
    for _record, image in SessionReader(folder).frames():
        digest.update(image.tobytes())
        frames += 1
    return f"{frames}:{digest.hexdigest()}" if frames else None


def session_fingerprint(folder: Path) -> dict[str, Any]:
    manifest = json.loads((folder / "manifest.json").read_text())
    return {
        "frames": manifest.get("frames"),
        "ended": manifest.get("ended"),
        "winner": manifest.get("winner"),
        "inputs": _jsonl_sha(folder / "inputs.jsonl"),
        "frame_records": _jsonl_sha(folder / "frames.jsonl"),
        "arena_log": _jsonl_sha(folder / "arena-log.jsonl"),
        "video": _video_sha(folder),
    }


def _rows(out: Path) -> list[dict[str, Any]]:
    rows = []
    for line in (out / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        session = row.get("session")
        for key in UNSTABLE:
            row.pop(key, None)
        row["recorded"] = session_fingerprint(out / session) if session else None
        rows.append(row)
    return rows


def _tiny_checkpoint(folder: Path) -> Path:
    import torch

    from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint
    from hoi4_arena.models.checkpoint import Provenance

    torch.manual_seed(0)
    policy = Policy(PolicyConfig(layout="cpu", seed=0, **TINY))
    return save_checkpoint(folder / "ckpt" / "tiny.pt", policy, provenance=Provenance(data="none", seed=0))


def fingerprints(work: Path) -> dict[str, Any]:
    """Play and record the golden games in `work`; their fingerprints by case name."""
    import torch

    from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
    from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai

    torch.set_num_threads(1)
    common = {"size": SIZE, "codec": "ffv1", "progress": False}
    # record-ai's bare preset played the game seed's map when these were written; a bare preset is now its
    # map of seed 0 in every command (maps/specs.py), and this range spells the old games exactly.
    game_seed_maps = {"arena": "plains:0-999"}
    checkpoint = _tiny_checkpoint(work)
    cases: dict[str, Any] = {}
    run_play_policy(
        PlayConfig(checkpoint="random", out=work / "random", games=2, seed=7, max_days=6, **common)
    )
    cases["play-policy random"] = _rows(work / "random")
    run_play_policy(
        PlayConfig(
            checkpoint=str(checkpoint), out=work / "tiny", games=2, seed=3, max_days=4, point=True, **common
        )
    )
    cases["play-policy tiny checkpoint"] = _rows(work / "tiny")
    run_play_policy(
        PlayConfig(checkpoint=str(checkpoint), out=work / "cut", games=1, seed=5, max_decisions=12, **common)
    )
    cases["play-policy max-decisions"] = _rows(work / "cut")
    run_record_ai(
        RecordAIConfig(
            out=work / "scripted",
            player="scripted",
            games=2,
            seed=11,
            max_days=12,
            **game_seed_maps,
            **common,
        )
    )
    cases["record-ai scripted"] = _rows(work / "scripted")
    run_record_ai(
        RecordAIConfig(
            out=work / "scripted10",
            player="scripted",
            games=1,
            seed=2,
            max_days=5,
            hz=10,
            speeds=(4,),
            **game_seed_maps,
            **common,
        )
    )
    cases["record-ai scripted 10 Hz speed 4"] = _rows(work / "scripted10")
    run_record_ai(
        RecordAIConfig(out=work / "ai", player="ai", games=1, seed=4, max_days=5, **game_seed_maps, **common)
    )
    cases["record-ai ai"] = _rows(work / "ai")
    run_record_ai(
        RecordAIConfig(
            out=work / "handover",
            player="scripted",
            games=1,
            seed=6,
            max_days=6,
            first=str(checkpoint),
            handover=(5, 10),
            **game_seed_maps,
            **common,
        )
    )
    cases["record-ai handover"] = _rows(work / "handover")
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help="write tests/golden/runner.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        found = fingerprints(Path(work))
    if args.write:
        GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
        return 0
    stored = json.loads(GOLDEN.read_text())
    differ = [name for name in sorted(set(stored) | set(found)) if stored.get(name) != found.get(name)]
    print("golden games differ: " + ", ".join(differ) if differ else "golden games match")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
