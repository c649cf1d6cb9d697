"""The main job, `hoi4-arena quickstart`: record, learn, play, report, all on the built-in simulator.

Until every stage exists it runs the deepest stage that does and says what is still missing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hoi4_arena.terminal import stderr

STAGES = (
    ("simulate", "hoi4_arena.sim.world", "the simulator's world"),
    ("record", "hoi4_arena.players.scripted", "scripted demonstrations"),
    ("train", "hoi4_arena.training.bc", "behaviour cloning"),
    ("play", "hoi4_arena.play.play_policy", "the learned policy playing the AI"),
)


def run_quickstart(out: Path) -> dict:
    present = [name for name, module, _ in STAGES if importlib.util.find_spec(module) is not None]
    missing = [(name, what) for name, module, what in STAGES if importlib.util.find_spec(module) is None]
    for name, what in missing:
        stderr.print(f"[yellow]not built yet:[/] {name} ({what})")
    return {"out": str(out), "stages_present": present, "stages_missing": [name for name, _ in missing]}
