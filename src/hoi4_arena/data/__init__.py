"""Streaming training data: session folders -> decisions -> windows -> shuffled batches.

    from hoi4_arena.data import find_sessions, WindowLoader, DataSettings, DecodeSettings

`sources` picks the sessions (by source, split into train and held-out), `decode` turns a session's
decisions into views and tokens, `windows` cuts them into windows as the video plays, `shuffle` plans an
epoch's seeded order, and `loader` carries the plan out on background workers. docs/training.md
explains the rules (masks, lead-in, resume).

The names are loaded on first use, so importing the package stays cheap.

Try: .venv/bin/python -m hoi4_arena.data.loader runs/ --workers 2
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DecodeSettings": "decode",
    "DecisionSample": "decode",
    "decode_session": "decode",
    "parse_keys": "decode",
    "Span": "windows",
    "Window": "windows",
    "plan_spans": "windows",
    "cut_windows": "windows",
    "WindowRef": "shuffle",
    "WorkerPlan": "shuffle",
    "epoch_plan": "shuffle",
    "SessionSource": "sources",
    "DataSet": "sources",
    "find_sessions": "sources",
    "DataSettings": "loader",
    "DataPosition": "loader",
    "Batch": "loader",
    "SessionSkipped": "loader",
    "WindowLoader": "loader",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
