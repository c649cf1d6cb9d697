"""Recordings on disk: one folder per session (video, frame and input logs, ARENA log, manifest).

    from hoi4_arena.sessions import SessionWriter, SessionManifest, SessionReader, check_session
    from hoi4_arena.sessions.salvage import salvage   # (the module has the function's name)

The names are loaded on first use, so importing the package stays cheap (no PyAV, no numpy).
Layout and guarantees: docs/sessions.md.

Try: hoi4-arena check-session runs/my-session
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "SessionManifest": "format",
    "SCHEMA_VERSION": "format",
    "SessionWriter": "writer",
    "SessionReader": "reader",
    "Decision": "reader",
    "decision_windows": "reader",
    "VideoConfig": "video",
    "check_session": "check",
    "iter_sessions": "splits",
    "SessionEntry": "splits",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
