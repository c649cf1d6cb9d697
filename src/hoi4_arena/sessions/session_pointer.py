"""The cursor sprite a recorded session shows, cut from its frames and added to a pointer template folder
(`hoi4-arena pointer OUT --from-session SESSION`): for a game no worker runs, whose cursor image no worker
can give. The cutting and the folder are `screen/pointer_templates.py`'s; this module only reads the session.

Try: hoi4-arena pointer runs/pointers --from-session runs/me/SESSION
"""

from __future__ import annotations

from pathlib import Path

from hoi4_arena.screen.pointer_templates import cut_pointer, save_template
from hoi4_arena.sessions.reader import SessionReader


def save_session_pointer(session: str | Path, folder: str | Path) -> dict:
    """Add the cursor sprite a recorded session's frames show (`cut_pointer`) to the template folder."""
    reader = SessionReader(session)
    rgba, hotspot = cut_pointer((frame, record.pointer_px) for record, frame in reader.frames())
    return save_template(rgba, hotspot, folder, f"session {reader.path.name}", "the cut sprite")
