"""The policy network: views -> encoder -> memory (GRU) -> 8 input tokens per decision, and its checkpoints.

    from hoi4_arena.models import Policy, PolicyConfig, Observation, load_checkpoint, save_checkpoint

The names are loaded on first use, so importing the package stays cheap (no torch until needed).
Architecture, shapes and the training/play entry points: docs/models.md.

Try: python bench/act.py --runs 50 --qwen-runs 1
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ActionSpace": "config",
    "PolicyConfig": "config",
    "list_encoders": "config",
    "Observation": "policy",
    "Policy": "policy",
    "PolicyOutput": "policy",
    "PolicyState": "policy",
    "Decision": "policy",
    "HeadScores": "head",
    "PointerTarget": "pointer_target",
    "gaussian_pointer_target": "pointer_target",
    "Checkpoint": "checkpoint",
    "Provenance": "checkpoint",
    "load_checkpoint": "checkpoint",
    "save_checkpoint": "checkpoint",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
