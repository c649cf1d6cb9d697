"""The settings of `hoi4-arena intents DATA`: the coverage report of the scripted player's intents.

This module imports neither torch nor numpy, so the command line can build its options cheaply; the work
is `players/intents.py`'s `coverage`.

Try: hoi4-arena intents runs/demo-b/demos --out /tmp/intents.json
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class IntentsConfig:
    """Relabel every scripted session of a data folder with its intents and report their coverage."""

    data: Path
    """Data folder: session folders anywhere below it (the scripted ones are relabelled)."""
    out: Path | None = None
    """Also write the report (JSON) to this file."""
